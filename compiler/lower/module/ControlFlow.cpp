#include "compiler/lower/module/ControlFlow.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/module/Names.h"

namespace tpusim::lower {

using hlo::HloComputation;
using hlo::HloInstruction;

namespace {

// Registers of the control code (ControlCode uses s1 for addresses).
constexpr int kValueReg = 2;
constexpr int kTestReg = 3;
constexpr int kImmReg = 4;

const HloComputation* calledByKey(const HloInstruction& inst, const std::string& key) {
  const HloComputation* c = inst.calledComputation(key);
  if (!c) throw CannotLower::of(inst, fmt::format("no {} computation", key));
  return c;
}

std::string opNameOf(const HloInstruction& inst) {
  return unescapeMetadata(inst.attrs().metadata.opName);
}

// The module's own code of `inst` between kernels, as a debug-map entry.
class OwnCode {
 public:
  OwnCode(ModuleLowerer& l, const HloInstruction& inst) : c_(l.control()) {
    const hlo::OpMetadata& md = inst.attrs().metadata;
    entry_ = c_.openOp(inst.name(), opNameOf(inst).empty() ? inst.name() : opNameOf(inst),
                       unescapeMetadata(md.sourceFile), uint32_t(md.sourceLine.value_or(0)));
  }
  ~OwnCode() { c_.closeOp(entry_); }

 private:
  ControlCode& c_;
  size_t entry_;
};

uint64_t scalarAddress(const HloInstruction& inst, const Leaves& value, const char* what) {
  if (value.size() != 1 || value[0] < 0)
    throw CannotLower::of(inst, fmt::format("the {} is not a scalar in HBM", what));
  return uint64_t(value[0]);
}

// The instruction a fused parameter stands for (the fusion's operand), or `inst`.
const HloInstruction* throughFusion(const HloInstruction* inst, const HloInstruction* fusion) {
  if (fusion && inst->opcode() == hlo::HloOpcode::Parameter) {
    int64_t n = inst->attrs().parameterNumber;
    if (n >= 0 && n < fusion->operandCount()) return fusion->operand(n);
  }
  return inst;
}

// `inst` itself, or for a single-computation fusion its fused root.
const HloInstruction* computeRoot(const HloInstruction* inst, const HloInstruction** fusion) {
  *fusion = nullptr;
  if (inst->opcode() != hlo::HloOpcode::Fusion) return inst;
  std::vector<HloComputation*> called = inst->calledComputations();
  if (called.size() != 1 || !called[0] || !called[0]->root()) return inst;
  *fusion = inst;
  return called[0]->root();
}

std::optional<int64_t> scalarConstant(const HloInstruction* inst) {
  if (inst->opcode() != hlo::HloOpcode::Constant || !inst->shape().isScalar() ||
      inst->shape().type != hlo::PrimitiveType::S32 || !inst->literal() ||
      inst->literal()->size() != 1)
    return std::nullopt;
  return inst->literal()->getInt(0);
}

bool isStateElement(const HloInstruction* inst, const HloComputation& comp, int64_t k) {
  return inst->opcode() == hlo::HloOpcode::GetTupleElement && inst->operandCount() == 1 &&
         inst->operand(0) == comp.parameter(0) && inst->tupleIndex() == k;
}

// The trip count of a counted loop, the form jax.lax.fori_loop and scan take:
// state element k is an s32 scalar that starts at a constant c0, the condition
// is `element k < N` (or <=) for a constant N, and the body's element k is
// `element k + 1`, each possibly inside a fusion. nullopt for anything else.
std::optional<int64_t> staticTripCount(const HloInstruction& loop, const HloComputation& cond,
                                       const HloComputation& body) {
  const HloInstruction* init = loop.operand(0);
  if (init->opcode() != hlo::HloOpcode::Tuple || !cond.root() || !body.root() ||
      body.root()->opcode() != hlo::HloOpcode::Tuple || !cond.parameter(0) || !body.parameter(0))
    return std::nullopt;
  const HloInstruction* condFusion = nullptr;
  const HloInstruction* cmp = computeRoot(cond.root(), &condFusion);
  if (cmp->opcode() != hlo::HloOpcode::Compare || cmp->operandCount() != 2 ||
      !cmp->attrs().direction)
    return std::nullopt;
  hlo::ComparisonDirection dir = *cmp->attrs().direction;
  if (dir != hlo::ComparisonDirection::LT && dir != hlo::ComparisonDirection::LE)
    return std::nullopt;
  const HloInstruction* counter = throughFusion(cmp->operand(0), condFusion);
  std::optional<int64_t> limit = scalarConstant(throughFusion(cmp->operand(1), condFusion));
  if (!limit || counter->opcode() != hlo::HloOpcode::GetTupleElement) return std::nullopt;
  int64_t k = counter->tupleIndex().value_or(-1);
  if (!isStateElement(counter, cond, k) || k >= init->operandCount() ||
      k >= body.root()->operandCount())
    return std::nullopt;
  std::optional<int64_t> start = scalarConstant(init->operand(k));
  if (!start) return std::nullopt;
  const HloInstruction* bodyFusion = nullptr;
  const HloInstruction* add = computeRoot(body.root()->operand(k), &bodyFusion);
  if (add->opcode() != hlo::HloOpcode::Add || add->operandCount() != 2) return std::nullopt;
  const HloInstruction* a = throughFusion(add->operand(0), bodyFusion);
  const HloInstruction* b = throughFusion(add->operand(1), bodyFusion);
  if (scalarConstant(a)) std::swap(a, b);
  if (!isStateElement(a, body, k) || scalarConstant(b) != 1) return std::nullopt;
  int64_t trips = *limit - *start + (dir == hlo::ComparisonDirection::LE ? 1 : 0);
  return std::max<int64_t>(trips, 0);
}

}  // namespace

void lowerWhile(ModuleLowerer& l, const HloInstruction& loop, const Leaves& init,
                const Leaves& state, uint64_t scratch, int depth) {
  const HloComputation* cond = calledByKey(loop, "condition");
  const HloComputation* body = calledByKey(loop, "body");
  ControlCode& c = l.control();
  std::string what = "%" + loop.name();
  {
    OwnCode own(l, loop);
    l.copyLeaves(init, state, loop.shape(), what + " (initial state)");
  }
  if (std::optional<int64_t> trips = staticTripCount(loop, *cond, *body)) {
    // A counted loop: a counter in SMEM instead of the condition, so the trip
    // count does not depend on data (exact in timing mode too).
    if (*trips == 0) return;
    int64_t word = c.reserveWord(what + " trip counter");
    {
      OwnCode own(l, loop);
      c.setWord(word, *trips, kValueReg);
    }
    uint32_t top = c.label();
    Leaves root = l.lowerComputation(*body, {state}, scratch, depth);
    OwnCode own(l, loop);
    l.copyLeaves(root, state, loop.shape(), what + " (loop-carried state)");
    c.patch(c.decrementAndBranchIfNonZero(word, kValueReg), top);
    return;
  }
  uint32_t head = c.label();
  Leaves pred = l.lowerComputation(*cond, {state}, scratch, depth);
  uint32_t exitBranch;
  {
    OwnCode own(l, loop);
    c.loadScalar(scalarAddress(loop, pred, "loop condition"), 1, kValueReg, what + " condition");
    exitBranch = c.branchIfZero(kValueReg);
  }
  Leaves root = l.lowerComputation(*body, {state}, scratch, depth);
  {
    OwnCode own(l, loop);
    l.copyLeaves(root, state, loop.shape(), what + " (loop-carried state)");
    c.patch(c.jump(), head);
  }
  c.patch(exitBranch, c.label());
}

void lowerConditional(ModuleLowerer& l, const HloInstruction& cond,
                      const std::vector<Leaves>& operands, const Leaves& result, uint64_t scratch,
                      int depth) {
  std::vector<const HloComputation*> branches;
  bool predicated = false;
  if (const HloComputation* t = cond.calledComputation("true_computation")) {
    predicated = true;
    branches = {t, calledByKey(cond, "false_computation")};
  } else {
    for (const auto& calls : cond.attrs().calls)
      if (calls.key == "branch_computations")
        branches.assign(calls.computations.begin(), calls.computations.end());
  }
  if (branches.empty() || operands.size() != branches.size() + 1)
    throw CannotLower::of(cond, "a conditional needs one operand per branch after the index");
  for (const HloComputation* b : branches)
    if (!b) throw CannotLower::of(cond, "a branch computation is missing");
  ControlCode& c = l.control();
  std::string what = "%" + cond.name();
  // Dispatch: one br.nz per branch but the last, which is the fall-through
  // (a pred: true runs branch 0).
  std::vector<uint32_t> toBranch(branches.size(), 0);
  {
    OwnCode own(l, cond);
    c.loadScalar(scalarAddress(cond, operands[0], "branch index"), predicated ? 1 : 4, kValueReg,
                 what + " branch index");
    if (predicated) {
      toBranch[0] = c.branchIfNonZero(kValueReg);
    } else {
      for (size_t i = 0; i + 1 < branches.size(); ++i) {
        c.compareEqualImm(kTestReg, kValueReg, int64_t(i), kImmReg);
        toBranch[i] = c.branchIfNonZero(kTestReg);
      }
    }
  }
  std::vector<uint32_t> toEnd;
  // The last branch first (fall-through), then the others at their labels.
  std::vector<size_t> order;
  order.push_back(branches.size() - 1);
  for (size_t i = 0; i + 1 < branches.size(); ++i) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = order[k];
    if (k > 0) c.patch(toBranch[i], c.label());
    Leaves root = l.lowerComputation(*branches[i], {operands[i + 1]}, scratch, depth);
    OwnCode own(l, cond);
    l.copyLeaves(root, result, cond.shape(), fmt::format("{} (branch {})", what, i));
    if (k + 1 < order.size()) toEnd.push_back(c.jump());
  }
  uint32_t end = c.label();
  for (uint32_t b : toEnd) c.patch(b, end);
}

}  // namespace tpusim::lower
