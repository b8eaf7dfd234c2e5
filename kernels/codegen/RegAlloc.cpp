#include "kernels/codegen/RegAlloc.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tpusim::kernels::codegen {

namespace {

struct Interval {
  RegClass cls;
  int vreg;
  int64_t start = INT64_MAX, end = INT64_MIN;
  int64_t firstDef = INT64_MAX;
  int phys = -1;
};

}  // namespace

std::array<int, 3> allocateRegisters(MFunction& fn, const std::vector<BlockSchedule>& schedules,
                                     const std::vector<LoopRange>& loops, const TargetInfo& t) {
  std::vector<int64_t> blockStart(fn.blocks.size() + 1, 0);
  for (size_t b = 0; b < fn.blocks.size(); ++b)
    blockStart[b + 1] = blockStart[b] + schedules[b].length;
  // A register read at cycle t may be rewritten by an instruction issuing at t
  // when every write lands at least one cycle after issue (reads are at issue).
  int minLatency = INT32_MAX;
  for (int l : t.latency) minLatency = std::min(minLatency, l);
  int readHold = minLatency >= 1 ? 0 : 1;
  std::map<std::pair<int, int>, Interval> iv;
  // Per loop, the first position at which each register is read / written.
  struct Ref {
    int64_t pos;
    bool write;
  };
  std::map<std::pair<int, int>, std::vector<Ref>> refs;
  for (size_t b = 0; b < fn.blocks.size(); ++b) {
    const MBlock& blk = fn.blocks[b];
    for (size_t i = 0; i < blk.instrs.size(); ++i) {
      const MInstr& mi = blk.instrs[i];
      int64_t pos = blockStart[b] + schedules[b].cycle[i];
      const isa::OpcodeInfo& info = mi.info();
      int lat = t.latencyOf(info.latency);
      for (int k = 0; k < info.numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        if (o.kind != MOperand::Kind::VirtReg) continue;
        auto key = std::make_pair(int(o.cls), int(o.value));
        Interval& in = iv[key];
        in.cls = o.cls;
        in.vreg = int(o.value);
        isa::Access acc = isa::operandInfo(info.operands[k]).access;
        bool reads = acc == isa::Access::Read || acc == isa::Access::ReadWrite;
        bool writes = acc == isa::Access::Write || acc == isa::Access::ReadWrite;
        in.start = std::min(in.start, pos);
        if (reads) in.end = std::max(in.end, pos + readHold);
        if (writes) {
          in.end = std::max(in.end, pos + std::max(1, lat));
          in.firstDef = std::min(in.firstDef, pos);
        }
        if (reads) refs[key].push_back({pos, false});
        if (writes) refs[key].push_back({pos, true});
      }
    }
  }
  // Loops: a value touched inside and outside, or read inside before its first
  // write inside (carried around the back edge), lives across the whole loop.
  for (const LoopRange& l : loops) {
    int64_t ls = blockStart[l.first], le = blockStart[l.last + 1];
    for (auto& [key, list] : refs) {
      bool inside = false, outside = false;
      int64_t firstInsideDef = INT64_MAX, firstInsideUse = INT64_MAX;
      for (const Ref& r : list) {
        bool in = r.pos >= ls && r.pos < le;
        (in ? inside : outside) = true;
        if (in && r.write) firstInsideDef = std::min(firstInsideDef, r.pos);
        if (in && !r.write) firstInsideUse = std::min(firstInsideUse, r.pos);
      }
      if (inside && (outside || firstInsideUse <= firstInsideDef)) {
        Interval& in = iv[key];
        in.start = std::min(in.start, ls);
        in.end = std::max(in.end, le);
      }
    }
  }
  std::array<int, 3> limits{isa::kNumScalarRegs, t.vectorRegs, isa::kNumMaskRegs};
  std::array<int, 3> used{};
  std::vector<Interval*> order;
  for (auto& [key, in] : iv) order.push_back(&in);
  std::sort(order.begin(), order.end(), [](const Interval* a, const Interval* b) {
    return a->start != b->start ? a->start < b->start : a->vreg < b->vreg;
  });
  std::array<std::vector<int64_t>, 3> freeAt;  // per physical register: free from this position
  for (int c = 0; c < 3; ++c) freeAt[c].assign(limits[c], INT64_MIN);
  for (Interval* in : order) {
    auto& regs = freeAt[int(in->cls)];
    int pick = -1;
    for (int r = 0; r < int(regs.size()); ++r)
      if (regs[r] <= in->start) {
        pick = r;
        break;
      }
    if (pick < 0) {
      size_t blk = 0;
      while (blk + 1 < fn.blocks.size() && blockStart[blk + 1] <= in->start) ++blk;
      // The spill candidate: of the values live here, the one whose interval
      // ends last (it frees a register for longest), if it may be spilled.
      int candidate = -1;
      int64_t furthest = INT64_MIN;
      for (const Interval* o : order) {
        if (o->cls != in->cls || (o->phys < 0 && o != in) || o->start > in->start ||
            o->end <= in->start || fn.unspillable.count({int(o->cls), o->vreg}))
          continue;
        if (o->end > furthest) {
          furthest = o->end;
          candidate = o->vreg;
        }
      }
      throw RegisterPressureError(
          fmt::format("kernel '{}' needs more than the {} {} registers of the target at once "
                      "(block {}, bundle {}){}",
                      fn.name, limits[int(in->cls)],
                      in->cls == RegClass::Vector
                          ? "vector"
                          : (in->cls == RegClass::Scalar ? "scalar" : "mask"),
                      fn.blocks[blk].label, in->start,
                      in->cls == RegClass::Mask ? "; mask registers are not spilled"
                                                : " even after spilling (use smaller blocks)"),
          in->cls, candidate);
    }
    regs[pick] = in->end;
    in->phys = pick;
    used[int(in->cls)] = std::max(used[int(in->cls)], pick + 1);
  }
  for (MBlock& blk : fn.blocks)
    for (MInstr& mi : blk.instrs)
      for (int k = 0; k < mi.info().numOperands; ++k) {
        MOperand& o = mi.ops[k];
        if (o.kind != MOperand::Kind::VirtReg) continue;
        o = MOperand::preg(o.cls, iv.at({int(o.cls), int(o.value)}).phys);
      }
  return used;
}

std::vector<isa::Bundle> assembleBundles(const MFunction& fn,
                                         const std::vector<BlockSchedule>& schedules,
                                         const TargetInfo& t, std::vector<uint32_t>* startsOut,
                                         uint32_t firstBundle) {
  std::vector<uint32_t> starts(fn.blocks.size() + 1, 0);
  for (size_t b = 0; b < fn.blocks.size(); ++b) starts[b + 1] = starts[b] + schedules[b].length;
  std::vector<isa::Bundle> out(starts.back());
  for (size_t b = 0; b < fn.blocks.size(); ++b) {
    const MBlock& blk = fn.blocks[b];
    std::vector<std::array<int, isa::kNumSlotKinds>> next(schedules[b].length);
    for (auto& n : next) n.fill(0);
    for (size_t i = 0; i < blk.instrs.size(); ++i) {
      const MInstr& mi = blk.instrs[i];
      int c = schedules[b].cycle[i];
      int kind = int(mi.info().slot);
      int idx = next[c][kind]++;
      if (idx >= t.slotsOf(mi.info().slot))
        throw CodegenError(
            fmt::format("internal: slot overflow in block {} cycle {}", blk.label, c));
      isa::Instruction& in = out[starts[b] + c].slot(mi.info().slot, idx);
      in.op = mi.op;
      for (int k = 0; k < mi.info().numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        switch (o.kind) {
          case MOperand::Kind::VirtReg:
            throw CodegenError("internal: virtual register left after allocation");
          case MOperand::Kind::Block:
            in.operands[k] = firstBundle + starts.at(size_t(o.value));
            break;
          default:
            in.operands[k] = o.value;
        }
      }
    }
  }
  if (startsOut) *startsOut = starts;
  return out;
}

std::string printMachineCode(const MFunction& fn, const std::vector<isa::Bundle>& bundles,
                             const std::vector<uint32_t>& blockStart, uint32_t firstBundle) {
  std::string text;
  for (size_t b = 0; b < fn.blocks.size(); ++b) {
    text += fmt::format("{}:  # bundles {}..{}\n", fn.blocks[b].label, firstBundle + blockStart[b],
                        firstBundle + blockStart[b + 1]);
    for (uint32_t c = blockStart[b]; c < blockStart[b + 1]; ++c) {
      std::string line;
      for (const isa::Instruction& in : bundles[c].slots) {
        if (in.empty()) continue;
        line += fmt::format("{}{}", line.empty() ? "" : " ; ", in.info().mnemonic);
        for (int o = 0; o < in.info().numOperands; ++o)
          line += fmt::format("{}{}{}", o ? ", " : " ",
                              isa::operandInfo(in.info().operands[o]).prefix, in.operands[o]);
      }
      text += fmt::format("  {:5}  {}\n", firstBundle + c, line.empty() ? "nop" : line);
    }
  }
  return text;
}

}  // namespace tpusim::kernels::codegen
