// Element type conversion with XLA's semantics (the `convert` op):
//   float -> int: truncate toward zero, NaN -> 0, out of range saturates;
//   int -> int: wraps (two's complement truncation or extension);
//   anything -> pred: value != 0 (NaN -> true); pred -> anything: 0 or 1;
//   -> bf16 / f16: via f32, rounded to nearest even (f64 -> f32 -> bf16 as XLA does);
//   int -> float: the C++ conversion (round to nearest even).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// Float to integer, saturating, NaN -> 0.
template <typename I, typename F>
I saturatingFloatToInt(F x) {
  static_assert(std::is_integral_v<I> && std::is_floating_point_v<F>);
  if (std::isnan(x)) return 0;
  // 2^digits is the first value above the type's maximum (exact in any float type).
  const F hi = std::ldexp(F(1), std::numeric_limits<I>::digits);
  if (x >= hi) return std::numeric_limits<I>::max();
  if constexpr (std::is_signed_v<I>) {
    if (x < -hi) return std::numeric_limits<I>::min();
  } else {
    if (x <= F(-1)) return 0;
  }
  return static_cast<I>(x);
}

// Converts every element of `in` to `to`, returning a new literal of the same dims.
Literal convertLiteral(const Literal& in, ElemType to);

// Reinterprets the bits of `in` as `to` with the given dims (bitcast-convert).
// Throws EvalError if the byte sizes differ.
Literal bitcastLiteral(const Literal& in, ElemType to, std::vector<int64_t> dims);

}  // namespace tpusim::hlo::eval
