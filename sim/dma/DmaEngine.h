// The DMA engines of one chip, as a plain C++ discrete-event model (no
// SystemC; sim/dma/DmaSystem.h wraps it for the cores). Every cycle below is
// a core cycle.
//
// Structure: one engine per core, each with `dma.queues` queues of up to
// `dma.queue_depth` outstanding descriptors and at most
// `dma.max_outstanding_requests` requests in flight. The engines share the
// chip's HBM model (sim/hbm/HbmModel.h).
//
// Life of a descriptor issued at cycle a on queue q:
//  - it becomes active at a + max(1, dma.issue_latency) (descriptor fetch and
//    address generation); a queue's descriptors are walked one after another;
//  - each cycle, every engine cuts the active descriptors of its queues into
//    requests (DescriptorWalker.h), one request per queue in round-robin
//    order, as long as the outstanding limit allows (address generation itself
//    is not a bottleneck);
//  - a request first reads its source, then writes its destination.
//    HBM side: a request to the HBM model; its completion at cycle c is seen
//    by the engine at c + 1. VMEM/SMEM side: the core's DMA read or write port
//    of that memory (separate from the vector load/store ports) moves
//    `dma.vmem_bytes_per_cycle` bytes per cycle, first come first served, byte
//    for byte (four 512-byte requests share one cycle of a 2048-byte port); a
//    request is done at the first cycle boundary after its last byte;
//  - a widening copy (bf16 / int8 <-> one element per 32-bit word) costs what
//    each side moves: the HBM request carries the dense bytes, the VMEM/SMEM
//    port the widened words (4 / E times as many bytes); the relayout itself
//    is free (done in the engine's data path as bytes stream through);
//  - a paired copy (DmaDescriptor.h, pair mode) reads two dense runs per
//    request, each an HBM request; the write starts when both have arrived
//    and moves one widened word per pair (half the port bytes per element);
//  - the request completes when its write has finished; its slot is reusable
//    in the same cycle (a port write) or the next one (an HBM write);
//  - the descriptor completes when all its requests have, and not before the
//    previous descriptor of its queue: completion is in order per queue, and
//    increments the descriptor's sync flag at that cycle.
// Data (functional mode): each request copies its bytes from source to
// destination at the cycle it completes (source read and destination written
// at that one point). Programs that touch a DMA's source or destination
// before its flag says it is done race with it, as on hardware. Timing-only
// mode (no ChipMemory) moves no data and has exactly the same timing.
// Faults are found at issue, before anything is queued (see DmaStatus).
// Determinism: at a cycle, events are handled in (core, queue, descriptor,
// request) order, never in the order in which callers issued them.
//
// dma.model = "fast" (the default) gives exactly the cycles and stats of
// "detailed" with less work per request: once a request's write has started,
// the request is no longer an object but a count. Its slot is freed, and its
// finish (the write port's last byte, or the HBM write's completion seen one
// cycle later) joins a FIFO per write port (and one for HBM writes) whose
// entries finish in cycle order; consecutive requests of one descriptor that
// finish in the same cycle are one entry (timing-only mode). At a cycle the
// entries due are finished in (core, queue, descriptor, request) order, after
// the read completions of that cycle: finishing touches neither ports nor the
// HBM model, so it commutes with them, and the order keeps the completions
// (and functional-mode copies) exactly as "detailed" makes them
// (DmaBulk.cpp; testbench/unit/dma/DmaModelsTest.cpp proves both equal).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "isa/target/ChipConfig.h"
#include "sim/dma/DescriptorWalker.h"
#include "sim/dma/DmaTypes.h"
#include "sim/hbm/HbmModel.h"
#include "sim/mem/ChipMemory.h"

namespace tpusim::sim::dma {

class DmaEngine {
 public:
  // memory == nullptr: timing-only. Throws std::invalid_argument on an
  // unusable configuration (naming the field).
  DmaEngine(const target::ChipConfig& chip, mem::ChipMemory* memory);

  int cores() const { return cores_; }
  int queues() const { return queues_; }
  // Cycles a freshly issued descriptor needs before it can touch memory; a
  // caller may simulate this far ahead of the cores (DmaSystem does).
  uint64_t lookahead() const { return lookahead_; }

  // Whether queue `queue` of `core` holds fewer than queue_depth descriptors
  // that are still incomplete at `cycle`.
  bool canIssue(int core, int queue, uint64_t cycle) const;
  // Queues a descriptor issued at `cycle`; requires cycle + lookahead() >= now().
  DmaStatus issue(int core, int queue, const isa::DmaDescriptor& d, int flag, uint64_t cycle);

  // Simulates every cycle < `cycle`; appends the descriptor completions of
  // those cycles to `done` in (cycle, core, queue) order.
  void advanceTo(uint64_t cycle, std::vector<DmaCompletion>& done);
  // A cycle >= now() before which nothing happens (UINT64_MAX: nothing queued).
  uint64_t nextEventCycle() const;
  uint64_t now() const { return now_; }

  // No descriptor is waiting to complete (completions already reported count as done).
  bool idle() const { return pendingDescriptors_ == 0; }
  // No descriptor of `core` is incomplete at `cycle`.
  bool idle(int core, uint64_t cycle) const;

  const DmaCoreStats& stats(int core) const { return stats_.at(size_t(core)); }
  hbm::HbmModel& hbm() { return hbm_; }

 private:
  struct Descriptor {
    uint64_t number = 0;  // per-queue issue number
    isa::DmaDescriptor d;
    int flag = 0;
    uint64_t issueCycle = 0, activeCycle = 0;
    DescriptorWalker walker;
    uint64_t requests = 0, completedRequests = 0;
    bool reported = false;
    uint64_t completionCycle = 0;
  };
  struct Queue {
    std::deque<Descriptor> descriptors;  // issue order; completed ones pruned lazily
    uint64_t nextNumber = 0;
    // Requests started so far; with the queue's place, the next request's
    // order (orderOf).
    uint64_t startedRequests = 0;
    // The descriptor being cut into requests (descriptors before it are
    // walked); == nextNumber when every descriptor is walked.
    uint64_t walkingNumber = 0;
    uint64_t lastCompletion = 0;  // for busy cycles
  };
  // A request's place in the (core, queue, descriptor, request) order in one
  // number: the queue's place (core * queues + queue) above the count of the
  // requests its queue started before it (a queue starts its descriptors'
  // requests in that order). One compare instead of four, and a Request of
  // one cache line.
  static constexpr int kOrderQueueShift = 44;
  uint64_t orderOf(int core, int q, uint64_t started) const {
    return (uint64_t(core * queues_ + q) << kOrderQueueShift) | started;
  }
  struct Request {
    int core = 0, queue = 0;
    uint64_t order = 0;  // orderOf
    // Its descriptor (deque elements stay put; a descriptor with a live
    // request is never pruned).
    Descriptor* desc = nullptr;
    DmaRequestRange range;
    uint8_t readsLeft = 1;  // HBM reads not yet arrived (2 for a paired copy's two runs)
    isa::MemorySpace dst = isa::MemorySpace::Hbm;  // desc->d.dst, without the second load
  };
  enum class EventKind : uint8_t { Activate, ReadDone, WriteDone };
  struct Event {
    uint64_t cycle;
    int core, queue;
    // The request's orderOf; an activation: orderOf(core, queue, 0) (it does
    // nothing, so its place among the queue's events at a cycle does not matter).
    uint64_t order;
    EventKind kind;
    uint32_t slot;  // request slot (ReadDone, WriteDone)
    bool operator>(const Event& o) const;
  };
  struct Port {
    uint64_t freeByte = 0;  // first free byte slot: cycle * rate + byte within the cycle
    // Returns the cycle by which `bytes` starting no earlier than `cycle` have
    // moved. Counted in byte slots (cycle * rate + byte), so that several
    // small requests share one cycle of a wide port. rateShift: log2(rate)
    // when rate is a power of two (no division), else -1.
    uint64_t reserve(uint64_t cycle, uint64_t bytes, uint64_t rate, int rateShift) {
      freeByte = std::max(cycle * rate, freeByte) + bytes;
      // The cycle its last byte has moved by.
      return rateShift >= 0 ? (freeByte + rate - 1) >> rateShift : (freeByte + rate - 1) / rate;
    }
  };

  Queue& queue(int core, int q) { return queues_v_[size_t(core * queues_ + q)]; }
  const Queue& queue(int core, int q) const { return queues_v_[size_t(core * queues_ + q)]; }
  Descriptor& descriptor(int core, int q, uint64_t number);
  int occupancy(const Queue& q, uint64_t cycle) const;
  Port& port(isa::MemorySpace space, int core, bool write) {
    return ports_[size_t(core) * 4 + (space == isa::MemorySpace::Smem ? 2 : 0) + (write ? 1 : 0)];
  }

  void handle(const Event& e, std::vector<DmaCompletion>& done);
  void generate(uint64_t cycle);
  // Inlined into generate, its only caller (once per request).
  [[gnu::always_inline]] inline void startRequest(int core, int q, Descriptor& d, uint64_t cycle);
  void startWrite(uint32_t slot, uint64_t cycle);
  void finishRequest(uint32_t slot, uint64_t cycle, std::vector<DmaCompletion>& done);
  // Functional mode: moves one request's bytes (at the cycle it completes).
  void copyRequest(const isa::DmaDescriptor& d, int core, const DmaRequestRange& range);
  void reportInOrder(int core, int q, uint64_t cycle, std::vector<DmaCompletion>& done);
  uint64_t capacity(isa::MemorySpace space) const;

  int cores_, queues_;
  int64_t queueDepth_, maxOutstanding_;
  uint32_t requestBytes_;
  uint64_t portRate_;
  int portRateShift_;  // Port::reserve
  uint64_t lookahead_;
  int syncFlags_;
  uint64_t hbmBytes_, vmemBytes_, smemBytes_;
  mem::ChipMemory* memory_;
  hbm::HbmModel hbm_;
  std::vector<Queue> queues_v_;
  std::vector<int64_t> outstanding_;  // per core
  std::vector<int> roundRobin_;       // per core: next queue to serve
  std::vector<int> walkable_;         // per core: queues with a descriptor left to walk
  std::vector<Port> ports_;           // per core: {vmem, smem} x {read, write}
  std::vector<Request> requests_;
  std::vector<uint32_t> freeSlots_;
  // Events in event order, for those that come nearly in cycle order (so a
  // push is nearly always an append): v[head..].
  struct SortedEvents {
    std::vector<Event> v;
    size_t head = 0;
    void push(const Event& e);
    bool ready(uint64_t t) const { return head < v.size() && v[head].cycle <= t; }
    uint64_t next() const { return head < v.size() ? v[head].cycle : ~uint64_t(0); }
  };
  // Activations in a heap; HBM completions (they arrive in cycle order) and
  // VMEM/SMEM port transfers (each port finishes them in order) apart, each
  // in event order. popEvent takes them in one order, as if one queue.
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  SortedEvents hbmEvents_, portEvents_;
  bool popEvent(uint64_t t, Event* out);
  std::vector<hbm::HbmCompletion> hbmDone_;  // scratch

  // dma.model = "fast": requests whose write has started, as counts (DmaBulk.cpp).
  struct Finish {
    uint64_t cycle;  // the request(s) complete at this cycle
    Descriptor* desc;
    int core, queue;
    uint64_t firstOrder;  // the first request's orderOf (order within the cycle)
    uint32_t count;
    uint64_t srcBytes, dstBytes;
    DmaRequestRange range;  // functional mode: the one request's range (count == 1)
  };
  struct FinishFifo {
    std::vector<Finish> v;  // v[head..], cycles nondecreasing
    size_t head = 0;
    uint64_t next() const { return head < v.size() ? v[head].cycle : ~uint64_t(0); }
  };
  bool bulk_;
  // Per core: VMEM and SMEM write ports (core * 2 + smem); last: HBM writes.
  std::vector<FinishFifo> finishes_;
  // Scratch: the entries due at one cycle (in their FIFOs, which finishing
  // them does not change).
  std::vector<const Finish*> finishing_;
  FinishFifo& finishFifo(isa::MemorySpace dst, int core) {
    if (dst == isa::MemorySpace::Hbm) return finishes_.back();
    return finishes_[size_t(core) * 2 + (dst == isa::MemorySpace::Smem ? 1 : 0)];
  }
  void addFinish(FinishFifo& fifo, uint64_t cycle, const Request& r) {
    // Timing-only: one entry for consecutive requests of a descriptor due at
    // the same cycle (their order within it does not matter, DmaBulk.cpp).
    if (!memory_ && fifo.head < fifo.v.size()) {
      Finish& last = fifo.v.back();
      if (last.cycle == cycle && last.desc == r.desc) {
        last.firstOrder = std::min(last.firstOrder, r.order);
        ++last.count;
        last.srcBytes += r.range.srcBytes;
        last.dstBytes += r.range.dstBytes;
        return;
      }
    }
    appendFinish(fifo, cycle, r);
  }
  void appendFinish(FinishFifo& fifo, uint64_t cycle, const Request& r);
  // The earliest entry's cycle of all FIFOs (kept as they change: every
  // visited cycle asks for it and finishes nothing in most of them).
  uint64_t nextFinish_ = ~uint64_t(0);
  uint64_t nextFinishCycle() const { return nextFinish_; }
  void finishDue(uint64_t cycle, std::vector<DmaCompletion>& done);
  void releaseSlot(uint32_t slot) { freeSlots_.push_back(slot); }
  // The HBM completions of cycle t (in hbmDone_), seen at t + 1.
  void takeHbmCompletions(uint64_t t);
  std::vector<uint32_t> readsDone_;                            // scratch: request slots
  static constexpr uint64_t kHbmWriteBit = uint64_t(1) << 63;  // HBM request id: slot | phase
  static constexpr uint64_t kHbmPairBit = uint64_t(1) << 62;   // | a pair's second run
  std::vector<DmaCoreStats> stats_;
  uint64_t pendingDescriptors_ = 0;
  uint64_t now_ = 0;
};

}  // namespace tpusim::sim::dma
