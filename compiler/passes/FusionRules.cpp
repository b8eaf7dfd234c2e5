#include "compiler/passes/FusionRules.h"

#include <algorithm>

namespace tpusim::passes {

using hlo::HloInstruction;
using hlo::HloOpcode;

const char* fusionKindName(FusionKind k) {
  switch (k) {
    case FusionKind::Loop:
      return "kLoop";
    case FusionKind::Input:
      return "kInput";
    case FusionKind::Output:
      return "kOutput";
  }
  return "kLoop";
}

bool isMatmulHero(const HloInstruction& inst) {
  return (inst.opcode() == HloOpcode::Dot || inst.opcode() == HloOpcode::Convolution) &&
         inst.shape().isArray();
}

bool isReduceHero(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::Reduce && inst.shape().isArray() && inst.operandCount() == 2;
}

bool isOperandPrologueOp(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::Convert:
    case HloOpcode::Bitcast:
    case HloOpcode::Reshape:
    case HloOpcode::Broadcast:
    case HloOpcode::Copy:
    case HloOpcode::Transpose:
    case HloOpcode::Slice:
    case HloOpcode::Iota:
    case HloOpcode::Constant:
      return true;
    default:
      return false;
  }
}

bool isLoopFusible(const HloInstruction& inst) {
  if (!inst.shape().isArray()) return false;
  if (hlo::isElementwise(inst.opcode())) return true;
  switch (inst.opcode()) {
    case HloOpcode::Broadcast:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Transpose:
    case HloOpcode::Copy:
    case HloOpcode::Slice:
    case HloOpcode::DynamicSlice:
    case HloOpcode::Concatenate:
    case HloOpcode::Pad:
    case HloOpcode::Reverse:
    case HloOpcode::ReducePrecision:
    case HloOpcode::Iota:
      return true;
    default:
      return false;
  }
}

bool isFusibleProducer(const HloInstruction& inst) {
  if (inst.opcode() == HloOpcode::Constant)
    return inst.shape().isArray() && inst.shape().elementCount() <= 1;  // big ones stay in HBM
  return isLoopFusible(inst) || isMatmulHero(inst) || isReduceHero(inst);
}

bool isFusibleConsumer(const HloInstruction& inst) {
  return (isLoopFusible(inst) && inst.opcode() != HloOpcode::Iota) || isMatmulHero(inst) ||
         isReduceHero(inst);
}

std::string neverFusesReason(const HloInstruction& inst) {
  HloOpcode op = inst.opcode();
  if (op == HloOpcode::While || op == HloOpcode::Conditional || op == HloOpcode::Call)
    return "control flow runs its own computations";
  if (op == HloOpcode::CustomCall) return "a custom-call is an opaque kernel";
  if (hlo::isCollective(op) || op == HloOpcode::CollectiveBroadcast)
    return "a collective synchronizes with other chips";
  if (op == HloOpcode::AsyncStart || op == HloOpcode::AsyncUpdate || op == HloOpcode::AsyncDone)
    return "an async operation runs apart from the kernels";
  if (op == HloOpcode::Sort || op == HloOpcode::Gather || op == HloOpcode::Scatter ||
      op == HloOpcode::ReduceWindow || op == HloOpcode::SelectAndScatter ||
      op == HloOpcode::DynamicUpdateSlice || op == HloOpcode::Map || op == HloOpcode::Fft)
    return "not fusible by this backend (its own kernel)";
  if (op == HloOpcode::Rng || op == HloOpcode::RngBitGenerator || op == HloOpcode::Infeed ||
      op == HloOpcode::Outfeed || op == HloOpcode::Send || op == HloOpcode::Recv ||
      op == HloOpcode::SendDone || op == HloOpcode::RecvDone)
    return "has side effects";
  if (op == HloOpcode::Reduce && !isReduceHero(inst))
    return "a variadic reduce is not fusible by this backend";
  return "";
}

int64_t recomputeWeight(const HloInstruction& inst, const lower::TargetDescription& target) {
  switch (inst.opcode()) {
    case HloOpcode::Constant:
    case HloOpcode::Iota:
    case HloOpcode::Broadcast:
    case HloOpcode::Bitcast:
    case HloOpcode::Reshape:
      return 0;
    case HloOpcode::Transpose:
      return 2;
    case HloOpcode::Exp:
    case HloOpcode::Expm1:
    case HloOpcode::Log:
    case HloOpcode::Log1p:
    case HloOpcode::Logistic:
    case HloOpcode::Tanh:
    case HloOpcode::Rsqrt:
    case HloOpcode::Sqrt:
    case HloOpcode::Cbrt:
    case HloOpcode::Divide:
    case HloOpcode::Remainder:
    case HloOpcode::Power:
    case HloOpcode::Sine:
    case HloOpcode::Cosine:
    case HloOpcode::Tan:
    case HloOpcode::Atan2:
    case HloOpcode::Erf:
      return std::max<int64_t>(2, target.transcendentalInterval);
    case HloOpcode::Dot:
    case HloOpcode::Convolution:
    case HloOpcode::Reduce:
      return kNeverDuplicate;
    default:
      return 1;
  }
}

const HloInstruction* fusionHero(const hlo::HloComputation& body) {
  for (const auto& i : body.instructions())
    if (isMatmulHero(*i)) return i.get();
  if (body.root() && isReduceHero(*body.root())) return body.root();
  return nullptr;
}

FusionKind classifyFusion(const hlo::HloComputation& body) {
  const HloInstruction* hero = fusionHero(body);
  if (!hero) return FusionKind::Loop;
  return isMatmulHero(*hero) ? FusionKind::Output : FusionKind::Input;
}

}  // namespace tpusim::passes
