#include "sim/dma/DmaSystem.h"

#include <stdexcept>
#include <string>

namespace tpusim::sim::dma {

namespace {
constexpr unsigned __int128 kPsPerSecond = 1000000000000ull;
// SystemC time ticks per picosecond (1 at the default resolution).
uint64_t psTicks() { return uint64_t(sc_core::sc_time(1, sc_core::SC_PS).value()); }
}  // namespace

DmaSystem::DmaSystem(sc_core::sc_module_name name, const target::ChipConfig& chip,
                     mem::ChipMemory* memory)
    : sc_module(name), engine_(chip, memory), hz_((unsigned __int128)chip.core.clock_hz) {
  if (psTicks() == 0)
    throw std::invalid_argument("DmaSystem: the SystemC time resolution is coarser than 1 ps");
  for (int c = 0; c < engine_.cores(); ++c)
    activity_.push_back(std::make_unique<sc_core::sc_event>());
  advance_.work = [this] { engine_.advanceTo(horizon_, ready_); };
  SC_THREAD(run);
}

sc_core::sc_time DmaSystem::timeOf(uint64_t cycle) const {
  unsigned __int128 ps = (unsigned __int128)cycle * kPsPerSecond / hz_;
  return sc_core::sc_time::from_value(uint64_t(ps * psTicks()));
}

uint64_t DmaSystem::cycleAtOrAfter(const sc_core::sc_time& t) const {
  unsigned __int128 ps = t.value() / psTicks();
  return uint64_t((ps * hz_ + kPsPerSecond - 1) / kPsPerSecond);
}

bool DmaSystem::canIssue(int core, int queue) const {
  return engine_.canIssue(core, queue, currentCycle());
}

bool DmaSystem::idle(int core) const { return engine_.idle(core, currentCycle()); }

DmaStatus DmaSystem::issue(int core, int queue, const isa::DmaDescriptor& d, int flag,
                           uint64_t cycle) {
  if (cycle != currentCycle())
    throw std::logic_error("DmaSystem::issue at cycle " + std::to_string(cycle) +
                           " while SystemC is at cycle " + std::to_string(currentCycle()) +
                           " (synchronise the core first)");
  DmaStatus s = engine_.issue(core, queue, d, flag, cycle);
  if (s.ok()) wake_.notify(sc_core::SC_ZERO_TIME);
  return s;
}

void DmaSystem::waitUntil(uint64_t cycle) {
  sc_core::sc_time t = timeOf(cycle);
  if (t > sc_core::sc_time_stamp()) {
    wait(t - sc_core::sc_time_stamp());
    ++wakeups_;
  }
}

void DmaSystem::run() {
  while (true) {
    if (engine_.idle()) {
      wait(wake_);
      ++wakeups_;
      continue;
    }
    uint64_t horizon = currentCycle() + engine_.lookahead();
    ready_.clear();
    horizon_ = horizon;
    if (host_)
      host_->run(advance_);
    else
      engine_.advanceTo(horizon, ready_);
    for (const DmaCompletion& c : ready_) {
      waitUntil(c.cycle);
      if (onComplete) onComplete(c);
      activity(c.core).notify(sc_core::SC_ZERO_TIME);
    }
    waitUntil(horizon);
  }
}

}  // namespace tpusim::sim::dma
