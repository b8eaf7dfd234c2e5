// Small helpers shared by the passes.
#pragma once

#include <functional>
#include <optional>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

// If `inst` is a constant whose elements all equal one value, or a broadcast
// of such a constant, that value (as double); nullopt otherwise.
std::optional<double> splatValue(const hlo::HloInstruction* inst);

// Adds a new instruction to `comp` named uniquely in the module after `base`.
hlo::HloInstruction* addNew(hlo::HloComputation* comp, hlo::HloOpcode op, const std::string& base,
                            hlo::Shape shape, std::vector<hlo::HloInstruction*> operands);

// Calls `rewrite(comp, inst)` on every instruction with opcode `op` in every computation of
// `module`. The computations and each one's matches are collected before the calls, so a
// rewrite may add instructions and computations and remove what it replaced. True if any
// call returned true.
bool rewriteEach(hlo::HloModule& module, hlo::HloOpcode op,
                 const std::function<bool(hlo::HloComputation*, hlo::HloInstruction*)>& rewrite);

// Is `target` among the transitive operands of `from` (not `from` itself)?
bool reaches(const hlo::HloInstruction* from, const hlo::HloInstruction* target);

// Rewrites the module's entry_computation_layout header (if it has one) to the
// entry's current parameter and root shapes; true if the text changed.
bool rewriteEntryComputationLayout(hlo::HloModule& module);

// Common-subexpression elimination of one computation (the `cse` pass's rule,
// Cse.cpp); true if it merged anything.
bool cseComputation(hlo::HloComputation& comp);
// The same over the body of every fusion: a producer copied into several
// members of one fusion (or the members of fusions merged by
// multi-output-fusion) would otherwise be computed once per copy in the
// kernel (the SwiGLU backward computed its sigmoid three times).
bool cseFusedComputations(hlo::HloModule& module);

}  // namespace tpusim::passes
