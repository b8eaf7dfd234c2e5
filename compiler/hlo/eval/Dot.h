// dot (general): batch and contracting dimensions. The result's dims are the
// batch dims, then lhs free dims, then rhs free dims (XLA's order).
// Numerics: float operands are widened to f32 (f64 if either operand or the
// result is f64), products are accumulated in that type in increasing
// contraction order starting from zero, and the sum is rounded once to the
// result type (bf16 inputs, f32 accumulation, as the MXU does). Integer dots
// convert operands to the result type and accumulate with wraparound.
// `bf16Passes` models the MXU for f32 x f32 dots (compiler/hlo/DotPrecision.h):
// 0 computes in f32 (exact, the default), 1 rounds both operands to bf16 first
// (DEFAULT precision on TPU), 3 sums the three bf16_3x passes (HIGH); 6 (HIGHEST,
// about f32 accuracy) computes in f32.
#pragma once

#include <vector>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

struct DotDims {
  std::vector<int64_t> lhsBatch, lhsContracting, rhsBatch, rhsContracting;
};

Literal dotLit(const Literal& lhs, const Literal& rhs, const DotDims& dims, ElemType resultType,
               int bf16Passes = 0);

}  // namespace tpusim::hlo::eval
