// Integer expansions of ElementwiseMath.h on 32-bit words (s32 or u32 values).
// The VPU has signed compares, wrapping add / sub / low multiply, bitwise ops,
// shifts by the low 5 bits and s32 <-> f32 converts; everything else is built
// from those.
#include <cmath>
#include <cstdint>

#include "compiler/hlo/HloAttributes.h"
#include "compiler/lower/fusion/ElementwiseMath.h"
#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail::math {

namespace {

Array c(double v) { return dsl::full(1, 1, v, dsl::F32); }
Array ci(int64_t v) { return dsl::full(1, 1, double(int32_t(uint32_t(v))), dsl::S32); }

Array uge(const Array& a, const Array& b) { return biased(a) >= biased(b); }

// floor(a / b) for u32 a, b (b != 0), exactly: an f32 estimate scaled down by
// 2^-20 never exceeds the quotient and misses it by at most 2^13 + 1; the
// remainder's own estimate (same rule) leaves at most one b, subtracted last.
Array unsignedQuotient(const Array& aIn, const Array& bIn, Array* remainderOut) {
  Array a = materialized(aIn), b = materialized(bIn);
  Array rb = materialized(dsl::reciprocal(unsignedToF32(b)) * (1.0 - std::ldexp(1.0, -20)));
  Array q0 = materialized(f32ToUnsigned(unsignedToF32(a) * rb));
  Array r0 = materialized(a - q0 * b);
  Array q1 = materialized(f32ToUnsigned(unsignedToF32(r0) * rb));
  Array r1 = materialized(r0 - q1 * b);
  Array fix = materialized(uge(r1, b));
  if (remainderOut) *remainderOut = dsl::where(fix, r1 - b, r1);
  return q0 + q1 + dsl::where(fix, ci(1), ci(0));
}

}  // namespace

Array biased(const Array& a) { return a ^ ci(INT32_MIN); }

Array compareUnsigned(const Array& a, const Array& b, int direction) {
  Array x = biased(a), y = biased(b);
  switch (hlo::ComparisonDirection(direction)) {
    case hlo::ComparisonDirection::EQ:
      return a == b;
    case hlo::ComparisonDirection::NE:
      return a != b;
    case hlo::ComparisonDirection::LT:
      return x < y;
    case hlo::ComparisonDirection::LE:
      return x <= y;
    case hlo::ComparisonDirection::GT:
      return x > y;
    case hlo::ComparisonDirection::GE:
      return x >= y;
  }
  return a == b;
}

Array shift(const Array& a, const Array& amountIn, int kind) {
  // HLO shifts by the whole amount: 32 or more (or negative, as unsigned)
  // shifts every bit out; the VPU uses the low 5 bits only.
  Array amount = materialized(amountIn);
  Array out = (amount & ci(-32)) != ci(0);
  if (kind == 0) return dsl::where(out, ci(0), dsl::shift_left(a, amount));
  if (kind == 1) return dsl::where(out, ci(0), dsl::shift_right_logical(a, amount));
  Array x = materialized(a);
  return dsl::where(out, dsl::shift_right_arithmetic(x, ci(31)),
                    dsl::shift_right_arithmetic(x, amount));
}

Array popcount(const Array& aIn) {
  Array a = materialized(aIn);
  Array x = materialized(a - (dsl::shift_right_logical(a, ci(1)) & ci(0x55555555)));
  x = materialized((x & ci(0x33333333)) + (dsl::shift_right_logical(x, ci(2)) & ci(0x33333333)));
  x = (x + dsl::shift_right_logical(x, ci(4))) & ci(0x0f0f0f0f);
  return dsl::shift_right_logical(x * ci(0x01010101), ci(24));
}

Array countLeadingZeros(const Array& aIn) {
  // The exponent of the value as f32; keeping only its top 8 bits (when it
  // has more than 24) makes the convert exact, so it cannot round up.
  Array a = materialized(aIn);
  Array v = dsl::where(uge(a, ci(1 << 24)), a & ci(0xff000000), a);
  Array e = dsl::shift_right_logical(dsl::bitcast(unsignedToF32(v), dsl::S32), ci(23));
  return dsl::where(a == ci(0), ci(32), ci(158) - e);
}

Array integerPower(const Array& baseIn, const Array& expIn, bool isUnsigned) {
  // Square and multiply over the 32 exponent bits (wrapping, as XLA).
  Array base = materialized(baseIn), e = materialized(expIn);
  Array result = ci(1), b = base;
  for (int bit = 0; bit < 32; ++bit) {
    Array set = (e & ci(int64_t(1) << bit)) != ci(0);
    result = materialized(dsl::where(set, result * b, result));
    if (bit < 31) b = materialized(b * b);
  }
  if (isUnsigned) return dsl::where(base == ci(1), ci(1), result);
  Array r = dsl::where(e < ci(0), ci(0), result);
  return dsl::where((base == ci(1)) | (e == ci(0)), ci(1), r);
}

Array integerDivide(const Array& aIn, const Array& bIn, bool isUnsigned) {
  Array a = materialized(aIn), b = materialized(bIn);
  if (isUnsigned) return dsl::where(b == ci(0), ci(-1), unsignedQuotient(a, b, nullptr));
  // Magnitudes as u32 (|INT_MIN| = 2^31 is right there), the sign after:
  // INT_MIN / -1 wraps to INT_MIN as XLA defines.
  Array q = unsignedQuotient(dsl::abs(a), dsl::abs(b), nullptr);
  Array neg = (a ^ b) < ci(0);
  return dsl::where(b == ci(0), ci(-1), dsl::where(neg, -q, q));
}

Array integerRemainder(const Array& aIn, const Array& bIn, bool isUnsigned) {
  Array a = materialized(aIn), b = materialized(bIn);
  Array r;
  if (isUnsigned) {
    unsignedQuotient(a, b, &r);
    return dsl::where(b == ci(0), a, r);
  }
  unsignedQuotient(dsl::abs(a), dsl::abs(b), &r);
  return dsl::where(b == ci(0), a, dsl::where(a < ci(0), -r, r));
}

Array unsignedToF32(const Array& aIn) {
  // Both halves convert exactly; the one add rounds to nearest even.
  Array a = materialized(aIn);
  Array hi = dsl::shift_right_logical(a, ci(16)).astype(dsl::F32);
  Array lo = (a & ci(0xffff)).astype(dsl::F32);
  return hi * 65536.0 + lo;
}

Array f32ToUnsigned(const Array& xIn) {
  // From 2^31 on, convert x - 2^31 (exact) and set the top bit; saturating
  // converts give 0 below zero and all ones from 2^32; NaN converts to 0.
  Array x = materialized(xIn);
  Array high = (x - 2147483648.0).astype(dsl::S32) ^ ci(INT32_MIN);
  Array low = dsl::maximum(x, c(0)).astype(dsl::S32);
  return dsl::where(x >= c(2147483648.0), high, low);
}

}  // namespace tpusim::lower::detail::math
