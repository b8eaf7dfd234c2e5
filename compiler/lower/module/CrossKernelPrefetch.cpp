// Cross-kernel prefetch in the module walk: which kernel runs right after a
// kernel, and the plan for its first blocks (kernels/codegen/Prefetch.h says
// how the two kernels carry it out).
#include <fmt/format.h>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/dma/DataMovement.h"
#include "compiler/lower/module/ModuleLowerer.h"

namespace tpusim::lower {

namespace codegen = kernels::codegen;
using hlo::HloInstruction;
using hlo::HloOpcode;

// An instruction the module walk lowers to one kernel (ModuleLowering.cpp's
// branch order: everything checked before the compute branch is excluded).
bool isKernelInstruction(const HloInstruction& inst) {
  HloOpcode opc = inst.opcode();
  return !isSpmdPrimitive(inst) && !aliasesOperandBuffer(inst) && opc != HloOpcode::While &&
         opc != HloOpcode::Conditional && opc != HloOpcode::Call && !inst.shape().isToken() &&
         isComputeInstruction(inst) && !(isDataMovement(inst) && opc != HloOpcode::Broadcast);
}

const HloInstruction* nextKernelAfter(const std::vector<HloInstruction*>& order, size_t i) {
  for (size_t j = i + 1; j < order.size(); ++j) {
    const HloInstruction& n = *order[j];
    HloOpcode opc = n.opcode();
    // What emits no code (constants: HBM data segments only).
    if (opc == HloOpcode::Parameter || opc == HloOpcode::Constant || opc == HloOpcode::Tuple ||
        opc == HloOpcode::GetTupleElement)
      continue;
    if (aliasesOperandBuffer(n)) {
      if (isSpmdPrimitive(n)) return nullptr;  // an async permute's waits
      continue;
    }
    if (opc == HloOpcode::AfterAll || n.shape().isToken()) continue;
    return isKernelInstruction(n) ? &n : nullptr;
  }
  return nullptr;
}

LoweredKernel ModuleLowerer::takeLoweredKernel(const HloInstruction& inst) {
  if (preparedFor_ == &inst) {
    preparedFor_ = nullptr;
    return std::move(prepared_);
  }
  return lowerToKernel(inst, cg_);
}

codegen::PrefetchPlan ModuleLowerer::planNextKernel(
    const HloInstruction& next, const std::vector<codegen::HbmRange>& written, bool fromTop,
    const std::function<Leaves(const HloInstruction*)>& valueOf) {
  if (preparedFor_ != &next) {
    try {
      prepared_ = lowerToKernel(next, cg_);
    } catch (const CannotLower&) {
      preparedFor_ = nullptr;
      return {};  // reported when its turn comes
    }
    preparedFor_ = &next;
  }
  const LoweredKernel& lk = prepared_;
  // Input addresses of the operands lowered so far (-1 for views not yet
  // named: never prefetched).
  std::vector<int64_t> addresses;
  for (int64_t op : lk.inputOperand) {
    int64_t at = -1;
    if (op >= 0 && op < next.operandCount()) {
      Leaves l = valueOf(next.operand(op));
      if (l.size() == 1) at = l[0];
    }
    addresses.push_back(at);
  }
  // At most half of VMEM: the kernel running meanwhile needs the rest.
  return codegen::planPrefetch(*lk.kernel, cg_, addresses, written, fromTop, cg_.vmemRows() / 2);
}

}  // namespace tpusim::lower
