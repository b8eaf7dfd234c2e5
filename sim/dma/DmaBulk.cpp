// DmaEngine with dma.model = "fast": requests whose write has started are
// counts in FIFOs of finishes instead of objects with an event each, and the
// HBM read completions of a cycle start their writes in one batch.
//
// Why it is exact: a request's finish (stats, the outstanding count, its
// descriptor's count of completed requests, the in-order report, and in
// functional mode its copy) touches no port and no HBM request, so it commutes
// with the read completions of the same cycle, which only reserve write ports
// and submit HBM writes; and a write that starts at cycle t finishes at t + 1
// or later (a port moves at least one byte slot a cycle, an HBM write
// completes after its arrival and is seen one cycle later), so nothing started
// at t is due at t. The entries due at t are finished in (core, queue,
// descriptor, request) order, the order of the detailed model's events, so the
// completions come out in the same order and functional copies that overlap
// land in the same order.
//
// The batch of HBM read completions: those of cycle t are seen at t + 1, where
// the detailed model makes each an event that starts the request's write.
// Their writes reserve write ports and submit HBM writes, in event order
// together with the other events at t + 1 that do so: the reads from a VMEM or
// SMEM port that end at t + 1. Those are all known once cycle t is simulated
// (a port read started at t + 1 ends at t + 2 or later), so when there is none
// the batch starts its writes right away, at cycle t + 1, in (core, queue,
// descriptor, request) order; the events left at t + 1 (activations, finishes)
// commute with them. Otherwise the completions become events as in the
// detailed model.
#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "sim/dma/DmaEngine.h"

namespace tpusim::sim::dma {

void DmaEngine::startWrite(uint32_t slot, uint64_t cycle) {
  const Request& r = requests_[slot];
  if (r.dst == isa::MemorySpace::Hbm) {
    hbm_.submit(hbm::HbmRequest{slot | kHbmWriteBit, r.range.dst, r.range.dstBytes, true, cycle});
  } else {
    uint64_t end =
        port(r.dst, r.core, true).reserve(cycle, r.range.dstBytes, portRate_, portRateShift_);
    if (bulk_) {
      addFinish(finishFifo(r.dst, r.core), end, r);
      releaseSlot(slot);
      return;
    }
    portEvents_.push(Event{end, r.core, r.queue, r.order, EventKind::WriteDone, slot});
  }
}

void DmaEngine::appendFinish(FinishFifo& fifo, uint64_t cycle, const Request& r) {
  if (!fifo.v.empty() && fifo.v.back().cycle > cycle)
    throw std::logic_error("DmaEngine: finishes out of cycle order");
  if (fifo.head == fifo.v.size()) {
    fifo.v.clear();
    fifo.head = 0;
  }
  nextFinish_ = std::min(nextFinish_, cycle);
  fifo.v.push_back(Finish{cycle, r.desc, r.core, r.queue, r.order, 1, r.range.srcBytes,
                          r.range.dstBytes, r.range});
}

void DmaEngine::takeHbmCompletions(uint64_t t) {
  const bool batch = portEvents_.next() != t + 1 && hbmEvents_.next() != t + 1;
  readsDone_.clear();
  for (const hbm::HbmCompletion& c : hbmDone_) {
    if (c.cycle != t) throw std::logic_error("DmaEngine: an HBM completion out of its cycle");
    const uint32_t slot = uint32_t(c.id & ~(kHbmWriteBit | kHbmPairBit));
    Request& r = requests_[slot];
    if (c.id & kHbmWriteBit) {
      addFinish(finishes_.back(), t + 1, r);
      releaseSlot(slot);
    } else if (batch) {
      // A paired request's first run: wait for the other (DmaEngine::handle).
      if (--requests_[slot].readsLeft == 0) readsDone_.push_back(slot);
    } else {
      hbmEvents_.push(Event{t + 1, r.core, r.queue, r.order, EventKind::ReadDone, slot});
    }
  }
  // Event order; the HBM model reports them in submission order, which is
  // mostly that already (insertion sort).
  auto before = [&](uint32_t a, uint32_t b) { return requests_[a].order < requests_[b].order; };
  for (size_t i = 1; i < readsDone_.size(); ++i)
    for (size_t j = i; j > 0 && before(readsDone_[j], readsDone_[j - 1]); --j)
      std::swap(readsDone_[j], readsDone_[j - 1]);
  for (uint32_t slot : readsDone_) {
    const Request& r = requests_[slot];
    const isa::MemorySpace dst = r.dst;
    if (dst == isa::MemorySpace::Hbm) {
      startWrite(slot, t + 1);
      continue;
    }
    // startWrite's port write, inline.
    const uint64_t end =
        port(dst, r.core, true).reserve(t + 1, r.range.dstBytes, portRate_, portRateShift_);
    addFinish(finishFifo(dst, r.core), end, r);
    releaseSlot(slot);
  }
}

void DmaEngine::finishDue(uint64_t cycle, std::vector<DmaCompletion>& done) {
  if (nextFinish_ > cycle) return;
  if (nextFinish_ < cycle) throw std::logic_error("DmaEngine: a finish was skipped");
  finishing_.clear();
  nextFinish_ = ~uint64_t(0);
  for (FinishFifo& f : finishes_) {
    while (f.head < f.v.size() && f.v[f.head].cycle == cycle) finishing_.push_back(&f.v[f.head++]);
    nextFinish_ = std::min(nextFinish_, f.next());
  }
  if (finishing_.size() > 1)
    std::sort(finishing_.begin(), finishing_.end(),
              [](const Finish* a, const Finish* b) { return a->firstOrder < b->firstOrder; });
  for (const Finish* due : finishing_) {
    const Finish& f = *due;
    Descriptor& d = *f.desc;
    if (memory_) copyRequest(d.d, f.core, f.range);
    DmaCoreStats& s = stats_[size_t(f.core)];
    s.spaces[size_t(d.d.src)].read += f.srcBytes;
    s.spaces[size_t(d.d.dst)].written += f.dstBytes;
    s.queues[size_t(f.queue)].requests += f.count;
    d.completedRequests += f.count;
    outstanding_[size_t(f.core)] -= f.count;
    if (d.walker.done() && d.completedRequests == d.requests)
      reportInOrder(f.core, f.queue, cycle, done);
  }
}

}  // namespace tpusim::sim::dma
