// The real DMA + HBM model (sim/dma DmaSystem) behind the core's DmaPort, plus
// the HBM bandwidth counter of the trace.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/chip/Chip.h"
#include "sim/dma/DmaSystem.h"

namespace tpusim::sim {
namespace {

class DmaSystemPort : public ChipDmaPort {
 public:
  DmaSystemPort(int chipIndex, const target::ChipConfig& chip, mem::ChipMemory& memory,
                bool functional, TraceRecorder* trace)
      : system_(std::make_unique<dma::DmaSystem>("dma", chip, functional ? &memory : nullptr)),
        callbacks_(size_t(chip.core.cores)),
        trace_(trace),
        clockHz_(chip.core.clock_hz),
        functional_(functional) {
    if (trace_) hbmTrack_ = trace_->track(fmt::format("chip{}", chipIndex), "HBM GB/s");
    system_->onComplete = [this](const dma::DmaCompletion& c) {
      auto key = std::make_tuple(c.core, c.queue, c.descriptor);
      auto it = touchesHbm_.find(key);
      if (it != touchesHbm_.end()) {
        if (it->second) addHbmBytes(int64_t(c.issueCycle), int64_t(c.cycle), int64_t(c.bytes));
        touchesHbm_.erase(it);
      }
      DmaCompletion d;
      d.queue = c.queue;
      d.flag = c.flag;
      d.bytes = c.bytes;
      d.issueCycle = int64_t(c.issueCycle);
      d.completeCycle = int64_t(c.cycle);
      if (callbacks_[size_t(c.core)]) callbacks_[size_t(c.core)](d);
    };
  }

  std::string issue(int core, int queue, int flag, const isa::DmaDescriptor& desc, int64_t cycle,
                    int64_t* faultAddress) override {
    uint64_t number = issued_[{core, queue}]++;
    dma::DmaStatus s = system_->issue(core, queue, desc, flag, uint64_t(cycle));
    if (!s.ok()) {
      --issued_[{core, queue}];
      *faultAddress = s.fault ? int64_t(s.fault->address) : -1;
      return s.message;
    }
    touchesHbm_[std::make_tuple(core, queue, number)] =
        desc.src == isa::MemorySpace::Hbm || desc.dst == isa::MemorySpace::Hbm;
    return "";
  }

  void onComplete(int core, std::function<void(const DmaCompletion&)> callback) override {
    callbacks_.at(size_t(core)) = std::move(callback);
  }

  void useHostThreads(HostThreads* host) override {
    if (!functional_) system_->setHostThreads(host);
  }

  DmaReport report() override {
    flushWindows();
    DmaReport r;
    dma::DmaEngine& engine = system_->engine();
    for (size_t core = 0; core < callbacks_.size(); ++core) {
      const dma::DmaCoreStats& cs = engine.stats(int(core));
      for (int sp = 0; sp < isa::kNumMemorySpaces; ++sp) {
        r.dmaBytesRead[sp] += int64_t(cs.spaces[sp].read);
        r.dmaBytesWritten[sp] += int64_t(cs.spaces[sp].written);
      }
      for (size_t q = 0; q < cs.queues.size(); ++q) {
        DmaReport::Queue rq;
        rq.core = int(core);
        rq.queue = int(q);
        rq.descriptors = int64_t(cs.queues[q].descriptors);
        rq.bytes = int64_t(cs.queues[q].bytes);
        rq.busyCycles = int64_t(cs.queues[q].busyCycles);
        r.queues.push_back(rq);
      }
    }
    for (const hbm::HbmChannelStats& ch : engine.hbm().channelStats()) {
      DmaReport::Channel c;
      c.bytesRead = int64_t(ch.bytesRead);
      c.bytesWritten = int64_t(ch.bytesWritten);
      c.busyCycles = int64_t(ch.busyCycles);
      r.hbmBytesRead += c.bytesRead;
      r.hbmBytesWritten += c.bytesWritten;
      r.hbmChannels.push_back(c);
    }
    r.hbmPeakBytesPerCycle = engine.hbm().peakBytesPerCoreCycle();
    return r;
  }

 private:
  // HBM bandwidth counter: bytes of HBM-touching DMAs per window of cycles,
  // each DMA's bytes spread evenly over its cycles from issue to completion
  // (all of them in its completion's window would show rates above the peak).
  // Written in window order when the run ends.
  static constexpr int64_t kWindow = 1024;
  void addHbmBytes(int64_t issue, int64_t complete, int64_t bytes) {
    if (!trace_) return;
    issue = std::min(issue, complete);
    const double perCycle = double(bytes) / double(complete - issue + 1);
    for (int64_t w = issue / kWindow; w <= complete / kWindow; ++w) {
      int64_t from = std::max(issue, w * kWindow), to = std::min(complete + 1, (w + 1) * kWindow);
      windowBytes_[w] += perCycle * double(to - from);
    }
  }
  void flushWindows() {
    if (!trace_) return;
    int64_t next = -1;  // the window after the last one written
    for (const auto& [w, bytes] : windowBytes_) {
      if (next >= 0 && w > next) trace_->counter(hbmTrack_, next * kWindow, 0);
      trace_->counter(hbmTrack_, w * kWindow, bytes / double(kWindow) * clockHz_ / 1e9);
      next = w + 1;
    }
    if (next >= 0) trace_->counter(hbmTrack_, next * kWindow, 0);
    windowBytes_.clear();
  }

  std::unique_ptr<dma::DmaSystem> system_;
  std::vector<std::function<void(const DmaCompletion&)>> callbacks_;
  std::map<std::pair<int, int>, uint64_t> issued_;
  std::map<std::tuple<int, int, uint64_t>, bool> touchesHbm_;
  TraceRecorder* trace_;
  double clockHz_;
  bool functional_;
  int hbmTrack_ = -1;
  std::map<int64_t, double> windowBytes_;
};

}  // namespace

std::unique_ptr<DmaPort> makeChipDma(int chipIndex, const target::ChipConfig& config,
                                     mem::ChipMemory& memory, bool functional,
                                     TraceRecorder* trace) {
  return std::make_unique<DmaSystemPort>(chipIndex, config, memory, functional, trace);
}

}  // namespace tpusim::sim
