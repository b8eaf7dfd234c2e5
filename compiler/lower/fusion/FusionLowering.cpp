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

bool is64BitInteger(hlo::PrimitiveType t) {
  return t == hlo::PrimitiveType::S64 || t == hlo::PrimitiveType::U64;
}

// 64-bit integers reach a kernel only where int64-to-pairs has no rewrite into
// 32-bit words: name the op and the type rather than a bare type error.
void reject64BitArithmetic(const detail::ComputeGraph& g, const HloInstruction& inst) {
  auto check = [&](const HloInstruction& i) {
    if (i.opcode() == HloOpcode::Parameter) return;
    hlo::PrimitiveType t = hlo::PrimitiveType::Invalid;
    if (i.shape().isArray() && is64BitInteger(i.shape().type)) t = i.shape().type;
    for (const HloInstruction* op : i.operands())
      if (op->shape().isArray() && is64BitInteger(op->shape().type)) t = op->shape().type;
    if (t == hlo::PrimitiveType::Invalid) return;
    g.fail(i, fmt::format(
                  "{} on {} is not lowered: int64-to-pairs emulates 64-bit add, "
                  "subtract, multiply, divide, remainder, power, negate, abs, sign, popcnt, "
                  "count-leading-zeros, bitwise ops, shifts, compares, "
                  "min / max, select, broadcast, reshape, iota, dot, reductions by add / max / "
                  "min (up to 16843009 elements per sum) and converts with 32-bit words, not "
                  "this op",
                  hlo::opcodeName(i.opcode()), hlo::primitiveTypeName(t)));
  };
  if (inst.opcode() != HloOpcode::Fusion) return check(inst);
  if (const hlo::HloComputation* body = inst.calledComputation("calls"))
    for (const auto& i : body->instructions()) check(*i);
}

}  // namespace

LoweredKernel lowerToKernel(const HloInstruction& inst, const kernels::codegen::TargetInfo& target,
                            bool firstBlocksPrefetched) {
  detail::ComputeGraph g;
  g.inst = &inst;
  g.root = &inst;
  if (!isComputeInstruction(inst))
    g.fail(inst,
           "not a compute instruction (data movement and control flow are lowered by the "
           "module compiler)");
  if (!detail::isLibraryCall(inst)) reject64BitArithmetic(g, inst);
  if (detail::isLibraryCall(inst)) {
    checkLayout(g, inst, inst.shape(), "the result");
    for (int64_t k = 0; k < inst.operandCount(); ++k)
      checkLayout(g, inst, inst.operand(k)->shape(), "an operand");
    return detail::lowerLibraryCall(g, target);
  }
  const hlo::HloComputation* fused =
      inst.opcode() == HloOpcode::Fusion ? inst.calledComputation("calls") : nullptr;
  const bool multiOutput = fused && fused->root() && fused->root()->opcode() == HloOpcode::Tuple &&
                           inst.shape().isTuple();
  if (!inst.shape().isArray() && !multiOutput)
    g.fail(inst, fmt::format("the result {} is not an array", inst.shape().toString(false)));
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
  t.firstBlocksPrefetched = firstBlocksPrefetched;
  if (multiOutput) {
    // One loop computing every element of the root tuple (FusionLowering.h).
    for (const HloInstruction* e : g.root->operands())
      if (!e->shape().isArray())
        g.fail(*g.root, "a multi-output fusion's outputs must be arrays (no nested tuples)");
    LoweredKernel lk;
    // A dot with several outputs: its epilogue's results and the dot results
    // other kernels read (MultiOutputFusion.h, "dot epilogues").
    if (detail::hasDot(g)) {
      lk = detail::lowerDot(g, t);
      lk.outputIndex.clear();
      for (int64_t k = 0; k < g.root->operandCount(); ++k) lk.outputIndex.push_back({k});
      return lk;
    }
    bool anyReduce = false;
    for (const HloInstruction* e : g.root->operands())
      anyReduce |= e->opcode() == HloOpcode::Reduce && !g.isLeaf(e);
    lk = anyReduce ? detail::lowerReduce(g, t) : detail::lowerLoop(g, t);
    lk.outputIndex.clear();
    for (int64_t k = 0; k < g.root->operandCount(); ++k) lk.outputIndex.push_back({k});
    return lk;
  }
  if (detail::hasDot(g)) return detail::lowerDot(g, t);
  if (g.root->opcode() == HloOpcode::Reduce && !g.isLeaf(g.root)) return detail::lowerReduce(g, t);
  return detail::lowerLoop(g, t);
}

}  // namespace tpusim::lower
