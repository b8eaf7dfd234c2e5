#include "kernels/codegen/Scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace tpusim::kernels::codegen {

using isa::Opcode;
using isa::SlotKind;

int resultLatency(const MInstr& mi, const TargetInfo& t) { return t.latencyOf(mi.info().latency); }

namespace {

struct Edge {
  int to;
  int distance;
};

bool isWPush(Opcode op) {
  return op == Opcode::MxuWPushBf16 || op == Opcode::MxuWPushTBf16 || op == Opcode::MxuWPushS8 ||
         op == Opcode::MxuWPushTS8;
}
bool isWPushT(Opcode op) { return op == Opcode::MxuWPushTBf16 || op == Opcode::MxuWPushTS8; }
bool isMm(Opcode op) {
  return op == Opcode::MxuMmBf16 || op == Opcode::MxuMmaBf16 || op == Opcode::MxuMmS8 ||
         op == Opcode::MxuMmaS8;
}
bool isBranch(Opcode op) {
  return op == Opcode::Jmp || op == Opcode::BrNz || op == Opcode::BrZ || op == Opcode::Loop;
}
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
Unit unitOf(const MInstr& mi) {
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
  if (isWPush(mi.op) || isMm(mi.op)) tail = std::max(tail, 8);
  if (isMm(mi.op)) tail = std::max(tail, 7 + 2 * t.mxuSize + 1);
  if (isWPushT(mi.op)) tail = std::max(tail, 8);
  return tail;
}

class DagBuilder {
 public:
  DagBuilder(const MBlock& b, const TargetInfo& t)
      : succ_(b.instrs.size()), npred_(b.instrs.size(), 0), b_(b), t_(t) {}

  void build() {
    const auto& ins = b_.instrs;
    std::map<int, int> lastWriter;                           // reg -> instr
    std::map<int, std::vector<int>> readers;                 // reg -> readers since the last write
    std::map<std::pair<int, int>, std::vector<int>> memOps;  // (space, region) -> accesses
    int lastBarrier = -1;
    std::vector<int> sinceBarrier;
    struct MxuState {
      int lastWPush = -1, lastMm = -1, lastLatch = -1, lastPop = -1, last = -1;
      std::map<int, int> lastMmToSlot;
    };
    std::map<int, MxuState> mxu;
    for (int j = 0; j < int(ins.size()); ++j) {
      const MInstr& mi = ins[j];
      const isa::OpcodeInfo& info = mi.info();
      // Registers.
      for (int k = 0; k < info.numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        if (!o.isReg()) continue;
        isa::Access acc = isa::operandInfo(info.operands[k]).access;
        int key = regKey(o);
        if (acc == isa::Access::Read || acc == isa::Access::ReadWrite) {
          auto w = lastWriter.find(key);
          if (w != lastWriter.end()) edge(w->second, j, resultLatency(ins[w->second], t_));
        }
      }
      for (int k = 0; k < info.numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        if (!o.isReg()) continue;
        isa::Access acc = isa::operandInfo(info.operands[k]).access;
        int key = regKey(o);
        if (acc == isa::Access::Write || acc == isa::Access::ReadWrite) {
          auto w = lastWriter.find(key);
          if (w != lastWriter.end()) edge(w->second, j, resultLatency(ins[w->second], t_));
          int war = resultLatency(mi, t_) >= 1 ? 0 : 1;
          for (int r : readers[key])
            if (r != j) edge(r, j, war);
          readers[key].clear();
          lastWriter[key] = j;
        }
      }
      for (int k = 0; k < info.numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        isa::Access acc = isa::operandInfo(info.operands[k]).access;
        if (o.isReg() && acc == isa::Access::Read) readers[regKey(o)].push_back(j);
      }
      // Memory order within a region.
      if (mi.mem.space != MemAccess::Space::None) {
        auto& list = memOps[{int(mi.mem.space), mi.mem.region}];
        for (int i : list) {
          const MInstr& p = ins[i];
          if (!p.mem.write && !mi.mem.write) continue;
          int d = p.mem.write ? (mi.mem.write ? 1 : resultLatencyOfStore(p)) : 0;
          edge(i, j, d);
        }
        list.push_back(j);
      }
      // Barriers: everything before completes, nothing after moves above.
      if (mi.barrier()) {
        for (int i : sinceBarrier) edge(i, j, std::max(1, resultLatency(ins[i], t_)));
        if (lastBarrier >= 0) edge(lastBarrier, j, 1);
        sinceBarrier.clear();
        lastBarrier = j;
      } else {
        if (lastBarrier >= 0)
          edge(lastBarrier, j, std::max(1, resultLatency(ins[lastBarrier], t_)));
        sinceBarrier.push_back(j);
      }
      // MXU port and result timing (isa/README.md, "MXU").
      if (isMxuOp(mi.op)) {
        MxuState& m = mxu[mxuIndex(mi)];
        if (m.last >= 0) edge(m.last, j, 0);  // program order per MXU
        if (isWPush(mi.op)) {
          if (m.lastWPush >= 0) edge(m.lastWPush, j, 8);
          if (m.lastLatch >= 0) edge(m.lastLatch, j, isWPushT(mi.op) ? t_.mxuSize : 1);
          m.lastWPush = j;
        } else if (mi.op == Opcode::MxuLatch) {
          if (m.lastWPush >= 0) edge(m.lastWPush, j, 8);
          if (m.lastMm >= 0) edge(m.lastMm, j, 8);
          m.lastLatch = j;
        } else if (isMm(mi.op)) {
          if (m.lastMm >= 0) edge(m.lastMm, j, 8);
          if (m.lastLatch >= 0) edge(m.lastLatch, j, 1);
          m.lastMm = j;
          m.lastMmToSlot[accSlot(mi)] = j;
        } else {  // pop
          auto s = m.lastMmToSlot.find(accSlot(mi));
          if (s != m.lastMmToSlot.end()) edge(s->second, j, 7 + 2 * t_.mxuSize);
          if (m.lastPop >= 0) edge(m.lastPop, j, 1);
          m.lastPop = j;
        }
        m.last = j;
      }
      // A branch ends the block: after everything else.
      if (isBranch(mi.op))
        for (int i = 0; i < j; ++i) edge(i, j, 0);
    }
  }

  std::vector<std::vector<Edge>> succ_;
  std::vector<int> npred_;

 private:
  const MBlock& b_;
  const TargetInfo& t_;

  int resultLatencyOfStore(const MInstr& st) { return std::max(1, resultLatency(st, t_)); }
  void edge(int from, int to, int d) {
    if (from == to) return;
    succ_[from].push_back({to, d});
    ++npred_[to];
  }
};

bool banksConflict(const MInstr& a, const MInstr& b, int banks) {
  // Each access reads rows [row, row + rows) of one base; unknown rows conflict.
  if (a.mem.row < 0 || b.mem.row < 0 || a.mem.region != b.mem.region) return true;
  std::vector<int> used(banks, 0);
  for (const MInstr* m : {&a, &b})
    for (int r = 0; r < m->mem.rows; ++r)
      if (++used[(m->mem.row + r) % banks] > 1) return true;
  return false;
}

}  // namespace

BlockSchedule scheduleBlock(const MBlock& block, const TargetInfo& t) {
  const auto& ins = block.instrs;
  int n = int(ins.size());
  BlockSchedule s;
  s.cycle.assign(n, -1);
  if (n == 0) return s;
  DagBuilder dag(block, t);
  dag.build();
  // Priority: longest latency-weighted path to the end of the block.
  std::vector<int> height(n, 0);
  for (int i = n - 1; i >= 0; --i) {
    height[i] = tailOf(ins[i], t);
    for (const Edge& e : dag.succ_[i]) height[i] = std::max(height[i], e.distance + height[e.to]);
  }
  std::vector<int> npred = dag.npred_;
  std::vector<int> earliest(n, 0);
  std::vector<int> ready;
  for (int i = 0; i < n; ++i)
    if (npred[i] == 0) ready.push_back(i);
  // Register pressure: values defined in this block and still to be read.
  // An instruction whose new values would exceed the register file waits,
  // unless nothing else can make progress.
  std::map<int, int> remaining;  // reg key -> reads not yet scheduled
  std::map<int, int> definedHere;
  std::vector<std::vector<int>> reads(n), writes(n);
  for (int i = 0; i < n; ++i) {
    const isa::OpcodeInfo& info = ins[i].info();
    for (int k = 0; k < info.numOperands; ++k) {
      const MOperand& o = ins[i].ops[k];
      if (!o.isReg()) continue;
      isa::Access acc = isa::operandInfo(info.operands[k]).access;
      if (acc == isa::Access::Read || acc == isa::Access::ReadWrite) {
        reads[i].push_back(regKey(o));
        ++remaining[regKey(o)];
      }
      if (acc == isa::Access::Write || acc == isa::Access::ReadWrite) {
        writes[i].push_back(regKey(o));
        definedHere.emplace(regKey(o), int(o.cls));
      }
    }
  }
  std::array<int, 3> live{}, limit{isa::kNumScalarRegs, t.vectorRegs, isa::kNumMaskRegs};
  {
    std::set<int> liveIn;
    for (int i = 0; i < n; ++i)
      for (int k : reads[i])
        if (!definedHere.count(k)) liveIn.insert(k);
    for (int k : liveIn) --limit[k / 1000000];
  }
  std::set<int> liveNow;
  auto netGrowth = [&](int i, int cls) {
    int g = 0;
    for (int k : writes[i])
      if (k / 1000000 == cls && !liveNow.count(k) && remaining[k] > 0) ++g;
    std::set<int> seen;
    for (int k : reads[i])
      if (k / 1000000 == cls && liveNow.count(k) && seen.insert(k).second) {
        int uses = 0;
        for (int r : reads[i]) uses += r == k;
        if (remaining[k] == uses) --g;
      }
    return g;
  };
  std::vector<int> xluFree(std::max(1, t.xluCount), 0);
  int eupFree = 0;
  int done = 0, cycle = 0, lastIssue = 0, drain = 0;
  while (done < n) {
    std::sort(ready.begin(), ready.end(),
              [&](int a, int b) { return height[a] != height[b] ? height[a] > height[b] : a < b; });
    std::array<int, isa::kNumSlotKinds> used{};
    int immsUsed = 0;  // shared 32-bit immediates of the bundle
    std::vector<int> loadsThisCycle, issued;
    bool waitingOnLatency = false;
    std::array<int, 3> oldestGrowing;
    oldestGrowing.fill(INT32_MAX);
    for (int i : ready)
      if (s.cycle[i] < 0)
        for (int c = 0; c < 3; ++c)
          if (netGrowth(i, c) > 0) oldestGrowing[c] = std::min(oldestGrowing[c], i);
    int pressureBlocked = -1;
    for (int pass = 0; pass < 2; ++pass) {
      for (int i : ready) {
        const MInstr& mi = ins[i];
        if (s.cycle[i] >= 0) continue;
        if (earliest[i] > cycle) {
          waitingOnLatency = true;
          continue;
        }
        bool tooMany = false;
        for (int c = 0; c < 3; ++c) {
          int grow = netGrowth(i, c);
          if (grow <= 0) continue;
          if (live[c] + grow > limit[c]) tooMany = true;
          // Near the limit, new values come in program order only, so registers go
          // to the values the next instructions need, not to far-ahead loads.
          if (live[c] + grow > limit[c] - 8 && i > oldestGrowing[c]) tooMany = true;
        }
        if (tooMany && !(pass == 1 && i == pressureBlocked)) {
          // If only pressure holds everything back, the oldest candidate goes: program
          // order is a schedule whose pressure the lowering keeps small.
          if (pass == 0 && (pressureBlocked < 0 || i < pressureBlocked)) pressureBlocked = i;
          continue;
        }
        SlotKind k = mi.info().slot;
        if (mi.op == Opcode::Nop) continue;
        if (used[int(k)] >= t.slotsOf(k)) continue;
        int imms = 0;
        for (int q = 0; q < mi.info().numOperands; ++q) {
          isa::OperandClass oc = isa::operandInfo(mi.info().operands[q]).cls;
          if (oc == isa::OperandClass::Imm32 || oc == isa::OperandClass::Target) ++imms;
        }
        if (immsUsed + imms > isa::kNumSharedImms) continue;
        if (isBranch(mi.op) && done + int(issued.size()) != n - 1) continue;  // branch goes last
        Unit u = unitOf(mi);
        int xluPick = -1;
        if (u == Unit::Xlu) {
          for (int x = 0; x < int(xluFree.size()); ++x)
            if (xluFree[x] <= cycle) {
              xluPick = x;
              break;
            }
          if (xluPick < 0) continue;
        }
        if (u == Unit::Eup && eupFree > cycle) continue;
        if (k == SlotKind::VectorLoad || k == SlotKind::VectorStore) {
          bool conflict = false;
          for (int o : loadsThisCycle)
            if (ins[o].info().slot == k && banksConflict(ins[o], mi, t.vmemBanks)) conflict = true;
          if (conflict) continue;
          loadsThisCycle.push_back(i);
        }
        ++used[int(k)];
        if (xluPick >= 0) xluFree[xluPick] = cycle + unitInterval(mi, t);
        if (u == Unit::Eup) eupFree = cycle + unitInterval(mi, t);
        s.cycle[i] = cycle;
        issued.push_back(i);
        for (int c = 0; c < 3; ++c) live[c] += netGrowth(i, c);
        for (int k : reads[i])
          if (--remaining[k] == 0 && liveNow.erase(k)) {
          }
        for (int k : writes[i])
          if (remaining[k] > 0) liveNow.insert(k);
      }
      // Only register pressure holds everything back: let the best candidate go.
      if (!issued.empty() || waitingOnLatency || pressureBlocked < 0) break;
    }
    for (int i : issued) {
      ready.erase(std::find(ready.begin(), ready.end(), i));
      ++done;
      lastIssue = std::max(lastIssue, cycle);
      drain = std::max(drain, cycle + tailOf(ins[i], t));
      for (const Edge& e : dag.succ_[i]) {
        earliest[e.to] = std::max(earliest[e.to], cycle + e.distance);
        if (--npred[e.to] == 0) ready.push_back(e.to);
      }
    }
    if (issued.empty() && !ready.empty()) {
      // Nothing fits this cycle: jump to the next cycle where something may.
    } else if (issued.empty() && ready.empty() && done < n) {
      throw std::logic_error("scheduler: dependence cycle in block " + block.label);
    }
    ++cycle;
  }
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

}  // namespace tpusim::kernels::codegen
