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
  const Descriptor& d = *r.desc;
  if (d.d.dst == isa::MemorySpace::Hbm) {
    hbm_.submit(hbm::HbmRequest{slot | kHbmWriteBit, r.range.dst, r.range.dstBytes, true, cycle});
  } else {
    uint64_t end =
        port(d.d.dst, r.core, true).reserve(cycle, r.range.dstBytes, portRate_, portRateShift_);
    if (bulk_) {
      addFinish(finishFifo(d.d.dst, r.core), end, r);
      releaseSlot(slot);
      return;
    }
    portEvents_.push(
        Event{end, r.core, r.queue, r.descriptor, r.index, EventKind::WriteDone, slot});
  }
}

void DmaEngine::appendFinish(FinishFifo& fifo, uint64_t cycle, const Request& r) {
  if (!fifo.v.empty() && fifo.v.back().cycle > cycle)
    throw std::logic_error("DmaEngine: finishes out of cycle order");
  if (fifo.head == fifo.v.size()) {
    fifo.v.clear();
    fifo.head = 0;
  }
  fifo.v.push_back(Finish{cycle, r.desc, r.core, r.queue, r.index, 1, r.range.srcBytes,
                          r.range.dstBytes, r.range});
}

void DmaEngine::takeHbmCompletions(uint64_t t) {
  const bool batch = portEvents_.next() != t + 1 && hbmEvents_.next() != t + 1;
  readsDone_.clear();
  for (const hbm::HbmCompletion& c : hbmDone_) {
    if (c.cycle != t) throw std::logic_error("DmaEngine: an HBM completion out of its cycle");
    if (c.id & kHbmBatchBit) {
      const uint32_t slot = uint32_t(c.id & ~kHbmBatchBit);
      const Batch& b = batches_[slot];
      if (batch) {
        readsDone_.push_back(ReadDone{b.core, b.queue, b.desc->number, b.firstIndex + c.first, slot,
                                      c.first, c.count});
      } else {
        for (uint32_t k = 0; k < c.count; ++k)
          hbmEvents_.push(Event{t + 1, b.core, b.queue, b.desc->number, b.firstIndex + c.first + k,
                                EventKind::BatchReadDone, slot});
      }
      continue;
    }
    const uint32_t slot = uint32_t(c.id & ~(kHbmWriteBit | kHbmPairBit));
    Request& r = requests_[slot];
    if (c.id & kHbmWriteBit) {
      addFinish(finishes_.back(), t + 1, r);
      releaseSlot(slot);
    } else if (batch) {
      // A paired request's first run: wait for the other (DmaEngine::handle).
      if (--requests_[slot].readsLeft == 0)
        readsDone_.push_back(ReadDone{r.core, r.queue, r.descriptor, r.index, slot, 0, 0});
    } else {
      hbmEvents_.push(
          Event{t + 1, r.core, r.queue, r.descriptor, r.index, EventKind::ReadDone, slot});
    }
  }
  // Event order; the HBM model reports them in submission order, which is
  // mostly that already (insertion sort). A batch's requests are consecutive
  // in it (one descriptor, consecutive indices, nothing else between them).
  auto before = [](const ReadDone& x, const ReadDone& y) {
    return std::tie(x.core, x.queue, x.descriptor, x.index) <
           std::tie(y.core, y.queue, y.descriptor, y.index);
  };
  for (size_t i = 1; i < readsDone_.size(); ++i)
    for (size_t j = i; j > 0 && before(readsDone_[j], readsDone_[j - 1]); --j)
      std::swap(readsDone_[j], readsDone_[j - 1]);
  for (const ReadDone& done : readsDone_) {
    if (done.count > 0) {
      for (uint32_t k = 0; k < done.count; ++k) startBatchWrite(done.slot, done.first + k, t + 1);
      continue;
    }
    const uint32_t slot = done.slot;
    const Request& r = requests_[slot];
    const isa::MemorySpace dst = r.desc->d.dst;
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

void DmaEngine::startBatched(int core, int q, Descriptor& d, uint64_t cycle) {
  // Each request as startRequest would start it (index, outstanding count,
  // the walk), but consecutive ones whose HBM reads follow each other within
  // one channel line go to the HBM model as one batch, submitted before any
  // other request of the cycle so that the HBM model sees the same order.
  int64_t& outstanding = outstanding_[size_t(core)];
  uint32_t open = ~0u;
  while (outstanding < maxOutstanding_ && !d.walker.done()) {
    DmaRequestRange range;
    d.walker.next(&range);
    const uint64_t index = d.requests++;
    ++outstanding;
    if (d.walker.done()) walked(core, q, d);
    const uint64_t last = range.src + range.srcBytes - 1;
    if (open != ~0u) {
      Batch& b = batches_[open];
      if (range.src == b.end && hbm_.batchable(b.address, range.src, last)) {
        b.srcBytes.push_back(range.srcBytes);
        b.dstBytes.push_back(range.dstBytes);
        b.end = last + 1;
        continue;
      }
      submitBatch(open, cycle);
      open = ~0u;
    }
    if (!hbm_.batchable(range.src, range.src, last)) {
      // Across a line: a request of its own (startRequest after the walk).
      uint32_t slot;
      if (!freeSlots_.empty()) {
        slot = freeSlots_.back();
        freeSlots_.pop_back();
      } else {
        slot = uint32_t(requests_.size());
        requests_.emplace_back();
      }
      Request& r = requests_[slot];
      r.core = core;
      r.queue = q;
      r.descriptor = d.number;
      r.desc = &d;
      r.index = index;
      r.range = range;
      r.live = true;
      r.readsLeft = 1;
      hbm_.submit(hbm::HbmRequest{slot, r.range.src, r.range.srcBytes, false, cycle});
      continue;
    }
    if (!freeBatches_.empty()) {
      open = freeBatches_.back();
      freeBatches_.pop_back();
    } else {
      open = uint32_t(batches_.size());
      batches_.emplace_back();
    }
    Batch& b = batches_[open];
    b.desc = &d;
    b.core = core;
    b.queue = q;
    b.firstIndex = index;
    b.address = range.src;
    b.end = last + 1;
    b.srcBytes.assign(1, range.srcBytes);
    b.dstBytes.assign(1, range.dstBytes);
    b.writesStarted = 0;
  }
  if (open != ~0u) submitBatch(open, cycle);
}

void DmaEngine::submitBatch(uint32_t slot, uint64_t cycle) {
  const Batch& b = batches_[slot];
  hbm_.submitBatch(slot | kHbmBatchBit, b.address, b.srcBytes.data(), uint32_t(b.srcBytes.size()),
                   false, cycle);
}

void DmaEngine::startBatchWrite(uint32_t slot, uint32_t i, uint64_t cycle) {
  Batch& b = batches_[slot];
  const isa::MemorySpace dst = b.desc->d.dst;
  const uint64_t end =
      port(dst, b.core, true).reserve(cycle, b.dstBytes[i], portRate_, portRateShift_);
  addBatchFinish(finishFifo(dst, b.core), end, b, b.firstIndex + i, b.srcBytes[i], b.dstBytes[i]);
  if (++b.writesStarted == b.srcBytes.size()) {
    b.desc = nullptr;
    freeBatches_.push_back(slot);
  }
}

uint64_t DmaEngine::nextFinishCycle() const {
  uint64_t t = ~uint64_t(0);
  for (const FinishFifo& f : finishes_) t = std::min(t, f.next());
  return t;
}

void DmaEngine::finishDue(uint64_t cycle, std::vector<DmaCompletion>& done) {
  finishing_.clear();
  for (FinishFifo& f : finishes_)
    while (f.head < f.v.size() && f.v[f.head].cycle <= cycle) {
      if (f.v[f.head].cycle < cycle) throw std::logic_error("DmaEngine: a finish was skipped");
      finishing_.push_back(f.v[f.head++]);
    }
  if (finishing_.size() > 1)
    std::sort(finishing_.begin(), finishing_.end(), [](const Finish& a, const Finish& b) {
      return std::make_tuple(a.core, a.queue, a.desc->number, a.firstIndex) <
             std::make_tuple(b.core, b.queue, b.desc->number, b.firstIndex);
    });
  for (const Finish& f : finishing_) {
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
