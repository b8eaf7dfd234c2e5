#include "kernels/codegen/HazardCheck.h"

#include <fmt/format.h>

#include <map>

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {

struct MxuTiming {
  int64_t weightFree = 0, lhsFree = 0, lastLatch = -1000000, popFree = 0;
  std::map<int64_t, int64_t> slotReady;
};

bool isBranch(Opcode op) {
  return op == Opcode::Jmp || op == Opcode::BrNz || op == Opcode::BrZ || op == Opcode::Loop;
}

}  // namespace

namespace {

// carryIn: MXU work of an earlier block may be in flight on entry; carryOut:
// results may stay in the slots (and ports busy) at the end.
std::vector<std::string> checkTiming(const std::vector<isa::Bundle>& bundles, const TargetInfo& t,
                                     bool carryIn, bool carryOut) {
  const bool mxuCarry = carryIn;
  std::vector<std::string> problems;
  std::map<std::pair<int, int64_t>, int64_t> ready;  // (class, reg) -> cycle the value is readable
  std::map<int, MxuTiming> mxu;
  // On entry with mxuCarry: a latch, a weight push and an mm to every slot in
  // the cycle before (a carrying block may end with its ports busy
  // kPortCarry cycles more; the scheduler's kMxuPortEntry).
  constexpr int64_t kPortCycles = isa::kSublanes;  // a push or mm: a sublane row a cycle
  constexpr int64_t kPortCarry = kPortCycles - 1;
  auto unit = [&](int u) -> MxuTiming& {
    auto [it, fresh] = mxu.try_emplace(u);
    if (fresh && mxuCarry) {
      it->second.lastLatch = -1;
      it->second.weightFree = it->second.lhsFree = kPortCarry;
    }
    return it->second;
  };
  std::vector<int64_t> xluFree(std::max(1, t.xluCount), 0);
  int64_t eupFree = 0, transposeFree = 0;
  int64_t endOfBlock = int64_t(bundles.size());
  auto report = [&](int64_t cycle, const isa::Instruction& in, const std::string& what) {
    problems.push_back(fmt::format("bundle {}: {}: {}", cycle, in.info().mnemonic, what));
  };
  for (int64_t c = 0; c < int64_t(bundles.size()); ++c) {
    const isa::Bundle& b = bundles[c];
    std::map<isa::SlotKind, int> used;
    std::map<std::pair<int, int64_t>, int> writes;
    std::vector<std::pair<std::pair<int, int64_t>, int64_t>> pending;
    for (const isa::Instruction& in : b.slots) {
      if (in.empty()) continue;
      const isa::OpcodeInfo& info = in.info();
      if (++used[info.slot] > t.slotsOf(info.slot))
        report(c, in,
               fmt::format("more {} slots than the preset's {}", isa::slotInfo(info.slot).name,
                           t.slotsOf(info.slot)));
      int lat = t.latencyOf(info.latency);
      // With N = 256 an MXU op's vector operand names a register pair (vreg, vreg + 1).
      bool widePair = t.mxuSize > isa::kLanes &&
                      (info.slot == isa::SlotKind::MatrixPush || in.op == Opcode::MxuPop);
      for (int k = 0; k < info.numOperands; ++k) {
        const isa::OperandInfo& oi = isa::operandInfo(info.operands[k]);
        int cls = int(oi.cls);
        if (oi.cls != isa::OperandClass::ScalarReg && oi.cls != isa::OperandClass::VectorReg &&
            oi.cls != isa::OperandClass::MaskReg)
          continue;
        int halves = widePair && oi.cls == isa::OperandClass::VectorReg ? 2 : 1;
        for (int h = 0; h < halves; ++h) {
          int64_t reg = in.operands[k] + h;
          auto key = std::make_pair(cls, reg);
          auto r = ready.find(key);
          if (r != ready.end() && r->second > c) {
            bool reads = oi.access == isa::Access::Read || oi.access == isa::Access::ReadWrite;
            report(c, in,
                   fmt::format("{}{} {} until bundle {}", oi.prefix, reg,
                               reads ? "is not ready" : "has a write in flight", r->second));
          }
          if (oi.access == isa::Access::Write || oi.access == isa::Access::ReadWrite) {
            if (++writes[key] > 1)
              report(c, in, fmt::format("{}{} written twice in one bundle", oi.prefix, reg));
            pending.push_back({key, c + lat});
          }
        }
      }
      // Units.
      if (in.op == Opcode::XluTrPush || in.op == Opcode::XluTrPop) {
        if (transposeFree > c)
          report(c, in, fmt::format("transpose unit busy until {}", transposeFree));
        transposeFree =
            c + (in.op == Opcode::XluTrPush ? t.transposePushInterval : t.transposePopInterval);
      } else if (info.slot == isa::SlotKind::Xlu) {
        int pick = -1;
        for (int x = 0; x < int(xluFree.size()); ++x)
          if (xluFree[x] <= c) {
            pick = x;
            break;
          }
        int interval = info.latency == isa::LatencyClass::XluReduce ? t.xluReduceInterval
                                                                    : t.xluPermuteInterval;
        if (pick < 0)
          report(c, in, "every XLU is busy");
        else
          xluFree[pick] = c + interval;
      }
      if (info.latency == isa::LatencyClass::VectorTrans) {
        if (eupFree > c) report(c, in, fmt::format("transcendental unit busy until {}", eupFree));
        eupFree = c + t.transcendentalInterval;
      }
      // MXU rules.
      Opcode op = in.op;
      bool wpush = isa::isMxuWeightPush(op);
      bool wpushT = isa::isMxuWeightPushT(op);
      bool mm = isa::isMxuMatmul(op);
      if (wpush || mm || op == Opcode::MxuLatch) {
        MxuTiming& m = unit(int(in.operands[0]));
        if (wpush) {
          if (m.weightFree > c)
            report(c, in, fmt::format("weight port busy until {}", m.weightFree));
          if (wpushT && m.lastLatch + t.mxuSize > c)
            report(c, in, "transposed push before the last latch has passed the array");
          if (m.lastLatch >= c) report(c, in, "push in the cycle of a latch");
          m.weightFree = c + kPortCycles;
        } else if (mm) {
          if (m.lhsFree > c) report(c, in, fmt::format("LHS port busy until {}", m.lhsFree));
          m.lhsFree = c + kPortCycles;
          m.slotReady[in.operands[2]] = c + 7 + 2 * t.mxuSize;
        } else {
          if (m.weightFree > c || m.lhsFree > c) report(c, in, "latch while a port is busy");
          if (m.lastLatch + t.mxuSize > c)
            report(c, in, "latch before the previous latch has passed the array");
          m.lastLatch = c;
        }
      }
      if (op == Opcode::MxuPop) {
        MxuTiming& m = unit(int(in.operands[1]));
        auto s = m.slotReady.find(in.operands[2]);
        if (s == m.slotReady.end() && mxuCarry && c < 6 + 2 * t.mxuSize)
          report(c, in,
                 fmt::format("result slot a{} may hold an mm of the block before, not ready "
                             "until {}",
                             in.operands[2], 6 + 2 * t.mxuSize));
        if (s != m.slotReady.end() && s->second > c)
          report(c, in,
                 fmt::format("result slot a{} not ready until {}", in.operands[2], s->second));
        if (m.popFree > c) report(c, in, "two pops of one MXU in a cycle");
        m.popFree = c + 1;
      }
      if (isBranch(op) && c != int64_t(bundles.size()) - 1)
        report(c, in, "a branch before the last bundle of the block");
    }
    for (auto& [key, when] : pending) ready[key] = when;
  }
  // Every result must be written by the time the next block issues.
  for (auto& [key, when] : ready)
    if (when > endOfBlock)
      problems.push_back(
          fmt::format("end of block: a {} register result lands at bundle {} after "
                      "the block ends at {}",
                      key.first == int(isa::OperandClass::VectorReg) ? "vector" : "scalar/mask",
                      when, endOfBlock));
  for (auto& [unit, m] : mxu)
    if (carryOut && std::max(m.weightFree, m.lhsFree) > endOfBlock + (carryIn ? kPortCarry : 0))
      problems.push_back(
          fmt::format("end of block: an mxu{} port is busy until bundle {}, after "
                      "the block ends at {}",
                      unit, std::max(m.weightFree, m.lhsFree), endOfBlock));
  for (auto& [unit, m] : mxu)
    for (auto& [slot, when] : m.slotReady)
      if (when > endOfBlock && !carryOut)
        problems.push_back(
            fmt::format("end of block: mxu{} slot a{} is ready only at bundle {}, "
                        "after the block ends at {}",
                        unit, slot, when, endOfBlock));
  return problems;
}

}  // namespace

std::vector<std::string> checkBlockTiming(const std::vector<isa::Bundle>& bundles,
                                          const TargetInfo& t, bool mxuCarry, bool mxuEntry) {
  return checkTiming(bundles, t, mxuCarry || mxuEntry, mxuCarry);
}

std::vector<std::string> checkLoopBlockTiming(const std::vector<isa::Bundle>& bundles,
                                              const TargetInfo& t) {
  // The first copy's branch (if any) would sit before the last bundle.
  std::vector<isa::Bundle> twice = bundles;
  for (isa::Bundle& b : twice)
    for (isa::Instruction& in : b.slots)
      if (!in.empty() && isBranch(in.op)) in = isa::Instruction{};
  twice.insert(twice.end(), bundles.begin(), bundles.end());
  return checkTiming(twice, t, false, true);
}

}  // namespace tpusim::kernels::codegen
