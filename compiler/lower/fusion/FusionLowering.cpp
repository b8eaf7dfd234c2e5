// lowerToKernel: checks the conventions (FusionLowering.h), builds the compute
// graph of the instruction and hands it to the emitter of its kind.
#include "compiler/lower/fusion/FusionLowering.h"

#include <fmt/format.h>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;

bool isComputeInstruction(const HloInstruction& inst) {
  HloOpcode op = inst.opcode();
  if (op == HloOpcode::Fusion || detail::isLibraryCall(inst)) return true;
  if (!inst.shape().isArray()) return false;
  if (hlo::isElementwise(op)) return true;
  switch (op) {
    case HloOpcode::Broadcast:
    case HloOpcode::Iota:
    case HloOpcode::Reduce:
    case HloOpcode::Dot:
      return true;
    default:
      return false;
  }
}

namespace {

bool defaultLayout(const hlo::Shape& s) {
  if (!s.layout) return true;
  const auto& m2m = s.layout->minorToMajor;
  for (size_t i = 0; i < m2m.size(); ++i)
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  return true;
}

void checkLayout(const detail::ComputeGraph& g, const HloInstruction& at, const hlo::Shape& s,
                 const char* what) {
  if (s.isTuple()) {
    for (const hlo::Shape& e : s.tupleShapes) checkLayout(g, at, e, what);
    return;
  }
  if (!defaultLayout(s))
    g.fail(at, fmt::format("{} {} has a non-default layout; kernels read dense row-major arrays",
                           what, s.toString()));
}

}  // namespace

LoweredKernel lowerToKernel(const HloInstruction& inst,
                            const kernels::codegen::TargetInfo& target) {
  detail::ComputeGraph g;
  g.inst = &inst;
  g.root = &inst;
  if (!isComputeInstruction(inst))
    g.fail(inst,
           "not a compute instruction (data movement and control flow are lowered by the "
           "module compiler)");
  if (detail::isLibraryCall(inst)) {
    checkLayout(g, inst, inst.shape(), "the result");
    for (int64_t k = 0; k < inst.operandCount(); ++k)
      checkLayout(g, inst, inst.operand(k)->shape(), "an operand");
    return detail::lowerLibraryCall(g);
  }
  if (!inst.shape().isArray())
    g.fail(inst, fmt::format("the result {} is not an array (multi-output fusions are not lowered)",
                             inst.shape().toString(false)));
  checkLayout(g, inst, inst.shape(), "the result");
  for (int64_t k = 0; k < inst.operandCount(); ++k)
    checkLayout(g, inst, inst.operand(k)->shape(), "an operand");
  if (inst.opcode() == HloOpcode::Fusion) {
    const hlo::HloComputation* body = inst.calledComputation("calls");
    if (!body || !body->root()) g.fail(inst, "a fusion without a fused computation");
    g.root = body->root();
    for (const auto& i : body->instructions()) {
      if (i->opcode() != HloOpcode::Parameter) continue;
      int64_t n = i->attrs().parameterNumber;
      if (n < 0 || n >= inst.operandCount()) g.fail(*i, "parameter number out of range");
      checkLayout(g, *i, i->shape(), "the parameter");
      g.leafOperand[i.get()] = n;
    }
  } else {
    for (int64_t k = 0; k < inst.operandCount(); ++k) g.leafOperand.emplace(inst.operand(k), k);
  }
  TilingTarget t = TilingTarget::from(target);
  if (detail::hasDot(g)) return detail::lowerDot(g, t);
  if (g.root->opcode() == HloOpcode::Reduce && !g.isLeaf(g.root)) return detail::lowerReduce(g, t);
  return detail::lowerLoop(g, t);
}

}  // namespace tpusim::lower
