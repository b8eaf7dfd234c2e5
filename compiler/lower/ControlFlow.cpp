#include "compiler/lower/ControlFlow.h"

#include <fmt/format.h>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/ModuleLoweringNames.h"

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
