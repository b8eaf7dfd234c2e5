// A simple DMA engine for core tests that must not depend on the DMA/HBM
// model: it copies the bytes at issue and completes each descriptor
// `latency + bytes / bytesPerCycle` cycles later, in order per queue.
#pragma once

#include <systemc>

#include <deque>
#include <map>

#include "sim/chip/Chip.h"
#include "sim/core/CycleClock.h"

namespace tpusim::testing {

class FakeDma : public sim::DmaPort, public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(FakeDma);
  FakeDma(const target::ChipConfig& chip, sim::mem::ChipMemory& memory, int64_t latency,
          int64_t bytesPerCycle)
      : sc_core::sc_module("fake_dma"),
        memory_(memory),
        clock_(chip.core.clock_hz),
        latency_(latency),
        bytesPerCycle_(bytesPerCycle) {
    SC_THREAD(run);
  }

  std::string issue(int core, int queue, int flag, const isa::DmaDescriptor& d, int64_t cycle,
                    int64_t* faultAddress) override {
    auto& src = memory_.space(d.src, core);
    auto& dst = memory_.space(d.dst, core);
    for (uint32_t i3 = 0; i3 < d.counts[2]; ++i3)
      for (uint32_t i2 = 0; i2 < d.counts[1]; ++i2)
        for (uint32_t i1 = 0; i1 < d.counts[0]; ++i1) {
          uint64_t s = d.srcAddr + uint64_t(i1) * d.srcStrides[0] + uint64_t(i2) * d.srcStrides[1] +
                       uint64_t(i3) * d.srcStrides[2];
          uint64_t t = d.dstAddr + uint64_t(i1) * d.dstStrides[0] + uint64_t(i2) * d.dstStrides[1] +
                       uint64_t(i3) * d.dstStrides[2];
          if (auto f = sim::mem::copyBytes(src, s, dst, t, d.innerBytes)) {
            *faultAddress = int64_t(f->address);
            return f->describe();
          }
        }
    int64_t& busy = queueFree_[{core, queue}];
    int64_t done = std::max(busy, cycle) + latency_ + int64_t(d.totalBytes()) / bytesPerCycle_;
    busy = done;
    pending_.push_back({done, core, {queue, flag, d.totalBytes(), cycle, done}});
    wake_.notify(sc_core::SC_ZERO_TIME);
    return "";
  }
  void onComplete(int core, std::function<void(const sim::DmaCompletion&)> cb) override {
    callbacks_[core] = std::move(cb);
  }

 private:
  struct Pending {
    int64_t cycle;
    int core;
    sim::DmaCompletion completion;
  };
  void run() {
    while (true) {
      if (pending_.empty()) wait(wake_);
      if (pending_.empty()) continue;
      auto first = std::min_element(pending_.begin(), pending_.end(),
                                    [](auto& a, auto& b) { return a.cycle < b.cycle; });
      sc_core::sc_time at = clock_.timeOf(first->cycle);
      if (at > sc_core::sc_time_stamp()) {
        wait(at - sc_core::sc_time_stamp(), wake_);
        continue;
      }
      Pending p = *first;
      pending_.erase(first);
      callbacks_[p.core](p.completion);
    }
  }

  sim::mem::ChipMemory& memory_;
  sim::CycleClock clock_;
  int64_t latency_, bytesPerCycle_;
  std::map<std::pair<int, int>, int64_t> queueFree_;
  std::deque<Pending> pending_;
  std::map<int, std::function<void(const sim::DmaCompletion&)>> callbacks_;
  sc_core::sc_event wake_;
};

inline sim::DmaFactory fakeDmaFactory(int64_t latency = 20, int64_t bytesPerCycle = 64) {
  return [=](int, const target::ChipConfig& chip, sim::mem::ChipMemory& memory, bool,
             sim::TraceRecorder*) -> std::unique_ptr<sim::DmaPort> {
    return std::make_unique<FakeDma>(chip, memory, latency, bytesPerCycle);
  };
}

}  // namespace tpusim::testing
