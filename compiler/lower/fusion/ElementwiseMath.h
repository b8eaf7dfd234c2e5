// Element-wise HLO ops the VPU has no instruction for, as sequences of the
// ones it has (kernel-DSL array expressions). Float expansions compute in f32;
// integer ones on 32-bit words, where `isUnsigned` selects u32 semantics.
// Each follows XLA's definition of the op (the reference evaluator's).
#pragma once

#include "kernels/dsl/Array.h"

namespace tpusim::lower::detail::math {

namespace dsl = kernels::dsl;
using dsl::Array;

// Float (f32 in, f32 out).
Array floorOrCeil(const Array& x, bool ceil);
Array roundNearestEven(const Array& x);
Array roundNearestAfz(const Array& x);
Array sinOrCos(const Array& x, bool cosine);
Array tan(const Array& x);
Array power(const Array& x, const Array& y);
Array remainder(const Array& x, const Array& y);  // fmod: the sign of x
Array atan2(const Array& y, const Array& x);
Array erf(const Array& x);
Array cbrt(const Array& x);

// 32-bit integers (s32 arrays holding s32 or u32 values).
Array biased(const Array& a);  // a ^ 0x80000000: unsigned order as signed order
Array compareUnsigned(const Array& a, const Array& b, int direction);  // hlo::ComparisonDirection
Array shift(const Array& a, const Array& amount, int kind);  // 0 left, 1 logical, 2 arithmetic
Array popcount(const Array& a);
Array countLeadingZeros(const Array& a);
Array integerPower(const Array& base, const Array& exponent, bool isUnsigned);
// XLA's integer division and remainder: x / 0 = -1 (all ones), x % 0 = x,
// INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0; rounding toward zero.
Array integerDivide(const Array& a, const Array& b, bool isUnsigned);
Array integerRemainder(const Array& a, const Array& b, bool isUnsigned);
// u32 <-> f32 (the VPU converts s32 only).
Array unsignedToF32(const Array& a);
Array f32ToUnsigned(const Array& x);  // saturating, NaN -> 0

}  // namespace tpusim::lower::detail::math
