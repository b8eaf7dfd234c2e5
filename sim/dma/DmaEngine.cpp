#include "sim/dma/DmaEngine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace tpusim::sim::dma {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// One request of a widening copy (DmaDescriptor.h): dense E-byte elements to
// the low bytes of 32-bit words (upper bytes zero), or the low bytes back.
// A paired copy's word takes the element at src + pair offset in its next E bytes.
// Element moves of a widening copy with E known at compile time: each a
// fixed-size store the compiler can vectorize (the byte loop with its branches
// was 5% of a functional run).
template <uint32_t E>
void widenElements(const uint8_t* in, const uint8_t* pairIn, uint8_t* out, uint32_t n) {
  constexpr uint32_t w = isa::kDmaWideWordBytes;
  if (pairIn)
    for (uint32_t i = 0; i < n; ++i) {
      std::memcpy(out + i * w, in + i * E, E);
      std::memcpy(out + i * w + E, pairIn + i * E, E);
    }
  else
    for (uint32_t i = 0; i < n; ++i) std::memcpy(out + i * w, in + i * E, E);
}

template <uint32_t E>
void narrowElements(const uint8_t* in, uint8_t* out, uint32_t n) {
  constexpr uint32_t w = isa::kDmaWideWordBytes;
  for (uint32_t i = 0; i < n; ++i) std::memcpy(out + i * E, in + i * w, E);
}

void copyWidening(const isa::DmaDescriptor& d, const mem::SparseMemory& src, mem::SparseMemory& dst,
                  const DmaRequestRange& r) {
  // Scratch kept per host thread (engines of several chips may run at once).
  thread_local std::vector<uint8_t> in, out;
  in.resize(r.srcBytes);
  out.assign(r.dstBytes, 0);
  const bool pair = d.paired();
  const uint32_t run = pair ? r.bytes : r.srcBytes;
  src.read(r.src, in.data(), run);
  if (pair) src.read(r.src + d.pairOffset, in.data() + run, run);
  const uint32_t e = d.elemBytes, w = isa::kDmaWideWordBytes, n = r.bytes / e;
  const uint8_t* pairIn = pair ? in.data() + run : nullptr;
  if (!d.wideSource() && e == 1)
    widenElements<1>(in.data(), pairIn, out.data(), n);
  else if (!d.wideSource() && e == 2)
    widenElements<2>(in.data(), pairIn, out.data(), n);
  else if (d.wideSource() && e == 1)
    narrowElements<1>(in.data(), out.data(), n);
  else if (d.wideSource() && e == 2)
    narrowElements<2>(in.data(), out.data(), n);
  else
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t b = 0; b < e; ++b) {
        if (d.wideSource()) {
          out[i * e + b] = in[i * w + b];
        } else {
          out[i * w + b] = in[i * e + b];
          if (pair) out[i * w + e + b] = pairIn[i * e + b];
        }
      }
  dst.write(r.dst, out.data(), out.size());
}
}  // namespace

bool DmaEngine::Event::operator>(const Event& o) const {
  // orderOf holds (core, queue, descriptor, request).
  return std::tie(cycle, order, kind) > std::tie(o.cycle, o.order, o.kind);
}

DmaEngine::DmaEngine(const target::ChipConfig& chip, mem::ChipMemory* memory)
    : cores_(int(chip.core.cores)),
      queues_(int(chip.dma.queues)),
      queueDepth_(chip.dma.queue_depth),
      maxOutstanding_(chip.dma.max_outstanding_requests),
      requestBytes_(uint32_t(chip.dma.request_bytes)),
      portRate_(uint64_t(chip.dma.vmem_bytes_per_cycle)),
      portRateShift_(
          portRate_ > 0 && (portRate_ & (portRate_ - 1)) == 0 ? __builtin_ctzll(portRate_) : -1),
      lookahead_(uint64_t(std::max<int64_t>(1, chip.dma.issue_latency))),
      syncFlags_(int(chip.core.sync_flags)),
      hbmBytes_(uint64_t(chip.hbm.capacity_bytes)),
      vmemBytes_(uint64_t(chip.vmem.bytes)),
      smemBytes_(uint64_t(chip.core.smem_bytes)),
      memory_(memory),
      hbm_(chip.hbm, chip.core.clock_hz),
      bulk_(chip.dma.model != "detailed") {
  if (chip.dma.model != "fast" && chip.dma.model != "detailed")
    throw std::invalid_argument("dma.model: \"" + chip.dma.model +
                                "\" must be \"fast\" or \"detailed\"");
  if (memory && (memory->cores() != cores_ || memory->hbm().capacity() != hbmBytes_))
    throw std::invalid_argument(
        "DmaEngine: the chip memory does not match core.cores / hbm.capacity_bytes");
  if (uint64_t(cores_) * uint64_t(queues_) >= (uint64_t(1) << (64 - kOrderQueueShift)))
    throw std::invalid_argument("dma.queues: too many queues on the chip's cores for orderOf");
  queues_v_.resize(size_t(cores_ * queues_));
  outstanding_.assign(size_t(cores_), 0);
  roundRobin_.assign(size_t(cores_), 0);
  walkable_.assign(size_t(cores_), 0);
  ports_.resize(size_t(cores_) * 4);
  stats_.resize(size_t(cores_));
  for (DmaCoreStats& s : stats_) s.queues.resize(size_t(queues_));
  finishes_.resize(size_t(cores_) * 2 + 1);
}

uint64_t DmaEngine::capacity(isa::MemorySpace space) const {
  switch (space) {
    case isa::MemorySpace::Hbm:
      return hbmBytes_;
    case isa::MemorySpace::Vmem:
      return vmemBytes_;
    case isa::MemorySpace::Smem:
      return smemBytes_;
  }
  return 0;
}

int DmaEngine::occupancy(const Queue& q, uint64_t cycle) const {
  int n = 0;
  for (const Descriptor& d : q.descriptors)
    if (!d.reported || d.completionCycle > cycle) ++n;
  return n;
}

bool DmaEngine::canIssue(int core, int q, uint64_t cycle) const {
  if (core < 0 || core >= cores_ || q < 0 || q >= queues_) return false;
  return occupancy(queue(core, q), cycle) < queueDepth_;
}

bool DmaEngine::idle(int core, uint64_t cycle) const {
  for (int q = 0; q < queues_; ++q)
    if (occupancy(queue(core, q), cycle) > 0) return false;
  return true;
}

DmaStatus DmaEngine::issue(int core, int q, const isa::DmaDescriptor& d, int flag, uint64_t cycle) {
  DmaStatus status;
  auto fail = [&](DmaStatus::Code code, std::string message) {
    status.code = code;
    status.message = std::move(message);
    return status;
  };
  if (core < 0 || core >= cores_)
    return fail(DmaStatus::Code::Malformed,
                fmt::format("DMA issued by core {}, but the chip has {} core(s)", core, cores_));
  if (q < 0 || q >= queues_)
    return fail(
        DmaStatus::Code::Malformed,
        fmt::format("core {}: DMA queue q{} does not exist (dma.queues = {})", core, q, queues_));
  Queue& queueRef = queue(core, q);
  std::string where = fmt::format("core {} queue q{} descriptor #{}", core, q, queueRef.nextNumber);
  if (flag < 0 || flag >= syncFlags_)
    return fail(DmaStatus::Code::Malformed,
                fmt::format("{}: sync flag f{} does not exist (core.sync_flags = {})", where, flag,
                            syncFlags_));
  if (cycle + lookahead_ < now_)
    throw std::logic_error(
        fmt::format("DmaEngine::issue at cycle {} but the engine is at {}", cycle, now_));
  if (d.innerBytes == 0 || d.counts[0] == 0 || d.counts[1] == 0 || d.counts[2] == 0)
    return fail(DmaStatus::Code::Malformed,
                fmt::format("{}: a size or count of 0 (inner {} bytes, counts {}x{}x{})", where,
                            d.innerBytes, d.counts[0], d.counts[1], d.counts[2]));
  std::string invalid;
  if (!d.validate(&invalid))
    return fail(DmaStatus::Code::Malformed, fmt::format("{}: {}", where, invalid));
  if (d.dstChip != isa::kDmaLocalChip)
    return fail(DmaStatus::Code::Unsupported,
                fmt::format("{}: copies to another chip (dst chip {}) need ICI, which this chip "
                            "model does not have",
                            where, d.dstChip));
  for (bool source : {true, false}) {
    isa::MemorySpace space = source ? d.src : d.dst;
    uint64_t base = source ? d.srcAddr : d.dstAddr;
    unsigned __int128 extent = descriptorExtent(d, source);
    uint64_t cap = capacity(space);
    if ((unsigned __int128)base + extent > cap) {
      mem::MemFault f;
      f.space = space;
      f.core = space == isa::MemorySpace::Hbm ? -1 : core;
      f.address = base;
      f.size = extent > kNever ? kNever : uint64_t(extent);
      f.capacity = cap;
      f.write = !source;
      status.fault = f;
      return fail(DmaStatus::Code::OutOfBounds,
                  fmt::format("{}: {} range is out of bounds: {}", where,
                              source ? "source" : "destination", f.describe()));
    }
  }
  if (!canIssue(core, q, cycle))
    return fail(DmaStatus::Code::QueueFull,
                fmt::format("{}: queue full ({} outstanding descriptors, dma.queue_depth)", where,
                            queueDepth_));
  // Forget descriptors that completed before this cycle (none of them is referenced any more).
  while (!queueRef.descriptors.empty() && queueRef.descriptors.front().reported &&
         queueRef.descriptors.front().completionCycle <= cycle)
    queueRef.descriptors.pop_front();
  if (queueRef.walkingNumber == queueRef.nextNumber) ++walkable_[size_t(core)];
  Descriptor desc{queueRef.nextNumber++,
                  d,
                  flag,
                  cycle,
                  cycle + lookahead_,
                  DescriptorWalker(d, requestBytes_)};
  queueRef.descriptors.push_back(desc);
  ++pendingDescriptors_;
  events_.push(Event{desc.activeCycle, core, q, orderOf(core, q, 0), EventKind::Activate, 0});
  return status;
}

DmaEngine::Descriptor& DmaEngine::descriptor(int core, int q, uint64_t number) {
  Queue& queueRef = queue(core, q);
  return queueRef.descriptors[size_t(number - queueRef.descriptors.front().number)];
}

uint64_t DmaEngine::nextEventCycle() const {
  uint64_t t = events_.empty() ? kNever : events_.top().cycle;
  t = std::min(t, std::min(hbmEvents_.next(), portEvents_.next()));
  t = std::min(t, nextFinishCycle());  // kNever unless dma.model = "fast"
  return std::min(t, hbm_.nextEventCycle());
}

void DmaEngine::SortedEvents::push(const Event& e) {
  if (head == v.size()) {
    v.clear();
    head = 0;
  } else if (head >= 64 && 2 * head >= v.size()) {
    // Drop the popped front (amortized O(1) per event).
    v.erase(v.begin(), v.begin() + std::ptrdiff_t(head));
    head = 0;
  }
  size_t at = v.size();
  while (at > head && v[at - 1] > e) --at;
  if (at == v.size())
    v.push_back(e);
  else
    v.insert(v.begin() + std::ptrdiff_t(at), e);
}

bool DmaEngine::popEvent(uint64_t t, Event* out) {
  // The earliest of the three, as one queue would give it.
  const Event* best = nullptr;
  if (!events_.empty() && events_.top().cycle <= t) best = &events_.top();
  SortedEvents* from = nullptr;
  if (hbmEvents_.ready(t) && (!best || *best > hbmEvents_.v[hbmEvents_.head])) {
    best = &hbmEvents_.v[hbmEvents_.head];
    from = &hbmEvents_;
  }
  if (portEvents_.ready(t) && (!best || *best > portEvents_.v[portEvents_.head])) {
    best = &portEvents_.v[portEvents_.head];
    from = &portEvents_;
  }
  if (!best) return false;
  *out = *best;
  if (from)
    ++from->head;
  else
    events_.pop();
  return true;
}

void DmaEngine::advanceTo(uint64_t cycle, std::vector<DmaCompletion>& done) {
  while (true) {
    uint64_t t = nextEventCycle();
    if (t >= cycle) break;
    t = std::max(t, now_);
    Event e{};
    while (popEvent(t, &e)) handle(e, done);
    if (bulk_) finishDue(t, done);
    generate(t);
    // Keep the HBM model in step whenever it has work, so that its completions
    // are found in the cycle they happen (its nextEventCycle is only a bound).
    if (!hbm_.idle()) {
      hbmDone_.clear();
      hbm_.advanceTo(t + 1, hbmDone_);
      if (bulk_) {
        takeHbmCompletions(t);
        hbmDone_.clear();
      }
      for (const hbm::HbmCompletion& c : hbmDone_) {
        uint32_t slot = uint32_t(c.id & ~(kHbmWriteBit | kHbmPairBit));
        const Request& r = requests_[slot];
        // The engine sees an HBM completion one cycle later.
        hbmEvents_.push(Event{c.cycle + 1, r.core, r.queue, r.order,
                              (c.id & kHbmWriteBit) ? EventKind::WriteDone : EventKind::ReadDone,
                              slot});
      }
    }
    now_ = t + 1;
  }
  if (cycle > now_) {
    if (!hbm_.idle()) {
      hbmDone_.clear();
      hbm_.advanceTo(cycle, hbmDone_);  // nothing completes before `cycle` (the loop ended)
      if (!hbmDone_.empty()) throw std::logic_error("DmaEngine: HBM completion bound violated");
    }
    now_ = cycle;
  }
}

void DmaEngine::handle(const Event& e, std::vector<DmaCompletion>& done) {
  switch (e.kind) {
    case EventKind::Activate:
      break;  // generate() picks the descriptor up in this cycle
    case EventKind::ReadDone:
      // A paired request writes once both of its runs have arrived.
      if (--requests_[e.slot].readsLeft == 0) startWrite(e.slot, e.cycle);
      break;
    case EventKind::WriteDone:
      finishRequest(e.slot, e.cycle, done);
      break;
  }
}

void DmaEngine::generate(uint64_t cycle) {
  for (int core = 0; core < cores_; ++core) {
    while (walkable_[size_t(core)] > 0 && outstanding_[size_t(core)] < maxOutstanding_) {
      // The next queue, in round-robin order, whose walking descriptor is active.
      Descriptor* pick = nullptr;
      int pickQueue = 0;
      for (int i = 0; i < queues_ && !pick; ++i) {
        int q = roundRobin_[size_t(core)] + i;  // both < queues_: no division per probe
        if (q >= queues_) q -= queues_;
        // A queue walks its descriptors one after another.
        const Queue& queueRef = queue(core, q);
        if (queueRef.walkingNumber == queueRef.nextNumber) continue;
        Descriptor& d = descriptor(core, q, queueRef.walkingNumber);
        if (d.activeCycle <= cycle) {
          pick = &d;
          pickQueue = q;
        }
      }
      if (!pick) break;
      roundRobin_[size_t(core)] = pickQueue + 1 == queues_ ? 0 : pickQueue + 1;
      startRequest(core, pickQueue, *pick, cycle);
      // The only queue left to walk: the scan above would pick it again (and
      // leave the round robin where it is) while its next descriptor is active.
      if (walkable_[size_t(core)] != 1) continue;
      const Queue& queueRef = queue(core, pickQueue);
      while (outstanding_[size_t(core)] < maxOutstanding_ &&
             queueRef.walkingNumber != queueRef.nextNumber) {
        if (pick->walker.done()) pick = &descriptor(core, pickQueue, queueRef.walkingNumber);
        if (pick->activeCycle > cycle) break;
        startRequest(core, pickQueue, *pick, cycle);
      }
    }
  }
}

void DmaEngine::startRequest(int core, int q, Descriptor& d, uint64_t cycle) {
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
  Queue& queueRef = queue(core, q);
  r.order = orderOf(core, q, queueRef.startedRequests++);
  r.desc = &d;
  r.dst = d.d.dst;
  ++d.requests;
  d.walker.next(&r.range);
  if (d.walker.done() && ++queueRef.walkingNumber == queueRef.nextNumber) --walkable_[size_t(core)];
  ++outstanding_[size_t(core)];
  r.readsLeft = 1;
  if (d.d.paired()) {  // two runs of r.range.bytes (DescriptorWalker.h)
    r.readsLeft = 2;
    hbm_.submit(hbm::HbmRequest{slot, r.range.src, r.range.bytes, false, cycle});
    hbm_.submit(hbm::HbmRequest{slot | kHbmPairBit, r.range.src + d.d.pairOffset, r.range.bytes,
                                false, cycle});
  } else if (d.d.src == isa::MemorySpace::Hbm) {
    hbm_.submit(hbm::HbmRequest{slot, r.range.src, r.range.srcBytes, false, cycle});
  } else {
    uint64_t end =
        port(d.d.src, core, false).reserve(cycle, r.range.srcBytes, portRate_, portRateShift_);
    portEvents_.push(Event{end, core, q, r.order, EventKind::ReadDone, slot});
  }
}

void DmaEngine::finishRequest(uint32_t slot, uint64_t cycle, std::vector<DmaCompletion>& done) {
  Request& r = requests_[slot];
  Descriptor& d = *r.desc;
  if (memory_) copyRequest(d.d, r.core, r.range);
  DmaCoreStats& s = stats_[size_t(r.core)];
  s.spaces[size_t(d.d.src)].read += r.range.srcBytes;
  s.spaces[size_t(d.d.dst)].written += r.range.dstBytes;
  s.queues[size_t(r.queue)].requests += 1;
  ++d.completedRequests;
  --outstanding_[size_t(r.core)];
  releaseSlot(slot);
  if (d.walker.done() && d.completedRequests == d.requests)
    reportInOrder(r.core, r.queue, cycle, done);
}

void DmaEngine::copyRequest(const isa::DmaDescriptor& d, int core, const DmaRequestRange& range) {
  // Bounds were checked for the whole descriptor at issue.
  if (d.widening())
    copyWidening(d, memory_->space(d.src, core), memory_->space(d.dst, core), range);
  else
    mem::copyBytes(memory_->space(d.src, core), range.src, memory_->space(d.dst, core), range.dst,
                   range.bytes);
}

void DmaEngine::reportInOrder(int core, int q, uint64_t cycle, std::vector<DmaCompletion>& done) {
  Queue& queueRef = queue(core, q);
  DmaQueueStats& qs = stats_[size_t(core)].queues[size_t(q)];
  for (Descriptor& d : queueRef.descriptors) {
    if (d.reported) continue;
    if (!d.walker.done() || d.completedRequests != d.requests) break;  // an older one is still busy
    d.reported = true;
    d.completionCycle = cycle;
    --pendingDescriptors_;
    qs.descriptors += 1;
    qs.bytes += d.d.totalBytes();
    // Union of [issue, completion) intervals; completions come in order.
    qs.busyCycles += cycle - std::max({d.issueCycle, queueRef.lastCompletion, uint64_t(0)});
    queueRef.lastCompletion = cycle;
    done.push_back(DmaCompletion{core, q, d.flag, d.number, d.issueCycle, cycle, d.d.totalBytes()});
  }
}

}  // namespace tpusim::sim::dma
