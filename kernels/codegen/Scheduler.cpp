#include "kernels/codegen/Scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "kernels/codegen/FlatLists.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;
using isa::SlotKind;

int resultLatency(const MInstr& mi, const TargetInfo& t) { return t.latencyOf(mi.info().latency); }

namespace {

// Vector registers the scheduler leaves free in a block with MXU register pairs.
constexpr int kPairSlack = 4;

struct Edge {
  int to;
  int distance;
};

bool isWPush(Opcode op) { return isa::isMxuWeightPush(op); }
bool isWPushT(Opcode op) { return isa::isMxuWeightPushT(op); }
bool isMm(Opcode op) { return isa::isMxuMatmul(op); }
bool isBranch(Opcode op) {
  return op == Opcode::Jmp || op == Opcode::BrNz || op == Opcode::BrZ || op == Opcode::Loop;
}
// The list scheduler's lookahead when the kernel asks for none.
constexpr int kDefaultLookahead = 1024;

// A weight push or mm streams one sublane row a cycle, so it holds its MXU
// port kMxuPortCycles; one issued in the last cycle of a carrying block
// (MBlock::mxuCarry) frees it kMxuPortEntry cycles into the next.
constexpr int kMxuPortCycles = isa::kSublanes;
constexpr int kMxuPortEntry = kMxuPortCycles - 1;

bool isMxuOp(Opcode op) {
  return isWPush(op) || isMm(op) || op == Opcode::MxuLatch || op == Opcode::MxuPop;
}
int mxuIndex(const MInstr& mi) {
  // The MXU operand is the first for push-slot ops, the second for pops.
  return int(mi.op == Opcode::MxuPop ? mi.ops[1].value : mi.ops[0].value);
}
int accSlot(const MInstr& mi) { return int(mi.ops[2].value); }

// Register key: class and number (virtual or physical share one space per class).
int regKey(const MOperand& o) {
  return int(o.cls) * 1000000 + int(o.value) * 2 + (o.kind == MOperand::Kind::PhysReg);
}

// Cycles a non-pipelined unit stays busy, and which unit (-1 = none).
enum class Unit { None, Xlu, Eup };
bool isTranspose(Opcode op) { return op == Opcode::XluTrPush || op == Opcode::XluTrPop; }
Unit unitOf(const MInstr& mi) {
  // The transpose unit is not one of the XLUs: its ops are chained in program
  // order (DagBuilder), which also spaces them by its intervals.
  if (isTranspose(mi.op)) return Unit::None;
  if (mi.info().slot == SlotKind::Xlu) return Unit::Xlu;
  if (mi.info().latency == isa::LatencyClass::VectorTrans) return Unit::Eup;
  return Unit::None;
}
int unitInterval(const MInstr& mi, const TargetInfo& t) {
  switch (mi.info().latency) {
    case isa::LatencyClass::XluReduce:
      return t.xluReduceInterval;
    case isa::LatencyClass::XluShort:
    case isa::LatencyClass::XluTranspose:
      return t.xluPermuteInterval;
    case isa::LatencyClass::VectorTrans:
      return t.transcendentalInterval;
    default:
      return 1;
  }
}

// How long after issue an instruction still has effects in flight (drain).
int tailOf(const MInstr& mi, const TargetInfo& t) {
  int tail = resultLatency(mi, t);
  if (isWPush(mi.op) || isMm(mi.op)) tail = std::max(tail, kMxuPortCycles);
  if (isMm(mi.op)) tail = std::max(tail, 7 + 2 * t.mxuSize + 1);
  if (isWPushT(mi.op)) tail = std::max(tail, kMxuPortCycles);
  return tail;
}

// Where a VMEM access lies, for telling accesses of one region apart: rows
// [start, start + span) counted from an absolute row 0 (base = -1, the row is
// static) or from the value of one base register (base = an id of that
// register's definition in this block; the same value for both accesses).
struct VmemRange {
  bool known = false;
  int64_t base = -1, start = 0, span = 0;
  bool overlaps(const VmemRange& o) const {
    return !known || !o.known || base != o.base ||
           (start < o.start + o.span && o.start < start + span);
  }
};

class DagBuilder {
 public:
  DagBuilder(const MBlock& b, const TargetInfo& t)
      : succ_(b.instrs.size()), npred_(b.instrs.size(), 0), range_(b.instrs.size()), b_(b), t_(t) {}

  void build() {
    const auto& ins = b_.instrs;
    std::unordered_map<int, int> lastWriter;            // reg -> instr
    std::unordered_map<int, std::vector<int>> readers;  // reg -> readers since the last write
    int lastBarrier = -1;
    // The last barrier that is not a DMA issue: a vector load or a
    // register-only op after a `dma` may move above it (see below).
    int lastOrderBarrier = -1;
    std::vector<int> sinceBarrier;
    // Chunk waits (MInstr::waitRegion): per region, the last one and the
    // accesses since it.
    std::set<int> waited;
    for (const MInstr& mi : ins)
      if (mi.waitRegion >= 0) waited.insert(mi.waitRegion);
    std::map<int, int> regionWait;
    std::map<int, std::vector<int>> regionAccesses;
    struct MxuState {
      int lastWPush = -1, lastMm = -1, lastLatch = -1, lastPop = -1;
      std::map<int, int> lastMmToSlot, lastPopOfSlot;
    };
    std::map<int, MxuState> mxu;
    int lastTranspose = -1;  // the transpose unit's block is state: its ops keep their order
    for (int j = 0; j < int(ins.size()); ++j) {
      const MInstr& mi = ins[j];
      if (isTranspose(mi.op)) {
        if (lastTranspose >= 0)
          edge(lastTranspose, j,
               ins[lastTranspose].op == Opcode::XluTrPush ? t_.transposePushInterval
                                                          : t_.transposePopInterval);
        lastTranspose = j;
      }
      // Memory order first: the address uses the base register as it is now.
      if (mi.mem.space != MemAccess::Space::None) {
        range_[j] = rangeOf(mi, lastWriter);
        memoryEdges(j);
      }
      // Registers (with the upper half of an MXU register pair).
      forEachReg(mi, [&](const MOperand& o, isa::Access acc) {
        if (acc == isa::Access::Read || acc == isa::Access::ReadWrite) {
          auto w = lastWriter.find(regKey(o));
          if (w != lastWriter.end()) edge(w->second, j, resultLatency(ins[w->second], t_));
        }
      });
      forEachReg(mi, [&](const MOperand& o, isa::Access acc) {
        if (acc != isa::Access::Write && acc != isa::Access::ReadWrite) return;
        int key = regKey(o);
        auto w = lastWriter.find(key);
        if (w != lastWriter.end()) edge(w->second, j, resultLatency(ins[w->second], t_));
        int war = resultLatency(mi, t_) >= 1 ? 0 : 1;
        auto& rs = readers[key];
        for (int r : rs)
          if (r != j) edge(r, j, war);
        rs.clear();
        lastWriter[key] = j;
      });
      forEachReg(mi, [&](const MOperand& o, isa::Access acc) {
        if (acc == isa::Access::Read) readers[regKey(o)].push_back(j);
      });
      // A chunk wait stays after the accesses of its region emitted before it
      // (the reads of the parts before: so it stalls no earlier than the
      // first read of its part would) and before the later ones; other work
      // moves across it.
      if (mi.mem.space == MemAccess::Space::Vmem && waited.count(mi.mem.region)) {
        auto w = regionWait.find(mi.mem.region);
        if (w != regionWait.end()) edge(w->second, j, 1);
        regionAccesses[mi.mem.region].push_back(j);
      }
      if (mi.waitRegion >= 0) {
        for (int i : regionAccesses[mi.waitRegion]) edge(i, j, 0);
        regionAccesses[mi.waitRegion].clear();
        if (lastBarrier >= 0) edge(lastBarrier, j, 1);
        sinceBarrier.push_back(j);
        regionWait[mi.waitRegion] = j;
      } else if (mi.barrier()) {
        // Barriers: everything before completes, nothing after moves above.
        for (int i : sinceBarrier) edge(i, j, std::max(1, resultLatency(ins[i], t_)));
        if (lastBarrier >= 0) edge(lastBarrier, j, 1);
        sinceBarrier.clear();
        lastBarrier = j;
        if (!mi.passable) lastOrderBarrier = j;
      } else if (mi.info().latency == isa::LatencyClass::ScalarAlu) {
        // Scalar arithmetic reads and writes registers only: it may move up
        // across a barrier (`dma`, `sync.wait`; its register edges still
        // hold), so one copy's address chain runs under another copy's
        // descriptor stores and a branch condition is ready while a wait
        // stalls. The next barrier still comes after it, and the `dma`s and
        // waits keep their order (the queues see the same copies).
        sinceBarrier.push_back(j);
      } else {
        // A vector load or an op that touches no memory (vector arithmetic,
        // MXU pushes) may move up across a `dma`, not across a wait: what a
        // copy writes is read only after a `sync.wait` for it, and what it
        // reads (a write-back) a load does not change. A grid step's first
        // weight loads, their widening and pushes then need not wait for the
        // next block's descriptor stores and issue (Compile.cpp
        // stepOutlastsCopies).
        const bool movesUp = mi.op == Opcode::VLd || mi.mem.space == MemAccess::Space::None;
        const int after = movesUp ? lastOrderBarrier : lastBarrier;
        if (after >= 0) edge(after, j, std::max(1, resultLatency(ins[after], t_)));
        sinceBarrier.push_back(j);
      }
      // MXU port and result timing (isa/README.md, "MXU"). Only what the rules
      // need orders the ops of one MXU, so the next tile's weight pushes (weight
      // port) overlap the current tile's LHS stream (LHS port).
      if (isMxuOp(mi.op)) {
        MxuState& m = mxu[mxuIndex(mi)];
        if (isWPush(mi.op)) {
          if (m.lastWPush >= 0) edge(m.lastWPush, j, kMxuPortCycles);
          if (m.lastLatch >= 0) edge(m.lastLatch, j, isWPushT(mi.op) ? t_.mxuSize : 1);
          m.lastWPush = j;
        } else if (mi.op == Opcode::MxuLatch) {
          if (m.lastWPush >= 0) edge(m.lastWPush, j, kMxuPortCycles);
          if (m.lastMm >= 0) edge(m.lastMm, j, kMxuPortCycles);
          if (m.lastLatch >= 0) edge(m.lastLatch, j, t_.mxuSize);
          m.lastLatch = j;
        } else if (isMm(mi.op)) {
          if (m.lastMm >= 0) edge(m.lastMm, j, kMxuPortCycles);
          if (m.lastLatch >= 0) edge(m.lastLatch, j, 1);
          // The pop of the slot's previous result reads it first (same cycle is fine).
          auto p = m.lastPopOfSlot.find(accSlot(mi));
          if (p != m.lastPopOfSlot.end()) edge(p->second, j, 0);
          m.lastMm = j;
          m.lastMmToSlot[accSlot(mi)] = j;
        } else {  // pop
          auto s = m.lastMmToSlot.find(accSlot(mi));
          if (s != m.lastMmToSlot.end()) edge(s->second, j, 7 + 2 * t_.mxuSize);
          if (m.lastPop >= 0) edge(m.lastPop, j, 1);
          m.lastPop = j;
          m.lastPopOfSlot[accSlot(mi)] = j;
        }
      }
      // A branch ends the block: after everything else.
      if (isBranch(mi.op))
        for (int i = 0; i < j; ++i) edge(i, j, 0);
    }
  }

  std::vector<std::vector<Edge>> succ_;
  std::vector<int> npred_;
  std::vector<VmemRange> range_;

 private:
  const MBlock& b_;
  const TargetInfo& t_;
  // Per (space, region): the accesses with a known range, per (base, start),
  // as the last write and the reads since it (older ones are ordered through
  // that write), plus every access whose range is unknown.
  struct Cell {
    int lastWrite = -1;
    std::vector<int> reads;
    int64_t span = 0;
  };
  struct Region {
    std::map<std::pair<int64_t, int64_t>, Cell> cells;  // (base, start)
    std::map<int64_t, int64_t> maxSpan;                 // per base
    std::vector<int> unknown;
    bool written = false;
  };
  std::map<std::pair<int, int>, Region> regions_;

  VmemRange rangeOf(const MInstr& mi, const std::unordered_map<int, int>& lastWriter) const {
    VmemRange r;
    bool vld = mi.op == Opcode::VLd, vst = mi.op == Opcode::VSt, vstm = mi.op == Opcode::VStM;
    if (mi.mem.space != MemAccess::Space::Vmem || !(vld || vst || vstm)) return r;
    int64_t stride = vstm ? 1 : mi.ops[3].value;
    int64_t span = std::max<int64_t>({1, int64_t(mi.mem.rows), stride * 7 + 1});
    if (mi.mem.row >= 0) {
      r = {true, -1, mi.mem.row, span};
      return r;
    }
    const MOperand& b = mi.ops[1];
    if (!b.isReg() || mi.ops[2].kind != MOperand::Kind::Imm) return r;
    auto w = lastWriter.find(regKey(b));
    // The base register's definition: an instruction of this block, or its
    // value on entry (encoded below every instruction index).
    int64_t def = w != lastWriter.end() ? w->second : -1 - int64_t(regKey(b));
    r = {true, def, mi.ops[2].value, span};
    return r;
  }

  void memoryEdges(int j) {
    const MInstr& mi = b_.instrs[j];
    Region& reg = regions_[{int(mi.mem.space), mi.mem.region}];
    const VmemRange& rj = range_[j];
    if (mi.mem.write) reg.written = true;
    auto order = [&](int i) {
      const MInstr& p = b_.instrs[i];
      if (!p.mem.write && !mi.mem.write) return;
      int d = p.mem.write ? (mi.mem.write ? 1 : resultLatencyOfStore(p)) : 0;
      edge(i, j, d);
    };
    auto visitCell = [&](Cell& c) {
      if (c.lastWrite >= 0) order(c.lastWrite);
      if (mi.mem.write)
        for (int r : c.reads) order(r);
    };
    if (!reg.written) {  // reads of a region nothing writes commute
      if (!rj.known)
        reg.unknown.push_back(j);
      else
        reg.cells[{rj.base, rj.start}].reads.push_back(j), noteSpan(reg, rj);
      return;
    }
    for (int i : reg.unknown) order(i);
    if (!rj.known) {
      for (auto& [key, c] : reg.cells) visitCell(c);
      reg.unknown.push_back(j);
      return;
    }
    // Cells of this base that may overlap; cells of other bases always may.
    for (auto& [base, span] : reg.maxSpan) {
      auto lo = reg.cells.lower_bound({base, base == rj.base ? rj.start - span + 1 : INT64_MIN});
      for (auto it = lo; it != reg.cells.end() && it->first.first == base; ++it) {
        if (base == rj.base && it->first.second >= rj.start + rj.span) break;
        VmemRange other{true, base, it->first.second, it->second.span};
        if (other.overlaps(rj)) visitCell(it->second);
      }
    }
    Cell& c = noteSpan(reg, rj);
    if (mi.mem.write) {
      c.lastWrite = j;
      c.reads.clear();
    } else {
      c.reads.push_back(j);
    }
  }

  static Cell& noteSpan(Region& reg, const VmemRange& r) {
    Cell& c = reg.cells[{r.base, r.start}];
    c.span = std::max(c.span, r.span);
    int64_t& m = reg.maxSpan[r.base];
    m = std::max(m, r.span);
    return c;
  }
  int resultLatencyOfStore(const MInstr& st) { return std::max(1, resultLatency(st, t_)); }
  void edge(int from, int to, int d) {
    if (from == to) return;
    succ_[from].push_back({to, d});
    ++npred_[to];
  }
};

bool banksConflict(const VmemRange& ra, const MInstr& a, const VmemRange& rb, const MInstr& b,
                   int banks) {
  // Each access reads rows [start, start + rows) from one base; rows from
  // different (or unknown) bases may share banks.
  if (!ra.known || !rb.known || ra.base != rb.base || a.mem.region != b.mem.region) return true;
  std::array<int, 64> local{};
  std::vector<int> heap;
  int* used = local.data();
  if (banks > int(local.size())) {
    heap.assign(size_t(banks), 0);
    used = heap.data();
  }
  for (auto [r, m] : {std::pair{&ra, &a}, std::pair{&rb, &b}})
    for (int k = 0; k < m->mem.rows; ++k)
      if (++used[size_t(((r->start + k) % banks + banks) % banks)] > 1) return true;
  return false;
}

}  // namespace

namespace {

// The (MXU, slot)s an mxuLoop block pops before it mms them (results of its
// previous iteration): per slot, the first such pop and the last mm.
struct CarriedSlot {
  int firstPop = -1, lastMm = -1;
};
std::map<std::pair<int, int>, CarriedSlot> carriedSlots(const MBlock& block) {
  std::map<std::pair<int, int>, CarriedSlot> out;
  if (!block.mxuLoop) return out;
  std::set<std::pair<int, int>> mmSeen;
  for (int i = 0; i < int(block.instrs.size()); ++i) {
    const MInstr& mi = block.instrs[size_t(i)];
    if (!isMxuOp(mi.op) || !(isMm(mi.op) || mi.op == Opcode::MxuPop)) continue;
    std::pair<int, int> key{mxuIndex(mi), accSlot(mi)};
    if (mi.op == Opcode::MxuPop && !mmSeen.count(key) && !out.count(key)) out[key].firstPop = i;
    if (isMm(mi.op)) {
      mmSeen.insert(key);
      if (auto it = out.find(key); it != out.end()) it->second.lastMm = i;
    }
  }
  for (auto it = out.begin(); it != out.end();) it = it->second.lastMm < 0 ? out.erase(it) : ++it;
  return out;
}

BlockSchedule scheduleOnce(const MBlock& block, const TargetInfo& t,
                           const std::vector<int>& minEntry, int lookahead, int overlapLookahead,
                           int overlapReserve, bool eupChain);

// How far an overlap instruction (MInstr::overlap) may be scheduled past the
// oldest unscheduled one of them: a few tiles in flight, so that the MXU
// stream keeps registers for its weights. A block of long overlap work (flash
// attention's whole softmax under the next step's score dot) is scheduled
// again with the wide window, its chains' loads and exps then overlapping
// more; the shorter schedule wins.
constexpr int kOverlapLookahead = 96, kWideOverlapLookahead = 400;

// The registers of a class kept for its oldest unscheduled writer (near the
// limit new values come in program order). Such a block is scheduled again
// with overlap instructions keeping only kOverlapWorkReserves of them: where
// the overlap work is the block's critical path (flash attention's
// EUP-bound softmax under the next score dot, which leads in program order),
// the full reserve held the softmax's values back for the dot's loads
// (~200 bundles without an exp at each step's start). The shortest
// schedule wins.
constexpr int kReserve = 16;
constexpr std::array<int, 2> kOverlapWorkReserves = {4, 2};

// Overlap work with no reserve at all, in a window of 300: the SwiGLU
// backward's epilogue unrolled under its dots (v6e, 512-row step: 11,979 ->
// 10,762 bundles). Such a schedule may need more registers than there are
// (the scheduler counts only the block's own values): the driver then takes
// the next schedule of the block (scheduleBlockVariants).
constexpr int kUnreservedOverlapLookahead = 300;
constexpr std::array<int, 2> kUnreservedOverlapReserves = {0, 1};

// The transcendental unit takes one op per transcendentalInterval cycles, so
// a block's exps issue one after another whatever the dependences allow. Its
// critical path alone leaves that out: the column max passes that feed the
// exps of one window look no more urgent than another window's stores, and
// with several heads' softmax in one block the unit idled for hundreds of
// bundles between windows (v6e attention backward, 4 heads a block, their max passes first: 2,562
// -> 1,664 bundles with the rule below). With eupChain the priority counts each transcendental op
// as followed by the next one in program order (the unit's queue): a chain of their intervals in
// the heights only, no edge in the DAG. Blocks with at least kEupChainMinOps such ops are scheduled
// both ways; the shorter wins.
constexpr int kEupChainMinOps = 16;

// An mxuLoop block is scheduled, then again with each carried pop held back
// to where the block's length would have it (the last mm of its slot plus
// the result latency, minus the length), so that the pops sit late and the
// mms early; the shortest schedule wins.
BlockSchedule scheduleWith(const MBlock& block, const TargetInfo& t, int lookahead,
                           int overlapLookahead, int overlapReserve = kReserve,
                           bool eupChain = false) {
  auto carried = carriedSlots(block);
  BlockSchedule best =
      scheduleOnce(block, t, {}, lookahead, overlapLookahead, overlapReserve, eupChain);
  if (carried.empty()) return best;
  const int latency = 7 + 2 * t.mxuSize;
  BlockSchedule cur = best;
  std::vector<int> minEntry(block.instrs.size(), 0);
  for (int round = 0; round < 3; ++round) {
    for (auto& [key, c] : carried)
      minEntry[size_t(c.firstPop)] = std::max(minEntry[size_t(c.firstPop)],
                                              cur.cycle[size_t(c.lastMm)] + latency - cur.length);
    cur = scheduleOnce(block, t, minEntry, lookahead, overlapLookahead, overlapReserve, eupChain);
    if (cur.length < best.length) best = cur;
  }
  return best;
}

}  // namespace

// A kernel's longer lookahead is for its blocks of whole dots; other blocks
// (the attention kernels' softmax loops) may schedule worse with it, as
// longer register lifetimes hold new values back: the shorter schedule wins
// (v6e attention backward, 64 causal heads: its softmax loops 875-953
// bundles with 4096, 595 with the default).
std::vector<BlockSchedule> scheduleBlockVariants(const MBlock& block, const TargetInfo& t,
                                                 int lookahead) {
  std::vector<BlockSchedule> all;
  auto add = [&](BlockSchedule s) {
    for (const BlockSchedule& o : all)
      if (o.length == s.length && o.cycle == s.cycle) return;
    all.push_back(std::move(s));
  };
  auto withOverlap = [&](int overlapLookahead, int overlapReserve = kReserve,
                         bool eupChain = false) {
    auto at = [&](int l) {
      BlockSchedule s = scheduleWith(block, t, l, overlapLookahead, overlapReserve, eupChain);
      s.lookahead = l;
      add(std::move(s));
    };
    if (lookahead <= kDefaultLookahead) {
      at(lookahead);
      return;
    }
    at(0);
    at(lookahead);
  };
  withOverlap(kOverlapLookahead);
  // Blocks of many transcendental ops: again with their one unit's queue in
  // the priority (scheduleOnce, eupChain).
  const auto eupCount = std::count_if(block.instrs.begin(), block.instrs.end(),
                                      [](const MInstr& mi) { return unitOf(mi) == Unit::Eup; });
  if (eupCount >= kEupChainMinOps) withOverlap(kOverlapLookahead, kReserve, true);
  // Only blocks with more overlap instructions than the narrow window holds.
  const auto overlapCount = std::count_if(block.instrs.begin(), block.instrs.end(),
                                          [](const MInstr& mi) { return mi.overlap; });
  if (overlapCount > kOverlapLookahead) {
    withOverlap(kWideOverlapLookahead);
    for (int reserve : kOverlapWorkReserves) withOverlap(kWideOverlapLookahead, reserve);
    for (int reserve : kUnreservedOverlapReserves)
      withOverlap(kUnreservedOverlapLookahead, reserve);
  }
  // Shortest first; among equals the one tried first (stable).
  std::stable_sort(all.begin(), all.end(), [](const BlockSchedule& a, const BlockSchedule& b) {
    return a.length < b.length;
  });
  return all;
}

BlockSchedule scheduleBlock(const MBlock& block, const TargetInfo& t, int lookahead) {
  return scheduleBlockVariants(block, t, lookahead).front();
}

namespace {

BlockSchedule scheduleOnce(const MBlock& block, const TargetInfo& t,
                           const std::vector<int>& minEntry, int lookahead, int overlapLookahead,
                           int overlapReserve, bool eupChain) {
  const auto& ins = block.instrs;
  int n = int(ins.size());
  BlockSchedule s;
  s.cycle.assign(n, -1);
  if (n == 0) return s;
  DagBuilder dag(block, t);
  dag.build();
  // How long each instruction keeps the block from ending. With results kept
  // in the MXU across blocks (MBlock::mxuCarry), an mm whose slot this block
  // does not pop only holds its LHS port: its result is popped in a later
  // block, which allows for it on entry (below).
  std::vector<int> tail(n), entry(n, 0);
  if (!minEntry.empty()) entry = minEntry;
  for (int i = 0; i < n; ++i) tail[i] = tailOf(ins[i], t);
  if (block.mxuCarry || block.mxuLoop) {
    std::set<std::pair<int, int>> poppedLater;  // (MXU, slot)
    for (int i = n - 1; i >= 0; --i) {
      if (ins[i].op == Opcode::MxuPop) poppedLater.insert({mxuIndex(ins[i]), accSlot(ins[i])});
      if (isMm(ins[i].op) && !poppedLater.count({mxuIndex(ins[i]), accSlot(ins[i])}))
        tail[i] = std::max(resultLatency(ins[i], t), kMxuPortCycles);
    }
  }
  // In a carrying block the ports' kMxuPortCycles are left to the next block too:
  // every block of such a function lets its first weight push and mm of each
  // MXU wait kMxuPortEntry cycles (below; HazardCheck.cpp the same), so a
  // step's body ends at its last mm instead of draining the LHS port.
  if (block.mxuCarry)
    for (int i = 0; i < n; ++i)
      if (isWPush(ins[i].op) || (isMm(ins[i].op) && tail[i] <= kMxuPortCycles))
        tail[i] = std::max(1, resultLatency(ins[i], t));
  if (block.mxuCarry || block.mxuEntry) {
    // On entry any MXU may have latched and mm'd into any slot in the cycle
    // before: until its first latch here, a latch or transposed push waits
    // N cycles, and a pop of a slot not mm'd here 2N + 7.
    std::set<int> latched;
    std::set<std::pair<int, int>> mmHere;
    for (int i = 0; i < n; ++i) {
      const MInstr& mi = ins[i];
      if (!isMxuOp(mi.op)) continue;
      int u = mxuIndex(mi);
      if ((mi.op == Opcode::MxuLatch || isWPushT(mi.op)) && !latched.count(u))
        entry[i] = std::max(entry[i], t.mxuSize);
      if (isWPush(mi.op) || isMm(mi.op)) entry[i] = std::max(entry[i], kMxuPortEntry);
      if (mi.op == Opcode::MxuLatch) latched.insert(u);
      if (isMm(mi.op)) mmHere.insert({u, accSlot(mi)});
      if (mi.op == Opcode::MxuPop && !mmHere.count({u, accSlot(mi)}))
        entry[i] = std::max(entry[i], 7 + 2 * t.mxuSize);
    }
  }
  // The MXUs' weight pushes share one matrix-push slot per bundle. Started in
  // lockstep (one cycle apart), every MXU reaches its latch in the same few
  // cycles, and the latches, higher on the critical path, take the slot
  // before any MXU's next push: 3 cycles lost per weight tile on four MXUs
  // (132 instead of 129). Started 2 cycles apart, each MXU's latch and next
  // push fall between the others' (a few cycles once per block).
  {
    std::set<int> started;
    int previous = -1;
    for (int i = 0; i < n; ++i)
      if (isWPush(ins[i].op) && started.insert(mxuIndex(ins[i])).second) {
        if (previous >= 0) {
          dag.succ_[previous].push_back({i, 2});
          ++dag.npred_[i];
        }
        previous = i;
      }
  }
  // Priority: longest latency-weighted path to the end of the block.
  std::vector<int> height(n, 0);
  int nextEup = -1;
  for (int i = n - 1; i >= 0; --i) {
    height[i] = tail[i];
    for (const Edge& e : dag.succ_[i]) height[i] = std::max(height[i], e.distance + height[e.to]);
    if (eupChain && unitOf(ins[i]) == Unit::Eup) {
      if (nextEup >= 0) height[i] = std::max(height[i], unitInterval(ins[i], t) + height[nextEup]);
      nextEup = i;
    }
  }
  // Priority: the critical path, then program order.
  std::vector<int> rank(n);
  for (int i = 0; i < n; ++i) rank[i] = -height[i];
  // Overlap instructions (a dot's computed LHS) go first, in program order
  // (column by column): the matmul's K chunks wait for them, and the MXU
  // stream takes the slots they leave.
  for (int i = 0; i < n; ++i)
    if (ins[i].overlap) rank[i] = std::numeric_limits<int>::min() / 2 + i;
  // Registers as dense ids; per id the reads not yet scheduled. The halves of
  // an MXU register pair share one id of weight 2: the allocator holds both
  // registers from the pair's first definition to its last read.
  std::unordered_map<int, int> pairLow;  // regKey of an upper half -> regKey of its lower
  for (const MInstr& mi : ins)
    if (mi.pairHi.isReg()) pairLow[regKey(mi.pairHi)] = regKey(mi.ops[size_t(mi.pairedOperand())]);
  std::unordered_map<int, int> idOf;
  std::vector<int> remaining, clsOf, weight;
  std::vector<char> liveNow, definedHere;
  auto idFor = [&](const MOperand& o) {
    int key = regKey(o);
    bool paired = false;
    if (auto p = pairLow.find(key); p != pairLow.end()) key = p->second, paired = true;
    auto [it, fresh] = idOf.emplace(key, int(remaining.size()));
    if (fresh) {
      remaining.push_back(0);
      clsOf.push_back(int(o.cls));
      weight.push_back(1);
      liveNow.push_back(0);
      definedHere.push_back(0);
    }
    if (paired) weight[size_t(it->second)] = 2;
    return it->second;
  };
  FlatLists<int> reads, writes;
  for (int i = 0; i < n; ++i) {
    reads.open();
    writes.open();
    forEachReg(ins[i], [&](const MOperand& o, isa::Access acc) {
      int id = idFor(o);
      if (acc == isa::Access::Read || acc == isa::Access::ReadWrite) {
        reads.add(id);
        ++remaining[size_t(id)];
      }
      auto w = writes.last();
      if ((acc == isa::Access::Write || acc == isa::Access::ReadWrite) &&
          std::find(w.begin(), w.end(), id) == w.end()) {
        writes.add(id);
        definedHere[size_t(id)] = 1;
      }
    });
  }
  // Per instruction its distinct reads with their use counts, for growth().
  struct Use {
    int id, uses;
  };
  FlatLists<Use> distinctReads;
  for (int i = 0; i < n; ++i) {
    distinctReads.open();
    const auto r = reads[size_t(i)];
    for (size_t a = 0; a < r.size(); ++a) {
      int k = r[a];
      bool first = true;
      for (size_t b = 0; b < a; ++b) first &= r[b] != k;
      if (!first) continue;
      int uses = 0;
      for (int x : r) uses += x == k;
      distinctReads.add({k, uses});
    }
  }
  // Register pressure: values defined in this block and still to be read. An
  // instruction whose new values would exceed the register file waits, unless
  // nothing else can make progress.
  std::array<int, 3> live{}, limit{isa::kNumScalarRegs, t.vectorRegs, isa::kNumMaskRegs};
  // Pairs need two adjacent free registers: leave the allocator slack for the
  // holes single values leave between them.
  if (!pairLow.empty()) limit[size_t(RegClass::Vector)] -= kPairSlack;
  {
    std::vector<char> liveIn(remaining.size(), 0);
    for (int i = 0; i < n; ++i)
      for (int k : reads[i])
        if (!definedHere[size_t(k)] && !liveIn[size_t(k)]) {
          liveIn[size_t(k)] = 1;
          limit[size_t(clsOf[size_t(k)])] -= weight[size_t(k)];
        }
  }
  // The net number of live registers per class issuing i would add: its new
  // values still to be read, less the values whose last reads it is.
  auto growth = [&](int i) {
    std::array<int, 3> g{};
    for (int k : writes[i])
      if (!liveNow[size_t(k)] && remaining[size_t(k)] > 0)
        g[size_t(clsOf[size_t(k)])] += weight[size_t(k)];
    for (const Use& u : distinctReads[i])
      if (liveNow[size_t(u.id)] && remaining[size_t(u.id)] == u.uses)
        g[size_t(clsOf[size_t(u.id)])] -= weight[size_t(u.id)];
    return g;
  };
  // Per slot kind its slots in a bundle; per instruction its slot kind.
  std::array<int, isa::kNumSlotKinds> slots{};
  for (size_t k = 0; k < slots.size(); ++k) slots[k] = t.slotsOf(SlotKind(k));
  std::vector<SlotKind> slotOf(n);
  for (int i = 0; i < n; ++i) slotOf[size_t(i)] = ins[i].info().slot;
  // Shared immediates each instruction takes in its bundle.
  std::vector<int> immsOf(n, 0);
  for (int i = 0; i < n; ++i)
    for (int q = 0; q < ins[i].info().numOperands; ++q) {
      isa::OperandClass oc = isa::operandInfo(ins[i].info().operands[q]).cls;
      if (oc == isa::OperandClass::Imm32 || oc == isa::OperandClass::Target) ++immsOf[size_t(i)];
    }
  auto writesClass = [&](int i, int cls) {
    for (int k : writes[i])
      if (clsOf[size_t(k)] == cls) return true;
    return false;
  };
  // Ready instructions: `waiting` until their operands' latencies pass, then
  // `avail` per slot kind in priority order (height, then program order).
  // Only the first kWindow candidates of a slot kind are tried per cycle, so a
  // cycle costs O(slot kinds x window), not O(ready): blocks of 10k+
  // instructions schedule in near-linear time.
  constexpr int kWindow = 48;
  using Key = std::pair<int, int>;  // (rank, index)
  std::array<std::set<Key>, isa::kNumSlotKinds> avail;
  // Per class: unscheduled instructions writing it; the last kReserve registers
  // of a class go only to the oldest of them.
  // (In program order; `writerHead` is the first not yet issued in an
  // earlier cycle: instructions issued in this cycle still count.)
  std::array<std::vector<int>, 3> unscheduledWriters;
  std::array<size_t, 3> writerHead{};
  std::vector<char> issuedBefore(n, 0);
  // Loads (and transpose-unit pops) whose every reader is a weight push: only
  // they pass the reserve held for far pops (other new values doing so, e.g.
  // LHS tiles, filled the file and a forced pop then needed more registers
  // than there are).
  std::vector<char> feedsWPush(size_t(n), 0);
  for (int i = 0; i < n; ++i) {
    if (ins[i].op != Opcode::VLd && ins[i].op != Opcode::XluTrPop) continue;
    bool all = !dag.succ_[i].empty();
    // A transpose-unit pop's other successors are the unit's next op (its
    // order) and the block's end.
    for (const Edge& e : dag.succ_[i])
      all = all && (isWPush(ins[e.to].op) || (ins[i].op == Opcode::XluTrPop &&
                                              (isTranspose(ins[e.to].op) || e.to == n - 1)));
    feedsWPush[size_t(i)] = all;
  }
  constexpr size_t kPopSkip = 256;  // writers looked past for the reserve's head, at most
  constexpr int kPopHorizon = 64;   // a pop ready sooner keeps the reserve
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c)
      if (writesClass(i, c)) unscheduledWriters[size_t(c)].push_back(i);
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> waiting;  // (earliest, index)
  std::vector<int> npred = dag.npred_;
  std::vector<int> earliest = entry;
  // Lookahead: an instruction more than kLookahead places after the oldest
  // unscheduled one waits (`deferred`), so the schedule stays near the
  // lowering's order (which keeps register pressure low; LowerMatmul emits
  // the interleaving it wants) while still overlapping a few hundred
  // instructions, e.g. the weight pushes of one MXU's next K chunk. A kernel
  // may ask for more (`lookahead`); new values then come at most 5/8 of it
  // ahead, as with the default.
  const int kLookahead = lookahead > 0 ? lookahead : kDefaultLookahead,
            kGrowLookahead = kLookahead * 5 / 8;
  std::priority_queue<int, std::vector<int>, std::greater<int>> deferred;
  // Every available instruction, for the oldest: a min-heap whose entries
  // leave lazily (inAvail), as each instruction becomes available once.
  std::priority_queue<int, std::vector<int>, std::greater<int>> availHeap;
  std::vector<char> inAvail(n, 0);
  int availCount = 0;
  auto addAvail = [&](int i) {
    availHeap.push(i);
    inAvail[size_t(i)] = 1;
    ++availCount;
  };
  auto oldestAvail = [&] {
    while (!inAvail[size_t(availHeap.top())]) availHeap.pop();
    return availHeap.top();
  };
  int oldest = 0;
  // MXU results in flight do not hold the window back. A pop waits 2N + 7
  // cycles for its mm, and what reads it (a cast, a store) waits with it:
  // counted as the oldest, they kept the next dot on the same MXU (four whole
  // dots later in program order) out of the window until the earlier dot had
  // drained. `oldest` is the first unscheduled instruction that is neither an
  // overlap one nor behind a pop not yet issued (one whose predecessors are
  // all scheduled counts again).
  std::vector<char> behindPop(size_t(n), 0);
  for (int i = 0; i < n; ++i) {
    if (ins[i].op == Opcode::MxuPop) behindPop[size_t(i)] = 1;
    if (behindPop[size_t(i)])
      for (const Edge& e : dag.succ_[i]) behindPop[size_t(e.to)] = 1;
  }
  std::set<int> pinned;  // the instructions that count for `oldest`
  for (int i = 0; i < n; ++i)
    if (!ins[i].overlap && !behindPop[size_t(i)]) pinned.insert(i);
  // Overlap instructions (a dot's computed LHS, MInstr::overlap) neither
  // count as the oldest nor wait for the lookahead: the matmul after them
  // starts as soon as its first K chunk's column is stored, and they fill
  // the slots its MXU stream leaves. They have a lookahead of their own:
  // candidates at most overlapLookahead places ahead of the oldest
  // unscheduled one of them (kOverlapLookahead: a few tiles in flight), so the
  // MXU stream keeps registers for its weights and the candidates of a slot
  // kind (kWindow) are not all far-ahead loads of the prologue.
  int oldestOverlap = 0;
  std::priority_queue<int, std::vector<int>, std::greater<int>> deferredOverlap;
  auto advanceOldest = [&] {
    oldest = pinned.empty() ? n : *pinned.begin();
    while (oldestOverlap < n && (s.cycle[oldestOverlap] >= 0 || !ins[oldestOverlap].overlap))
      ++oldestOverlap;
  };
  advanceOldest();
  auto makeAvail = [&](int i) {
    if (ins[i].overlap && i > oldestOverlap + overlapLookahead) {
      deferredOverlap.push(i);
      return;
    }
    if (i > oldest + kLookahead && !ins[i].overlap) {
      deferred.push(i);
      return;
    }
    avail[size_t(slotOf[size_t(i)])].insert({rank[i], i});
    addAvail(i);
  };
  for (int i = 0; i < n; ++i)
    if (npred[i] == 0) waiting.push({earliest[i], i});
  std::vector<int> xluFree(std::max(1, t.xluCount), 0);
  int eupFree = 0;
  int done = 0, cycle = 0, lastIssue = 0, drain = 0;
  std::vector<int> issued, memThisCycle;
  int idle = 0;
  while (done < n) {
    while (!waiting.empty() && waiting.top().first <= cycle) {
      makeAvail(waiting.top().second);
      waiting.pop();
    }
    if (availCount == 0 && waiting.empty() && !deferredOverlap.empty()) {
      int i = deferredOverlap.top();  // defensive: never stall on the window
      deferredOverlap.pop();
      avail[size_t(slotOf[size_t(i)])].insert({rank[i], i});
      addAvail(i);
      continue;
    }
    if (availCount == 0) {
      if (waiting.empty())
        throw std::logic_error("scheduler: dependence cycle in block " + block.label);
      cycle = waiting.top().first;  // nothing can issue before then
      continue;
    }
    std::array<int, isa::kNumSlotKinds> used{};
    int immsUsed = 0;  // shared 32-bit immediates of the bundle
    memThisCycle.clear();
    issued.clear();
    int pressureBlocked = -1;
    // The writer the reserve is kept for: the oldest unscheduled one, past
    // MXU pops still waiting for their matmul (not ready within kPopHorizon
    // cycles: a pop comes 2N + 7 cycles after its mm). Kept for such a pop,
    // the reserve held the next dot's weight loads back for the whole drain
    // (64 causal heads' score dots: each dot's pushes started only after the
    // previous dot's pops), though the pop takes one register when it comes
    // and its store frees it. Only where the reserve is at most a quarter of
    // the class: with v4's 32 vector registers the other loads then took the
    // registers the next weight tile needed (swiglu +35%).
    std::array<size_t, 3> headNow{};
    std::array<char, 3> headKnown{};
    auto reserveHead = [&](int c) {
      if (headKnown[size_t(c)]) return headNow[size_t(c)];
      const auto& w = unscheduledWriters[size_t(c)];
      size_t h = writerHead[size_t(c)];
      if (limit[size_t(c)] >= 4 * kReserve)
        for (size_t end = std::min(w.size(), h + kPopSkip); h < end; ++h) {
          const int x = w[h];
          if (issuedBefore[size_t(x)]) continue;
          if (ins[x].op != Opcode::MxuPop ||
              (npred[size_t(x)] == 0 && earliest[size_t(x)] <= cycle + kPopHorizon))
            break;
        }
      headKnown[size_t(c)] = 1;
      return headNow[size_t(c)] = h;
    };
    // Tries instruction i in this bundle; `force` lets a pressure-blocked one go.
    auto tryIssue = [&](int i, bool force) {
      const MInstr& mi = ins[i];
      SlotKind k = slotOf[size_t(i)];
      if (mi.op == Opcode::Nop) return false;
      if (used[int(k)] >= slots[size_t(k)]) return false;
      bool tooMany = false;
      const std::array<int, 3> growNow = growth(i);
      for (int c = 0; c < 3; ++c) {
        int grow = growNow[size_t(c)];
        if (grow <= 0) continue;
        // A new value is made at most kGrowLookahead places ahead of the oldest
        // unscheduled instruction: far-ahead loads would hold registers for
        // thousands of cycles (an accumulator tile loaded long before its pop).
        if (i > oldest + kGrowLookahead && !force && !mi.overlap) return false;
        if (live[size_t(c)] + grow > limit[size_t(c)]) tooMany = true;
        // Near the limit, new values come in program order only, so registers go
        // to the values the next instructions need (a pop the next round's mm
        // waits for), not to far-ahead loads.
        // Masks keep two registers for the others: all 8 reserved, every
        // compare waited for the one before it (flash attention's causal mask).
        const auto& w = unscheduledWriters[size_t(c)];
        const size_t head = feedsWPush[size_t(i)] ? reserveHead(c) : writerHead[size_t(c)];
        const int reserve = c == int(RegClass::Mask) ? std::min(kReserve, limit[size_t(c)] - 2)
                            : mi.overlap             ? overlapReserve
                                                     : kReserve;
        // A transpose-unit pop read by a weight push (LowerMatmul's transposed
        // weight tiles) is not held by the reserve: the unit's next block
        // waits for it, and its register is freed 8 cycles later by the push.
        // Held, the pops waited for the other MXUs' transposed pushes, whose
        // loads filled the file up to the reserve (q.K of the int8 decode:
        // the unit's tiles were slower than the MXUs' own, 53,970 cycles
        // against 38,614).
        const bool unitRow = mi.op == Opcode::XluTrPop && feedsWPush[size_t(i)];
        if (!unitRow && live[size_t(c)] + grow > limit[size_t(c)] - reserve && head < w.size() &&
            i > w[head])
          tooMany = true;
      }
      if (tooMany && !force) {
        if (pressureBlocked < 0 || i < pressureBlocked) pressureBlocked = i;
        return false;
      }
      const int imms = immsOf[size_t(i)];
      if (immsUsed + imms > isa::kNumSharedImms) return false;
      if (isBranch(mi.op) && done + int(issued.size()) != n - 1) return false;  // branch goes last
      Unit u = unitOf(mi);
      int xluPick = -1;
      if (u == Unit::Xlu) {
        for (int x = 0; x < int(xluFree.size()); ++x)
          if (xluFree[size_t(x)] <= cycle) {
            xluPick = x;
            break;
          }
        if (xluPick < 0) return false;
      }
      if (u == Unit::Eup && eupFree > cycle) return false;
      if (k == SlotKind::VectorLoad || k == SlotKind::VectorStore) {
        for (int o : memThisCycle)
          if (slotOf[size_t(o)] == k &&
              banksConflict(dag.range_[o], ins[o], dag.range_[i], mi, t.vmemBanks))
            return false;
        memThisCycle.push_back(i);
      }
      ++used[int(k)];
      immsUsed += imms;
      if (xluPick >= 0) xluFree[size_t(xluPick)] = cycle + unitInterval(mi, t);
      if (u == Unit::Eup) eupFree = cycle + unitInterval(mi, t);
      s.cycle[i] = cycle;
      issued.push_back(i);
      for (int c = 0; c < 3; ++c) live[size_t(c)] += growNow[size_t(c)];
      for (int k2 : reads[i])
        if (--remaining[size_t(k2)] == 0) liveNow[size_t(k2)] = 0;
      for (int k2 : writes[i])
        if (remaining[size_t(k2)] > 0) liveNow[size_t(k2)] = 1;
      return true;
    };
    // Candidates in global priority order (a merge of the per-slot-kind lists),
    // at most kWindow per kind.
    std::array<std::set<Key>::iterator, isa::kNumSlotKinds> it;
    std::array<int, isa::kNumSlotKinds> tried{};
    for (size_t k = 0; k < avail.size(); ++k) it[k] = avail[k].begin();
    while (true) {
      int best = -1;
      for (size_t k = 0; k < avail.size(); ++k) {
        if (it[k] == avail[k].end() || tried[k] >= kWindow || used[k] >= slots[k]) continue;
        if (best < 0 || *it[k] < *it[size_t(best)]) best = int(k);
      }
      if (best < 0) break;
      int i = it[size_t(best)]->second;
      ++it[size_t(best)];
      ++tried[size_t(best)];
      tryIssue(i, false);
    }
    // The oldest instruction is always a candidate (the window may not reach it).
    int first = oldestAvail();
    if (s.cycle[first] < 0) tryIssue(first, false);
    // Only register pressure holds everything back: let the oldest one go.
    if (issued.empty() && pressureBlocked >= 0 && waiting.empty()) tryIssue(oldestAvail(), true);
    for (int i : issued) {
      avail[size_t(slotOf[size_t(i)])].erase({rank[i], i});
      inAvail[size_t(i)] = 0;
      --availCount;
      issuedBefore[size_t(i)] = 1;
      pinned.erase(i);
      ++done;
      lastIssue = std::max(lastIssue, cycle);
      drain = std::max(drain, cycle + tail[i]);
      for (const Edge& e : dag.succ_[i]) {
        earliest[e.to] = std::max(earliest[e.to], cycle + e.distance);
        if (--npred[e.to] == 0) {
          waiting.push({earliest[e.to], e.to});
          if (behindPop[size_t(e.to)] && !ins[e.to].overlap && ins[e.to].op != Opcode::MxuPop)
            pinned.insert(e.to);
        }
      }
    }
    for (int c = 0; c < 3; ++c) {
      const auto& w = unscheduledWriters[size_t(c)];
      size_t& head = writerHead[size_t(c)];
      while (head < w.size() && issuedBefore[size_t(w[head])]) ++head;
    }
    advanceOldest();
    while (!deferredOverlap.empty() && deferredOverlap.top() <= oldestOverlap + overlapLookahead) {
      int i = deferredOverlap.top();
      deferredOverlap.pop();
      makeAvail(i);
    }
    while (!deferred.empty() && deferred.top() <= oldest + kLookahead) {
      int i = deferred.top();
      deferred.pop();
      makeAvail(i);
    }
    idle = issued.empty() ? idle + 1 : 0;
    if (idle > 1000000) throw std::logic_error("scheduler: no progress in block " + block.label);
    ++cycle;
  }
  // A loop body's next iteration pops what its mms leave in flight: the
  // block lasts until the first such pop of the next iteration is ready.
  for (auto& [key, c] : carriedSlots(block))
    drain = std::max(drain,
                     s.cycle[size_t(c.lastMm)] + 7 + 2 * t.mxuSize - s.cycle[size_t(c.firstPop)]);
  // A final branch must not leave before the block's results land: delay it.
  const MInstr& last = ins[n - 1];
  if (isBranch(last.op)) {
    int want = std::max(s.cycle[n - 1], drain - 1);
    s.cycle[n - 1] = want;
    s.length = want + 1;
  } else {
    s.length = std::max(lastIssue + 1, drain);
  }
  return s;
}

}  // namespace

}  // namespace tpusim::kernels::codegen
