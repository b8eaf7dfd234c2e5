// The vector code of a reduction collective's combine: `vregs` vregs at VMEM
// row kOwnRow combined into those at kSlotRow (in place: slot = own op slot,
// the reference evaluator's operand order), bf16 widened to f32 and rounded
// back after the op, hand-scheduled in order with the preset's latencies.
// Shared by the grid reduce-scatter's pipelined rings and its line exchange.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "compiler/hlo/HloOpcode.h"
#include "compiler/hlo/Shape.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/Isa.h"
#include "isa/target/ChipConfig.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

// Registers the loop uses (the row registers advance, kCombineCount counts
// iterations); the callers keep nothing else in them across a combine.
constexpr int kOwnRow = 10, kSlotRow = 11, kCombineCount = 12;
// Vregs per loop iteration: 4 for bf16 (six vregs each, widened to f32),
// 8 for 32-bit types (two each). Each iteration ends with its latencies
// drained and a branch, so 4 f32 vregs took ~30 cycles (7.7 per vreg, the
// VPU the limit on v4 4x4x4's combines); 8 take ~3.4 per vreg.
inline int combineUnroll(hlo::PrimitiveType type) {
  return type == hlo::PrimitiveType::BF16 ? 4 : 8;
}

// The vector code combining `vregs` vregs at VMEM row kOwnRow into those at
// kSlotRow (in place), hand-scheduled in order with the preset's latencies.
class CombineLoop {
 public:
  CombineLoop(ControlCode& code, const target::ChipConfig& chip, hlo::PrimitiveType type,
              hlo::HloOpcode op)
      : code_(code),
        target_(kernels::codegen::TargetInfo::fromChip(chip)),
        type_(type),
        op_(op),
        unroll_(combineUnroll(type)) {}

  // Emits the combine of `vregs` vregs; own / slot rows in kOwnRow / kSlotRow
  // (`ownRow` and `slotRow`: their values, for the VMEM banks). With
  // `dstFromOwn`, the result goes to the rows kOwnRow + dstFromOwn instead of
  // the slot's (the slot is a landing slot its sender refills once this
  // combine has read it; an immediate offset, so no third row register).
  void emit(int64_t vregs, int64_t ownRow, int64_t slotRow,
            std::optional<int64_t> dstFromOwn = std::nullopt) {
    ownBank_ = ownRow;
    slotBank_ = slotRow;
    dstFromOwn_ = dstFromOwn;
    if (dstFromOwn && (*dstFromOwn < -32768 || *dstFromOwn + 8 * unroll_ > 32767))
      throw std::logic_error("combine: the result rows are out of a vst offset's reach");
    const int64_t iterations = vregs / unroll_, rest = vregs % unroll_;
    if (iterations > 0) {
      code_.emit({makeInstruction(isa::Opcode::SLi, {kCombineCount, iterations})});
      uint32_t head = code_.label();
      body(unroll_, true);
      code_.drain();
      code_.emit({makeInstruction(isa::Opcode::Loop, {kCombineCount, int64_t(head)})});
      code_.drain();
    }
    if (rest > 0) body(int(rest), false);
    // The stores are visible before a DMA reads the slot.
    for (int i = 0; i < target_.latencyOf(isa::LatencyClass::VectorStore); ++i) code_.emit({});
  }

 private:
  struct Op {
    isa::Instruction in;
    std::vector<int> reads;
    int writes = -1;
    int64_t row = -1;  // a VMEM access: its first row (8 rows, stride 1)
  };
  // The banks an access starting at `row` touches; the loop advances the rows
  // by a multiple of the bank count (else every access gets a bundle alone).
  std::vector<int64_t> banksOf(int64_t row) const {
    const int64_t banks = std::max(1, target_.vmemBanks);
    std::vector<int64_t> out;
    if ((8 * unroll_) % banks != 0) {
      for (int64_t b = 0; b < banks; ++b) out.push_back(b);
      return out;
    }
    for (int s = 0; s < isa::kSublanes; ++s) out.push_back((row + s) % banks);
    return out;
  }
  isa::Opcode aluOp() const {
    const bool i = type_ == hlo::PrimitiveType::S32;
    switch (op_) {
      case hlo::HloOpcode::Multiply:
        return i ? isa::Opcode::VMulS32 : isa::Opcode::VMulF32;
      case hlo::HloOpcode::Maximum:
        return i ? isa::Opcode::VMaxS32 : isa::Opcode::VMaxF32;
      case hlo::HloOpcode::Minimum:
        return i ? isa::Opcode::VMinS32 : isa::Opcode::VMinF32;
      default:
        return i ? isa::Opcode::VAddS32 : isa::Opcode::VAddF32;
    }
  }
  void body(int groups, bool advance) {
    // The loads of every vreg, then the ops, then the stores (the placement
    // below is in order, so per vreg each load would wait for the last
    // vreg's store: ~7 cycles per f32 vreg; grouped, ~3).
    std::vector<Op> loads, ops, stores;
    auto v = [&](isa::Opcode o, int dst, std::vector<int> srcs,
                 std::initializer_list<int64_t> extra) {
      Op x;
      std::vector<int64_t> operands{dst};
      for (int s : srcs) operands.push_back(s);
      for (int64_t e : extra) operands.push_back(e);
      x.in.op = o;
      for (size_t i = 0; i < operands.size(); ++i) x.in.operands[i] = operands[i];
      x.reads = srcs;
      x.writes = dst;
      ops.push_back(x);
    };
    for (int u = 0; u < groups; ++u) {
      const int a = (type_ == hlo::PrimitiveType::BF16 ? 6 : 2) * u, b = a + 1, alo = a + 2,
                ahi = a + 3, blo = a + 4, bhi = a + 5;
      Op la, lb;
      la.in = makeInstruction(isa::Opcode::VLd, {a, kOwnRow, int64_t(8 * u), 1, 0xFF});
      la.writes = a;
      la.row = ownBank_ + 8 * u;
      lb.in = makeInstruction(isa::Opcode::VLd, {b, kSlotRow, int64_t(8 * u), 1, 0xFF});
      lb.writes = b;
      lb.row = slotBank_ + 8 * u;
      loads.push_back(la);
      loads.push_back(lb);
      int result = a;
      if (type_ == hlo::PrimitiveType::BF16) {
        v(isa::Opcode::VUnpackB16, alo, {a}, {0});
        v(isa::Opcode::VUnpackB16, ahi, {a}, {1});
        v(isa::Opcode::VUnpackB16, blo, {b}, {0});
        v(isa::Opcode::VUnpackB16, bhi, {b}, {1});
        for (int r : {alo, ahi, blo, bhi}) v(isa::Opcode::VCvtF32Bf16, r, {r}, {});
        v(aluOp(), alo, {alo, blo}, {});
        v(aluOp(), ahi, {ahi, bhi}, {});
        v(isa::Opcode::VCvtBf16F32, alo, {alo}, {});
        v(isa::Opcode::VCvtBf16F32, ahi, {ahi}, {});
        v(isa::Opcode::VPackB16, a, {alo, ahi}, {});
      } else {
        v(aluOp(), a, {a, b}, {});
      }
      Op st;
      if (dstFromOwn_) {
        st.in = makeInstruction(isa::Opcode::VSt,
                                {result, kOwnRow, *dstFromOwn_ + int64_t(8 * u), 1, 0xFF});
        st.row = ownBank_ + *dstFromOwn_ + 8 * u;
      } else {
        st.in = makeInstruction(isa::Opcode::VSt, {result, kSlotRow, int64_t(8 * u), 1, 0xFF});
        st.row = slotBank_ + 8 * u;
      }
      st.reads = {result};
      stores.push_back(st);
    }
    ops.insert(ops.begin(), loads.begin(), loads.end());
    ops.insert(ops.end(), stores.begin(), stores.end());
    // In-order placement: each op at the first cycle (not before the
    // previous op's) where its sources are ready and its slot kind is free.
    std::map<int, int64_t> ready;
    std::map<std::pair<int64_t, int>, int> used;  // (cycle, slot kind) -> ops
    std::map<int64_t, std::vector<isa::Instruction>> bundles;
    std::map<int64_t, std::set<int64_t>> banksUsed;
    int64_t at = 0;
    for (const Op& o : ops) {
      for (int r : o.reads) at = std::max(at, ready.count(r) ? ready[r] : 0);
      if (o.writes >= 0) at = std::max(at, ready.count(o.writes) ? ready[o.writes] : 0);
      const isa::SlotKind kind = o.in.info().slot;
      const int cap = std::max(1, target_.slotsOf(kind));
      std::vector<int64_t> banks = o.row >= 0 ? banksOf(o.row) : std::vector<int64_t>{};
      auto clash = [&](int64_t c) {
        for (int64_t b : banks)
          if (banksUsed[c].count(b)) return true;
        return false;
      };
      while (used[{at, int(kind)}] >= cap || clash(at)) ++at;
      ++used[{at, int(kind)}];
      for (int64_t b : banks) banksUsed[at].insert(b);
      bundles[at].push_back(o.in);
      if (o.writes >= 0) ready[o.writes] = at + std::max(1, target_.latencyOf(o.in.info().latency));
    }
    int64_t last = bundles.empty() ? 0 : bundles.rbegin()->first;
    for (int64_t c = 0; c <= last; ++c) {
      code_.emit(bundles.count(c) ? bundles[c] : std::vector<isa::Instruction>{});
    }
    if (advance)  // after the last store has read the row registers
      code_.emit({makeInstruction(isa::Opcode::SAddI, {kOwnRow, kOwnRow, int64_t(8 * unroll_)}),
                  makeInstruction(isa::Opcode::SAddI, {kSlotRow, kSlotRow, int64_t(8 * unroll_)})});
  }

  ControlCode& code_;
  kernels::codegen::TargetInfo target_;
  int64_t ownBank_ = 0, slotBank_ = 0;
  std::optional<int64_t> dstFromOwn_;
  hlo::PrimitiveType type_;
  hlo::HloOpcode op_;
  int unroll_;
};

}  // namespace tpusim::lower
