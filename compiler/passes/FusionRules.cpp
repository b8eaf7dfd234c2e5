#include "compiler/passes/FusionRules.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

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

bool isUnitDimView(const HloInstruction& inst) {
  HloOpcode op = inst.opcode();
  if (op != HloOpcode::Reshape && op != HloOpcode::Bitcast && op != HloOpcode::Transpose)
    return false;
  if (inst.operandCount() != 1 || !inst.shape().isArray() || !inst.operand(0)->shape().isArray())
    return false;
  const hlo::Shape& from = inst.operand(0)->shape();
  const hlo::Shape& to = inst.shape();
  std::vector<int64_t> fromDims, toDims, src;
  for (int64_t d : from.dims)
    if (d != 1) fromDims.push_back(d);
  for (int64_t i = 0; i < to.rank(); ++i) {
    if (to.dims[static_cast<size_t>(i)] == 1) continue;
    toDims.push_back(to.dims[static_cast<size_t>(i)]);
    // The operand dim each non-unit result dim comes from (transposes).
    if (op == HloOpcode::Transpose) src.push_back(inst.dimensions().at(static_cast<size_t>(i)));
  }
  return fromDims == toDims && std::is_sorted(src.begin(), src.end());
}

bool isDotRhsTranspose(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Transpose || inst.userCount() == 0) return false;
  const std::vector<int64_t>& perm = inst.dimensions();
  for (const HloInstruction* u : inst.users()) {
    if (u->opcode() != HloOpcode::Dot || u->operandCount() != 2 || u->operand(0) == &inst ||
        u->operand(1) != &inst)
      return false;
    const hlo::DotDimensionNumbers& d = u->attrs().dot;
    auto has = [](const std::vector<int64_t>& v, int64_t x) {
      return std::find(v.begin(), v.end(), x) != v.end();
    };
    // The role of each dim of the transpose's operand, and the batch and
    // contracting dims in the order the dot pairs them with the LHS's.
    std::vector<char> roles(perm.size(), 'F');
    std::vector<int64_t> batch, contract;
    for (int64_t rd : d.rhsBatch) batch.push_back(perm.at(static_cast<size_t>(rd)));
    for (int64_t rd : d.rhsContracting) contract.push_back(perm.at(static_cast<size_t>(rd)));
    for (size_t i = 0; i < perm.size(); ++i) {
      if (has(d.rhsBatch, static_cast<int64_t>(i))) roles[static_cast<size_t>(perm[i])] = 'B';
      if (has(d.rhsContracting, static_cast<int64_t>(i))) roles[static_cast<size_t>(perm[i])] = 'K';
    }
    // The operand must be [batch, free, contracting] with the pairing kept.
    const std::string order = "BFK";
    size_t p = 0;
    for (char c : roles) {
      while (p < order.size() && order[p] != c) ++p;
      if (p == order.size()) return false;
    }
    if (!std::is_sorted(d.rhsBatch.begin(), d.rhsBatch.end()) ||
        !std::is_sorted(d.rhsContracting.begin(), d.rhsContracting.end()) ||
        !std::is_sorted(batch.begin(), batch.end()) ||
        !std::is_sorted(contract.begin(), contract.end()))
      return false;
  }
  return true;
}

bool isMajorDimsTranspose(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Transpose || inst.operandCount() != 1 ||
      !inst.shape().isArray() || !inst.operand(0)->shape().isArray() || isUnitDimView(inst))
    return false;
  auto lastNonUnit = [](const hlo::Shape& s) {
    int64_t last = -1;
    for (int64_t j = 0; j < s.rank(); ++j)
      if (s.dims[static_cast<size_t>(j)] != 1) last = j;
    return last;
  };
  int64_t from = lastNonUnit(inst.operand(0)->shape()), to = lastNonUnit(inst.shape());
  return from >= 0 && to >= 0 && inst.dimensions().at(static_cast<size_t>(to)) == from;
}

namespace {
constexpr int64_t kLaneTile = 128;  // lanes of a vreg: what a lane rotation can move within
}  // namespace

bool isLaneSlice(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Slice || inst.operandCount() != 1 || !inst.shape().isArray() ||
      !inst.operand(0)->shape().isArray() || !inst.attrs().slice)
    return false;
  const hlo::Shape& in = inst.operand(0)->shape();
  const auto& dims = *inst.attrs().slice;
  int64_t rank = in.rank();
  if (rank == 0 || static_cast<int64_t>(dims.size()) != rank) return false;
  for (int64_t d = 0; d < rank; ++d) {
    const hlo::SliceDim& s = dims[static_cast<size_t>(d)];
    if (s.stride != 1) return false;
    if (d + 1 < rank && (s.start != 0 || s.limit != in.dims[static_cast<size_t>(d)])) return false;
  }
  int64_t width = inst.shape().dims.back();
  return in.dims.back() <= kLaneTile && width >= 2 && width < in.dims.back();
}

bool isLaneConcatenate(const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Concatenate || !inst.shape().isArray() ||
      inst.shape().rank() == 0 || inst.dimensions().size() != 1 || inst.operandCount() < 2)
    return false;
  int64_t last = inst.shape().rank() - 1;
  return inst.dimensions()[0] == last && inst.shape().dims.back() <= kLaneTile &&
         inst.shape().type != hlo::PrimitiveType::Pred;
}

bool isLaneShuffle(const HloInstruction& inst) {
  return isLaneSlice(inst) || isLaneConcatenate(inst);
}

bool isDotLaneSplit(const HloInstruction& inst) {
  if ((inst.opcode() != HloOpcode::Reshape && inst.opcode() != HloOpcode::Bitcast) ||
      inst.operandCount() != 1 || inst.operand(0)->opcode() != HloOpcode::Dot ||
      !inst.shape().isArray() || !inst.operand(0)->shape().isArray())
    return false;
  const std::vector<int64_t>& from = inst.operand(0)->shape().dims;
  const std::vector<int64_t>& to = inst.shape().dims;
  if (from.empty() || to.size() != from.size() + 1 || to.back() != kLaneTile ||
      to[to.size() - 2] < 2 || to[to.size() - 2] * kLaneTile != from.back())
    return false;
  return std::equal(from.begin(), from.end() - 1, to.begin());
}

bool isOperandPrologueOp(const HloInstruction& inst) {
  switch (inst.opcode()) {
    case HloOpcode::Convert:
    case HloOpcode::Broadcast:
    case HloOpcode::Iota:
    case HloOpcode::Constant:
      return true;
    case HloOpcode::Bitcast:
    case HloOpcode::Reshape:
      return isUnitDimView(inst);
    case HloOpcode::Transpose:
      return isUnitDimView(inst) || isDotRhsTranspose(inst) || isMajorDimsTranspose(inst);
    default:
      return false;
  }
}

bool isLoopFusible(const HloInstruction& inst) {
  if (!inst.shape().isArray()) return false;
  if (hlo::isElementwise(inst.opcode())) return true;
  switch (inst.opcode()) {
    case HloOpcode::Broadcast: {
      const std::vector<int64_t>& dims = inst.dimensions();
      return std::is_sorted(dims.begin(), dims.end());
    }
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
      return isUnitDimView(inst);
    case HloOpcode::Transpose:
      return isUnitDimView(inst) || isMajorDimsTranspose(inst);
    case HloOpcode::Iota:
      return true;
    case HloOpcode::Slice:
    case HloOpcode::Concatenate:
      return isLaneShuffle(inst);
    default:
      return false;
  }
}

bool isFusibleProducer(const HloInstruction& inst) {
  if (inst.opcode() == HloOpcode::Constant)
    return inst.shape().isArray() && inst.shape().elementCount() <= 1;  // big ones stay in HBM
  return isLoopFusible(inst) || isMatmulHero(inst) || isReduceHero(inst) ||
         isDotRhsTranspose(inst) || isMajorDimsTranspose(inst) || isDotLaneSplit(inst);
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

std::vector<hlo::HloComputation*> fusionTargets(const hlo::HloModule& module) {
  std::vector<hlo::HloComputation*> out;
  std::set<const hlo::HloComputation*> seen;
  std::vector<hlo::HloComputation*> stack;
  if (module.entry()) stack.push_back(module.entry());
  while (!stack.empty()) {
    hlo::HloComputation* c = stack.back();
    stack.pop_back();
    if (!seen.insert(c).second) continue;
    out.push_back(c);
    for (const auto& i : c->instructions()) {
      HloOpcode op = i->opcode();
      if (op == HloOpcode::While || op == HloOpcode::Conditional || op == HloOpcode::Call)
        for (hlo::HloComputation* callee : i->calledComputations())
          if (callee) stack.push_back(callee);
    }
  }
  return out;
}

}  // namespace tpusim::passes
