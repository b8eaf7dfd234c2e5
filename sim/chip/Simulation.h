// Runs one program on one chip: loads the data segments, places the input
// buffers (.npy or seeded random data), runs SystemC until every core halts
// (or one faults), and collects outputs and statistics. The tpusim tool and
// the tests use this; neither touches SystemC directly.
//
// SystemC allows one elaboration per kernel context; each Simulation::run()
// starts from a fresh context, so a process may run several simulations one
// after the other (never two at once).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/support/Npy.h"
#include "isa/target/ChipConfig.h"
#include "sim/chip/BufferIo.h"
#include "sim/chip/Chip.h"
#include "sim/core/CoreStats.h"
#include "sim/core/SimFault.h"
#include "sim/trace/TraceRecorder.h"

namespace tpusim::sim {

struct SimOptions {
  bool functional = true;
  bool strict = false;
  bool referenceStepping = false;
  int64_t maxCycles = int64_t(1) << 40;
  int64_t quantum = 10000;
  uint64_t seed = 1;
  RandomInputs randomInputs = RandomInputs::Uniform;  // inputs without data (BufferIo.h)
  MxuModelKind mxuKind = MxuModelKind::Model;
  bool trace = false;
  size_t traceEventsPerTrack = 200000;
  // Called every `progressEvery` host milliseconds with (cycle, pc) while running.
  std::function<void(int64_t cycle)> progress;
  DmaFactory dmaFactory;  // makeChipDma for the real DMA + HBM model
  // Host threads for the cores' stretches between synchronisations and, in
  // timing mode, the DMA/HBM advance (sim/systemc/HostThreads.h): 1 runs all
  // on SystemC's thread, as before; the results are the same for any count.
  // Not with a trace, reference stepping or the RTL MXU (then 1).
  int hostThreads = 1;
  // Tests: hand the stretches over (the multi-threaded schedule) even with 1 thread.
  bool forceHostJobs = false;
};

struct OpReport {
  std::string name;  // debug-map op name ("(no op)" for bundles outside the map)
  // What the op came from, when the program was compiled from HLO: the
  // instruction's op_name metadata ("jit(f)/jit(main)/layers_0/ffn/mul") and
  // its source line; empty otherwise.
  std::string hloOpName, sourceFile;
  uint32_t sourceLine = 0;
  OpStats stats;
};

struct SimResult {
  bool halted = false;             // every core halted
  std::optional<FaultInfo> fault;  // the first fault, if any
  int64_t cycles = 0;              // last halt cycle + 1 (or the fault cycle)
  std::vector<CoreStats> cores;
  std::vector<OpReport> ops;  // summed over cores, in debug-map order
  DmaReport dma;
  std::map<std::string, npy::Array> outputs;  // functional runs only
  int hostThreads = 1;                        // host threads the run used
  int64_t hostJobs = 0;           // stretches handed to the host threads (HostThreads::jobs)
  double hostMainCpuSeconds = 0;  // CPU time of SystemC's thread alone
  double hostSeconds = 0;         // wall clock of the run
  double hostCpuSeconds =
      0;  // CPU time of the process during the run (the honest rate on a busy host)
  int64_t traceEvents = 0;
};

class Simulation {
 public:
  Simulation(target::ChipConfig chip, isa::Program program, SimOptions options);
  ~Simulation();

  // Supplies an input buffer (checked against the program's buffer now);
  // throws std::runtime_error naming the buffer on a mismatch or unknown name.
  void setInput(const std::string& name, const npy::Array& array, const std::string& source);

  SimResult run();
  // The trace of the last run (null unless options.trace).
  const TraceRecorder* trace() const { return trace_.get(); }
  const target::ChipConfig& chip() const { return chip_; }
  const isa::Program& program() const { return program_; }

 private:
  target::ChipConfig chip_;
  isa::Program program_;
  SimOptions options_;
  std::map<std::string, std::vector<uint8_t>> inputs_;
  std::unique_ptr<TraceRecorder> trace_;
};

// Makes the next SystemC elaboration start from a fresh kernel context.
void resetSystemC();

// The pieces of a run that a multi-chip system (sim/system) repeats per chip.
// Writes the data segments, then each input: `inputs` (bytes by buffer name),
// else seeded random data in functional mode.
void loadChipImage(Chip& chip, const isa::Program& program,
                   const std::map<std::string, std::vector<uint8_t>>& inputs,
                   const SimOptions& options, uint64_t seed);
// Fills r (halted, fault, cycles, cores, ops, dma, outputs) from a chip after
// its run; a core left waiting becomes a deadlock fault.
void collectChipResult(Chip& chip, const isa::Program& program, bool functional, SimResult* r);
// The ChipOptions of a SimOptions.
ChipOptions chipOptionsOf(const SimOptions& options);
// The pool a run with `options` gets: its hostThreads (forceHostJobs: at least
// 1); 0, no pool, for one thread or where stretches cannot leave SystemC's
// thread (a trace, reference stepping, the RTL MXU).
int hostThreadsOf(const SimOptions& options);

}  // namespace tpusim::sim
