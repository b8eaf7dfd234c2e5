// The SystemC face of a chip's DMA engines (DmaEngine.h holds the model and
// documents the timing). Shared by the 1-2 cores of a chip, in front of the
// chip's HBM model.
//
// Time: cycle c starts at SystemC time floor(c * 1e12 / core.clock_hz) ps, and
// the cycle of a time T is the first cycle starting at or after T: the same
// rule as sim/core/CycleClock.h, so cycles are exact integers at any clock
// (1.5 GHz has no whole-ps period) and core and DMA agree on every cycle.
// Needs a time resolution of 1 ps or finer (the SystemC default is 1 ps).
//
// Use from a core's SC_THREAD, after synchronising its local time to
// sc_time_stamp() (so `cycle` == currentCycle()):
//   if (!dma.canIssue(core, q)) wait(dma.activity(core));       // DMA queue full
//   DmaStatus s = dma.issue(core, q, descriptor, flag, cycle);  // !s.ok(): fault
//   dma.onComplete = [&](const DmaCompletion& c) { ...flag c.flag of c.core += 1... };
//   while (!dma.idle(core)) wait(dma.activity(core));           // halt / fence
// onComplete is called by the DMA thread at SystemC time == the completion
// cycle, before activity(core) is notified (in the next delta cycle).
//
// Internally one SC_THREAD, which wakes only at descriptor completions and
// every lookahead() cycles while DMAs are in flight (a descriptor issued at
// cycle a touches memory from a + max(1, dma.issue_latency) on, so the engine
// can safely be simulated that far ahead of every core); idle, it sleeps
// until the next issue. It never wakes per cycle.
#pragma once

#include <systemc>

#include <functional>
#include <memory>
#include <vector>

#include "sim/dma/DmaEngine.h"
#include "sim/systemc/HostThreads.h"

namespace tpusim::sim::dma {

class DmaSystem : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(DmaSystem);
  // memory == nullptr: timing-only.
  DmaSystem(sc_core::sc_module_name name, const target::ChipConfig& chip, mem::ChipMemory* memory);

  uint64_t currentCycle() const { return cycleAtOrAfter(sc_core::sc_time_stamp()); }
  sc_core::sc_time timeOf(uint64_t cycle) const;
  uint64_t cycleAtOrAfter(const sc_core::sc_time& t) const;

  bool canIssue(int core, int queue) const;
  DmaStatus issue(int core, int queue, const isa::DmaDescriptor& d, int flag, uint64_t cycle);
  std::function<void(const DmaCompletion&)> onComplete;
  // Notified whenever a DMA of that core completes (which also frees queue space).
  sc_core::sc_event& activity(int core) { return *activity_.at(size_t(core)); }
  // Nothing of that core is outstanding at the current cycle.
  bool idle(int core) const;

  // Times the DMA thread has resumed (for tests and benchmarks: it must be
  // far below the number of simulated cycles).
  uint64_t wakeups() const { return wakeups_; }

  // Runs each advance of the engine as a job on `host` (null: on SystemC's
  // thread). Only where the advance touches nothing but this chip's DMA and
  // HBM model: timing mode (no memory), no trace.
  void setHostThreads(HostThreads* host) { host_ = host; }

  DmaEngine& engine() { return engine_; }
  const DmaEngine& engine() const { return engine_; }
  // Stats: engine().stats(core) per queue and per memory space;
  // engine().hbm().channelStats() per HBM channel.

 private:
  void run();
  void waitUntil(uint64_t cycle);

  DmaEngine engine_;
  unsigned __int128 hz_;
  sc_core::sc_event wake_;
  std::vector<std::unique_ptr<sc_core::sc_event>> activity_;
  std::vector<DmaCompletion> ready_;
  HostThreads* host_ = nullptr;
  HostJob advance_;  // engine_.advanceTo(horizon_, ready_)
  uint64_t horizon_ = 0;
  uint64_t wakeups_ = 0;
};

}  // namespace tpusim::sim::dma
