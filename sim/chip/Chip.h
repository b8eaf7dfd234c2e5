// One chip: 1 or 2 TensorCores sharing one HBM and one DMA system, wired here
// and nowhere else from a target::ChipConfig. A system (multi-chip, ICI) instantiates
// several of these; a chip knows only its own index.
#pragma once

#include <systemc>

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/core/DecodedProgram.h"
#include "sim/core/DmaPort.h"
#include "sim/core/TensorCore.h"
#include "sim/mem/ChipMemory.h"
#include "sim/mxu/MxuUnit.h"
#include "sim/trace/TraceRecorder.h"

namespace tpusim::sim {

struct ChipOptions {
  CoreOptions core;
  MxuModelKind mxuKind = MxuModelKind::Model;
};

// Builds the chip's DMA system: makeChipDma (the real DMA + HBM model) in the
// tool, a simpler engine in some unit tests.
using DmaFactory = std::function<std::unique_ptr<DmaPort>(
    int chipIndex, const target::ChipConfig&, mem::ChipMemory&, bool functional, TraceRecorder*)>;

// Usage statistics of the chip's DMA engines and HBM, for stats and summary.
struct DmaReport {
  struct Queue {
    int core = 0, queue = 0;
    int64_t descriptors = 0, bytes = 0, busyCycles = 0;
  };
  struct Channel {
    int64_t bytesRead = 0, bytesWritten = 0, busyCycles = 0;
  };
  std::vector<Queue> queues;
  std::vector<Channel> hbmChannels;
  int64_t hbmBytesRead = 0, hbmBytesWritten = 0;
  double hbmPeakBytesPerCycle = 0;
  // Bytes the DMA engines read from / wrote to each memory space (isa::MemorySpace order).
  std::array<int64_t, isa::kNumMemorySpaces> dmaBytesRead{}, dmaBytesWritten{};
};

class ChipDmaPort : public DmaPort {
 public:
  virtual DmaReport report() = 0;
};

class Chip : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Chip);
  Chip(sc_core::sc_module_name name, int chipIndex, const target::ChipConfig& config,
       const isa::Program& program, ChipOptions options, TraceRecorder* trace,
       DmaFactory dmaFactory);

  int index() const { return index_; }
  const target::ChipConfig& config() const { return config_; }
  mem::ChipMemory& memory() { return memory_; }
  int numCores() const { return int(cores_.size()); }
  TensorCore& core(int i) { return *cores_[i]; }
  DmaPort& dma() { return *dma_; }
  // The DMA system's report (empty when a test injected a plain DmaPort).
  DmaReport dmaReport();
  bool allFinished() const;
  // Notified (once) when every core has halted or one has faulted.
  sc_core::sc_event& doneEvent() { return done_; }

 private:
  void watch();

  int index_;
  const target::ChipConfig& config_;
  DecodedProgram decoded_;
  mem::ChipMemory memory_;
  std::unique_ptr<DmaPort> dma_;
  std::vector<std::unique_ptr<TensorCore>> cores_;
  sc_core::sc_event done_;
};

// The real DMA + HBM model of a chip (sim/dma, sim/hbm) behind DmaPort.
std::unique_ptr<DmaPort> makeChipDma(int chipIndex, const target::ChipConfig& config,
                                     mem::ChipMemory& memory, bool functional,
                                     TraceRecorder* trace);

}  // namespace tpusim::sim
