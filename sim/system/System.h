// A system of N chips in one SystemC context: N Chips (each with its own
// cores, HBM and DMA) built from one preset, joined by the ICI of a torus
// slice (sim/ici), all running the same program (SPMD). Each chip reads its
// device id with chip.id; dma.remote and sync.remote go through the fabric.
// The system's step is its slowest chip's cycles.
//
// Deadlock: when SystemC runs out of events with a core not halted, nothing
// can ever signal what it waits for (no DMA, no ICI transfer is in flight);
// the run ends with a "deadlock" fault naming every waiting chip and core, its
// flag, the flag's value and the cycle.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/support/Npy.h"
#include "isa/target/ChipConfig.h"
#include "sim/chip/Simulation.h"
#include "sim/ici/Torus.h"

namespace tpusim::sim {

struct LinkReport {
  std::string name;  // "chip0 d1+ -> chip1"
  int chip = 0, dim = 0, dir = 0, to = 0;
  double bytes = 0;
  int64_t flows = 0;
  double utilization = 0;  // bytes / (link bandwidth x step cycles)
};

struct SystemResult {
  std::string topology;  // "2x4"
  bool halted = false;   // every core of every chip halted
  std::optional<FaultInfo> fault;
  int faultChip = -1;
  int64_t cycles = 0;  // the step: the slowest chip's cycles
  std::vector<SimResult> chips;
  std::vector<LinkReport> links;  // every link of the slice, in link order
  double linkBytesPerCycle = 0;
  int64_t iciTransfers = 0, iciSignals = 0, iciRateUpdates = 0;
  int hostThreads = 1;
  int64_t hostJobs = 0;           // stretches handed to the host threads (HostThreads::jobs)
  double hostMainCpuSeconds = 0;  // CPU time of SystemC's thread alone
  double hostSeconds = 0, hostCpuSeconds = 0;
  int64_t traceEvents = 0;
};

// The seed of device d's random inputs: the run's seed for device 0, mixed
// with the device id for the others (each device gets its own data).
uint64_t deviceSeed(uint64_t seed, int device);

class SystemSimulation {
 public:
  SystemSimulation(target::ChipConfig chip, isa::Program program, SimOptions options,
                   ici::Torus torus);
  ~SystemSimulation();

  // An input for every device (device < 0) or for one; checked as
  // Simulation::setInput checks it.
  void setInput(const std::string& name, const npy::Array& array, const std::string& source,
                int device = -1);

  SystemResult run();
  const TraceRecorder* trace() const { return trace_.get(); }
  const ici::Torus& torus() const { return torus_; }

 private:
  target::ChipConfig chip_;
  isa::Program program_;
  SimOptions options_;
  ici::Torus torus_;
  // Per device (index numChips() = every device): buffer name -> bytes.
  std::vector<std::map<std::string, std::vector<uint8_t>>> inputs_;
  std::unique_ptr<TraceRecorder> trace_;
};

}  // namespace tpusim::sim
