#include "sim/chip/Chip.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tpusim::sim {

namespace {
mem::ChipMemorySizes memorySizes(const target::ChipConfig& c) {
  mem::ChipMemorySizes s;
  s.hbmBytes = uint64_t(c.hbm.capacity_bytes);
  s.vmemBytes = uint64_t(c.vmem.bytes);
  s.smemWords = uint64_t(c.core.smem_bytes / 4);
  s.cores = int(c.core.cores);
  return s;
}
}  // namespace

Chip::Chip(sc_core::sc_module_name name, int chipIndex, const target::ChipConfig& config,
           const isa::Program& program, ChipOptions options, TraceRecorder* trace,
           DmaFactory dmaFactory)
    : sc_core::sc_module(name),
      index_(chipIndex),
      config_(config),
      decoded_(decodeProgram(program, config)),
      memory_(memorySizes(config)) {
  if (!dmaFactory)
    throw std::logic_error("Chip needs a DMA factory (makeChipDma for the real one)");
  dma_ = dmaFactory(chipIndex, config, memory_, options.core.functional, trace);
  if (options.core.host) dma_->useHostThreads(options.core.host);
  options.core.chipIndex = chipIndex;
  for (int c = 0; c < config.core.cores; ++c) {
    std::vector<std::unique_ptr<MxuUnit>> mxus;
    for (int m = 0; m < config.mxu.count; ++m) {
      std::string error;
      auto unit = makeMxu(config.mxu, options.mxuKind, options.core.functional, &error);
      if (!unit) throw std::runtime_error(error);
      mxus.push_back(std::move(unit));
    }
    cores_.push_back(std::make_unique<TensorCore>(fmt::format("core{}", c).c_str(), c, config,
                                                  program, decoded_, memory_, *dma_,
                                                  std::move(mxus), trace, options.core));
  }
  SC_THREAD(watch);
}

bool Chip::allFinished() const {
  for (const auto& c : cores_)
    if (!c->finished()) return false;
  return true;
}

void Chip::watch() {
  while (true) {
    bool all = true;
    for (auto& c : cores_) {
      if (c->fault()) {
        done_.notify(sc_core::SC_ZERO_TIME);
        return;
      }
      all = all && c->halted();
    }
    if (all) {
      done_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    sc_core::sc_event_or_list any;
    for (auto& c : cores_) any |= c->finishedEvent();
    wait(any);
  }
}

DmaReport Chip::dmaReport() {
  if (auto* port = dynamic_cast<ChipDmaPort*>(dma_.get())) return port->report();
  return {};
}

}  // namespace tpusim::sim
