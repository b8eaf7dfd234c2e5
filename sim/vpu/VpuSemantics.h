// Element-wise semantics of every vector ALU opcode (slot "valu" in
// isa/Opcodes.def), bit-exact as the table documents them. No timing here:
// see VpuTiming.h. A vector ALU opcode without an entry in the switch in
// VpuSemantics.cpp makes executeVectorAlu() return false, which the
// "every VectorAlu opcode has semantics" unit test catches.
#pragma once

#include <cstdint>

#include "isa/Isa.h"
#include "sim/common/Vreg.h"
#include "sim/vpu/MaskData.h"

namespace tpusim::sim {

// The operands of one vector ALU op, in the order the table lists them:
// the first and second vector sources (a, b), the first and second mask
// sources (ma, mb), the scalar source and the immediate (Imm32 or Uimm8).
struct VpuInputs {
  const VregData* a = nullptr;
  const VregData* b = nullptr;
  const MaskData* ma = nullptr;
  const MaskData* mb = nullptr;
  uint32_t scalar = 0;
  uint32_t imm = 0;
};

// True if `op` writes a mask register (compares and mask logic) rather than a vreg.
bool vectorAluWritesMask(isa::Opcode op);

// Computes `op` into `vd` (vreg results) or `md` (mask results). Returns false
// if `op` is not a vector ALU opcode or has no semantics here.
bool executeVectorAlu(isa::Opcode op, const VpuInputs& in, VregData& vd, MaskData& md);

}  // namespace tpusim::sim
