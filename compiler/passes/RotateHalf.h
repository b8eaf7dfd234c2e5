// The rotary embedding's half-split form rewritten as rotate-half (RotateHalf.cpp).
#pragma once

#include "compiler/hlo/HloComputation.h"

namespace tpusim::passes {

// If `concat` is concat(lo * A - hi * B, hi * A + lo * B) along the last
// dimension, lo and hi the halves of one array x, a new instruction computing
// x * concat(A, A) + concat(hi, lo) * concat(-B, B) bit for bit (added to
// `comp`, `concat` left for the caller to replace); nullptr otherwise.
hlo::HloInstruction* rewriteRotateHalf(hlo::HloComputation* comp, hlo::HloInstruction* concat);

// If `concat` repeats one unary element-wise op's result, f(x) ... f(x), a new
// f(concat(x, ..., x)): f computed once per element of the concat (added to
// `comp`); nullptr otherwise.
hlo::HloInstruction* hoistRepeatedUnary(hlo::HloComputation* comp, hlo::HloInstruction* concat);

}  // namespace tpusim::passes
