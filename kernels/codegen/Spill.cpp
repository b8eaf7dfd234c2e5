#include "kernels/codegen/Spill.h"

#include <fmt/format.h>

#include "isa/Rules.h"
#include "kernels/codegen/RegAlloc.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }

// Memory-ordering regions of spill slots: far above the lowering's, one per slot.
constexpr int kSpillRegionBase = 1 << 24;

bool access(const MInstr& mi, int k, bool* reads, bool* writes) {
  isa::Access a = isa::operandInfo(mi.info().operands[k]).access;
  *reads = a == isa::Access::Read || a == isa::Access::ReadWrite;
  *writes = a == isa::Access::Write || a == isa::Access::ReadWrite;
  return *reads || *writes;
}

}  // namespace

void markUnspillable(MFunction& fn) {
  for (const MBlock& b : fn.blocks)
    for (const MInstr& mi : b.instrs) {
      if (!isa::isBranch(mi.op)) continue;
      for (int k = 0; k < mi.info().numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        bool r, w;
        if (o.kind == MOperand::Kind::VirtReg && access(mi, k, &r, &w) && w)
          fn.unspillable.insert({int(o.cls), int(o.value)});
      }
    }
}

int spillRegister(MFunction& fn, RegClass cls, int vreg, MemoryPlan& mem) {
  if (cls == RegClass::Mask) throw CodegenError("internal: mask registers are not spilled");
  // The halves of an MXU register pair stay in registers (the allocator never
  // proposes them): a reload could not be placed next to its partner.
  for (const MBlock& b : fn.blocks)
    for (const MInstr& mi : b.instrs)
      if (mi.pairHi.isReg() && cls == RegClass::Vector &&
          (mi.pairHi.value == vreg || mi.ops[size_t(mi.pairedOperand())].value == vreg))
        throw CodegenError(fmt::format("internal: spilling %v{}, half of a register pair", vreg));
  const bool vec = cls == RegClass::Vector;
  const int64_t slot =
      vec ? mem.vmem(fmt::format("spill slot of vector register %v{}", vreg), {8, 128})
          : mem.smemWords(fmt::format("spill slot of scalar register %s{}", vreg), 1);
  const int region = kSpillRegionBase + int(slot);
  auto temp = [&](RegClass c) {
    MOperand r = fn.newReg(c);
    fn.unspillable.insert({int(c), int(r.value)});
    return r;
  };
  auto memOp = [&](Opcode op, MOperand value, int debug, bool write) {
    MOperand base = temp(RegClass::Scalar);
    MInstr li = makeInstr(Opcode::SLi, {base, I(slot)});
    MInstr m = vec ? makeInstr(op, {value, base, I(0), I(1), I(0xFF)})
                   : makeInstr(op, {value, base, I(0)});
    m.mem = vec ? MemAccess{MemAccess::Space::Vmem, region, write, slot, 8}
                : MemAccess{MemAccess::Space::Smem, region, write, -1, 0};
    li.debug = m.debug = debug;
    return std::pair{li, m};
  };
  int inserted = 0;
  for (MBlock& b : fn.blocks) {
    std::vector<MInstr> out;
    out.reserve(b.instrs.size());
    for (MInstr mi : b.instrs) {
      bool reads = false, writes = false;
      for (int k = 0; k < mi.info().numOperands; ++k) {
        const MOperand& o = mi.ops[k];
        bool r, w;
        if (o.kind == MOperand::Kind::VirtReg && o.cls == cls && o.value == vreg &&
            access(mi, k, &r, &w)) {
          reads |= r;
          writes |= w;
        }
      }
      if (!reads && !writes) {
        out.push_back(mi);
        continue;
      }
      MOperand t = temp(cls);
      for (int k = 0; k < mi.info().numOperands; ++k) {
        MOperand& o = mi.ops[k];
        if (o.kind == MOperand::Kind::VirtReg && o.cls == cls && o.value == vreg) o = t;
      }
      if (reads) {
        auto [li, ld] = memOp(vec ? Opcode::VLd : Opcode::SLd, t, mi.debug, false);
        out.push_back(li);
        out.push_back(ld);
        ++inserted;
      }
      out.push_back(mi);
      if (writes) {
        if (isa::isBranch(mi.op))
          throw CodegenError("internal: spilling a register a branch writes");
        auto [li, st] = memOp(vec ? Opcode::VSt : Opcode::SSt, t, mi.debug, true);
        out.push_back(li);
        out.push_back(st);
        ++inserted;
      }
    }
    // A branch stays the block's last instruction (loads go before it).
    b.instrs = std::move(out);
  }
  return inserted;
}

}  // namespace tpusim::kernels::codegen
