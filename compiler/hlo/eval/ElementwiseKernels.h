// Internal to the evaluator: the typed loops behind Elementwise.h.
#pragma once

#include <cstdint>

#include "compiler/hlo/eval/Elementwise.h"

namespace tpusim::hlo::eval::detail {

// F is float or double. Return false if the op does not apply to floats.
template <typename F>
bool floatUnary(UnaryOp op, const F* a, F* out, int64_t n);
template <typename F>
bool floatBinary(BinaryOp op, const F* a, const F* b, F* out, int64_t n);

// Integer and pred literals (pred for not/and/or/xor/max/min).
Literal intUnary(UnaryOp op, const Literal& a);
Literal intBinary(BinaryOp op, const Literal& a, const Literal& b);

}  // namespace tpusim::hlo::eval::detail
