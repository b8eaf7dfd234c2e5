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
  bool present = false;  // some instruction names the register
};

// A reference to a virtual register, for the loop rule: its dense key
// (register number * 3 + class), whether it writes, and its position.
struct Ref {
  int key;
  bool write;
  int64_t pos;
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
  // Intervals indexed by class and virtual register number (registers are
  // numbered densely per class: MFunction::newReg); a flat list of references
  // for the loop rule. Maps keyed by (class, register) were most of the
  // allocator's time, which runs again after every spill.
  std::array<std::vector<Interval>, 3> iv;
  for (int c = 0; c < 3; ++c) iv[size_t(c)].resize(size_t(std::max(0, fn.numVirtRegs[size_t(c)])));
  auto intervalOf = [&](RegClass cls, int64_t vreg) -> Interval& {
    auto& v = iv[size_t(cls)];
    if (vreg < 0) throw CodegenError("internal: a negative virtual register");
    if (size_t(vreg) >= v.size()) v.resize(size_t(vreg) + 1);
    return v[size_t(vreg)];
  };
  std::vector<Ref> refs;
  std::map<int, int> pairOf;      // vector vreg -> the upper half it pairs with
  std::map<int, int> pairedWith;  // upper half -> its lower vreg
  for (size_t b = 0; b < fn.blocks.size(); ++b) {
    const MBlock& blk = fn.blocks[b];
    for (size_t i = 0; i < blk.instrs.size(); ++i) {
      const MInstr& mi = blk.instrs[i];
      int64_t pos = blockStart[b] + schedules[b].cycle[i];
      int lat = t.latencyOf(mi.info().latency);
      forEachReg(mi, [&](const MOperand& o, isa::Access acc) {
        if (o.kind != MOperand::Kind::VirtReg) return;
        Interval& in = intervalOf(o.cls, o.value);
        in.present = true;
        in.cls = o.cls;
        in.vreg = int(o.value);
        bool reads = acc == isa::Access::Read || acc == isa::Access::ReadWrite;
        bool writes = acc == isa::Access::Write || acc == isa::Access::ReadWrite;
        in.start = std::min(in.start, pos);
        if (reads) in.end = std::max(in.end, pos + readHold);
        if (writes) {
          in.end = std::max(in.end, pos + std::max(1, lat));
          in.firstDef = std::min(in.firstDef, pos);
        }
        int key = int(o.value) * 3 + int(o.cls);
        if (reads) refs.push_back({key, false, pos});
        if (writes) refs.push_back({key, true, pos});
      });
      // An MXU register pair: (lower, upper) virtual registers, each in one pair only.
      if (mi.pairHi.kind == MOperand::Kind::VirtReg) {
        const MOperand& lo = mi.ops[size_t(mi.pairedOperand())];
        if (lo.kind != MOperand::Kind::VirtReg || lo.cls != RegClass::Vector ||
            mi.pairHi.cls != RegClass::Vector)
          throw CodegenError("internal: a register pair of non-virtual or non-vector registers");
        auto [it, fresh] = pairOf.emplace(int(lo.value), int(mi.pairHi.value));
        auto [it2, fresh2] = pairedWith.emplace(int(mi.pairHi.value), int(lo.value));
        if ((!fresh && it->second != mi.pairHi.value) || (!fresh2 && it2->second != lo.value) ||
            pairOf.count(int(mi.pairHi.value)) || pairedWith.count(int(lo.value)))
          throw CodegenError(fmt::format("internal: %v{} / %v{} are paired inconsistently",
                                         lo.value, mi.pairHi.value));
      }
    }
  }
  auto byKey = [&](int key) -> Interval& { return iv[size_t(key % 3)][size_t(key / 3)]; };
  // Loops: a value touched inside and outside, or read inside before its first
  // write inside (carried around the back edge), lives across the whole loop.
  if (!loops.empty()) {
    size_t keys = 0;
    for (const auto& v : iv) keys = std::max(keys, v.size() * 3);
    struct Seen {
      bool inside = false, outside = false;
      int64_t firstInsideDef = INT64_MAX, firstInsideUse = INT64_MAX;
    };
    std::vector<Seen> seen(keys);
    std::vector<int> touched;
    for (const LoopRange& l : loops) {
      int64_t ls = blockStart[l.first], le = blockStart[l.last + 1];
      touched.clear();
      for (const Ref& r : refs) {
        Seen& s = seen[size_t(r.key)];
        if (!s.inside && !s.outside) touched.push_back(r.key);
        bool in = r.pos >= ls && r.pos < le;
        (in ? s.inside : s.outside) = true;
        if (in && r.write) s.firstInsideDef = std::min(s.firstInsideDef, r.pos);
        if (in && !r.write) s.firstInsideUse = std::min(s.firstInsideUse, r.pos);
      }
      for (int key : touched) {
        Seen& s = seen[size_t(key)];
        if (s.inside && (s.outside || s.firstInsideUse <= s.firstInsideDef)) {
          Interval& in = byKey(key);
          in.start = std::min(in.start, ls);
          in.end = std::max(in.end, le);
        }
        s = Seen{};
      }
    }
  }
  // A pair is allocated as one interval (the union of both halves' intervals)
  // occupying two adjacent physical registers; the upper half follows the lower.
  auto& vec = iv[size_t(RegClass::Vector)];
  for (auto [lo, hi] : pairOf) {
    Interval& a = vec.at(size_t(lo));
    const Interval& b = vec.at(size_t(hi));
    a.start = std::min(a.start, b.start);
    a.end = std::max(a.end, b.end);
  }
  std::array<int, 3> limits{isa::kNumScalarRegs, t.vectorRegs, isa::kNumMaskRegs};
  std::array<int, 3> used{};
  // In (class, register) order, then sorted by start: the same order (and so
  // the same allocation and the same first failure) as a map walk would give.
  // The sort compares (start, register number) packed into one word when
  // both fit (positions are bundle cycles): the same comparisons, so
  // std::sort makes the same permutation, on 16-byte elements.
  struct Ordered {
    uint64_t key;
    Interval* in;
  };
  std::vector<Ordered> sorted;
  bool packs = true;
  for (int c = 0; c < 3; ++c)
    for (Interval& in : iv[size_t(c)])
      if (in.present && (c != int(RegClass::Vector) || !pairedWith.count(in.vreg))) {
        packs &=
            in.start >= 0 && in.start < (int64_t(1) << 39) && in.vreg >= 0 && in.vreg < (1 << 24);
        sorted.push_back({uint64_t(in.start) << 24 | uint64_t(uint32_t(in.vreg) & 0xFFFFFF), &in});
      }
  if (packs)
    std::sort(sorted.begin(), sorted.end(),
              [](const Ordered& a, const Ordered& b) { return a.key < b.key; });
  else
    std::sort(sorted.begin(), sorted.end(), [](const Ordered& a, const Ordered& b) {
      return a.in->start != b.in->start ? a.in->start < b.in->start : a.in->vreg < b.in->vreg;
    });
  std::vector<Interval*> order;
  order.reserve(sorted.size());
  for (const Ordered& o : sorted) order.push_back(o.in);
  std::array<std::vector<int64_t>, 3> freeAt;  // per physical register: free from this position
  for (int c = 0; c < 3; ++c) freeAt[c].assign(limits[c], INT64_MIN);
  for (Interval* in : order) {
    auto& regs = freeAt[int(in->cls)];
    auto hiOf = in->cls == RegClass::Vector ? pairOf.find(in->vreg) : pairOf.end();
    int width = hiOf != pairOf.end() ? 2 : 1;
    // With register pairs in the function, pairs take aligned registers
    // (2r, 2r + 1) and a single value first a register whose partner is taken,
    // from the top: singles do not split the free pairs. The holes they still
    // leave are what the scheduler's slack (kPairSlack) covers.
    bool paired = in->cls == RegClass::Vector && !pairOf.empty();
    auto isFree = [&](int r) { return r < int(regs.size()) && regs[r] <= in->start; };
    int pick = -1;
    if (!paired) {
      for (int r = 0; r < int(regs.size()) && pick < 0; ++r)
        if (isFree(r)) pick = r;
    } else if (width == 2) {
      for (int r = 0; r + 1 < int(regs.size()) && pick < 0; r += 2)
        if (isFree(r) && isFree(r + 1)) pick = r;
    } else {
      for (int r = int(regs.size()) - 1; r >= 0 && pick < 0; --r)
        if (isFree(r) && !isFree(r ^ 1)) pick = r;
      for (int r = int(regs.size()) - 1; r >= 0 && pick < 0; --r)
        if (isFree(r)) pick = r;
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
            o->end <= in->start || fn.unspillable.count({int(o->cls), o->vreg}) ||
            (o->cls == RegClass::Vector && pairOf.count(o->vreg)))
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
          in->cls, candidate, int(blk));
    }
    for (int w = 0; w < width; ++w) regs[pick + w] = in->end;
    in->phys = pick;
    if (width == 2) vec.at(size_t(hiOf->second)).phys = pick + 1;
    used[int(in->cls)] = std::max(used[int(in->cls)], pick + width);
  }
  for (MBlock& blk : fn.blocks)
    for (MInstr& mi : blk.instrs)
      forEachReg(mi, [&](MOperand& o, isa::Access) {
        if (o.kind == MOperand::Kind::VirtReg)
          o = MOperand::preg(o.cls, iv[size_t(o.cls)][size_t(o.value)].phys);
      });
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
      if (mi.pairHi.isReg() && mi.pairHi.value != mi.ops[size_t(mi.pairedOperand())].value + 1)
        throw CodegenError(fmt::format("internal: '{}' names a register pair that is not adjacent",
                                       printInstr(mi)));
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
