// Float expansions of ElementwiseMath.h. DSL arrays are expression trees, so a
// value read several times is materialized (computed once into VMEM) first.
#include "compiler/lower/fusion/ElementwiseMath.h"

#include <cmath>

#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail::math {

namespace {

Array c(double v) { return dsl::full(1, 1, v, dsl::F32); }
Array ci(int64_t v) { return dsl::full(1, 1, double(v), dsl::S32); }
Array bits(const Array& f) { return dsl::bitcast(f, dsl::S32); }
Array signBit(const Array& x) { return bits(x) & ci(INT32_MIN); }
Array negative(const Array& x) { return signBit(x) != ci(0); }  // true for -0 and -NaN too
// |mag| with the sign of `sign` (mag's sign bit must be clear).
Array copySign(const Array& mag, const Array& sign) {
  return dsl::bitcast(bits(mag) | signBit(sign), dsl::F32);
}
Array isInf(const Array& x) { return dsl::abs(x) == c(INFINITY); }
Array isNan(const Array& x) { return x != x; }
Array notMask(const Array& m) { return dsl::where(m, ci(1), ci(0)) == ci(0); }

// 2^23: every f32 of at least this magnitude is an integer.
constexpr double kIntegral = 8388608.0;

}  // namespace

Array floorOrCeil(const Array& xIn, bool up) {
  // The integer convert truncates toward zero; large values may not fit s32.
  Array x = materialized(xIn);
  Array t = materialized(x.astype(dsl::S32).astype(dsl::F32));
  Array r = up ? t + dsl::where(t < x, c(1), c(0)) : t - dsl::where(t > x, c(1), c(0));
  return dsl::where(dsl::abs(x) < c(kIntegral), r, x);
}

Array roundNearestEven(const Array& xIn) {
  // Adding 2^23 leaves no fraction bits; the adder rounds to nearest even.
  Array x = materialized(xIn);
  Array ax = materialized(dsl::abs(x));
  Array r = dsl::where(ax < c(kIntegral), (ax + kIntegral) - kIntegral, ax);
  return copySign(materialized(r), x);
}

Array roundNearestAfz(const Array& xIn) {
  Array x = materialized(xIn);
  Array ax = materialized(dsl::abs(x));
  Array t = materialized(floorOrCeil(ax, false));
  Array r = t + dsl::where(ax - t >= c(0.5), c(1), c(0));  // ax - t is exact
  return copySign(materialized(dsl::where(ax < c(kIntegral), r, ax)), x);
}

Array sinOrCos(const Array& xIn, bool cosine) {
  // x = q pi/2 + r with |r| <= pi/4 (three-part pi/2, a few ulps for |x| < 2^16),
  // then the sine or cosine polynomial of r by the quadrant (q + quarter) mod 4.
  Array x = materialized(xIn);
  Array q = materialized(floorOrCeil(x * 0.63661977236758134 + 0.5, false));
  Array r = materialized(((x - q * 1.5703125) - q * 4.837512969970703125e-4) -
                         q * 7.54978995489188216e-8);
  Array r2 = materialized(r * r);
  Array sinp = materialized(
      r + r * r2 * (c(-1.6666654611e-1) + r2 * (c(8.3321608736e-3) + r2 * -1.9515295891e-4)));
  Array cosp = materialized(
      (1.0 - r2 * 0.5) +
      r2 * r2 *
          (c(4.166664568298827e-2) + r2 * (c(-1.388731625493765e-3) + r2 * 2.443315711809948e-5)));
  Array n = materialized((q.astype(dsl::S32) + ci(cosine ? 1 : 0)) & ci(3));
  return dsl::where(n == ci(0), sinp,
                    dsl::where(n == ci(1), cosp, dsl::where(n == ci(2), -sinp, -cosp)));
}

Array tan(const Array& xIn) {
  Array x = materialized(xIn);
  return materialized(sinOrCos(x, false)) / materialized(sinOrCos(x, true));
}

Array power(const Array& xIn, const Array& yIn) {
  // |x|^y = exp(y log|x|); the sign and the special cases as C's powf.
  Array x = materialized(xIn), y = materialized(yIn);
  Array ax = materialized(dsl::abs(x));
  Array mag = materialized(dsl::exp(y * dsl::log(ax)));
  Array ay = materialized(dsl::abs(y));
  Array yInt = floorOrCeil(y, false) == y;
  // Odd: an integer below 2^24 with its low bit set (larger ones are even).
  Array yOdd = yInt & (ay < c(16777216.0)) &
               ((dsl::where(ay < c(16777216.0), y, c(0)).astype(dsl::S32) & ci(1)) == ci(1));
  // Materialized between the selects: each keeps masks live (8, not spilled).
  Array signed_ = materialized(dsl::where(negative(x) & yOdd, -mag, mag));
  Array r = materialized(dsl::where((x < c(0)) & notMask(yInt), c(NAN), signed_));
  // |x| = 1 with y = +-inf gives 1 (y log 1 is NaN otherwise).
  r = materialized(dsl::where((ax == c(1)) & isInf(y), c(1), r));
  r = materialized(dsl::where(x == c(1), c(1), r));
  return dsl::where(y == c(0), c(1), r);
}

Array remainder(const Array& xIn, const Array& yIn) {
  // x - trunc(x / y) y, then one step back into [0, |y|) with x's sign: exact
  // while the quotient fits the f32 mantissa.
  Array x = materialized(xIn), y = materialized(yIn);
  Array ay = materialized(dsl::abs(y));
  Array q = materialized((x / y).astype(dsl::S32).astype(dsl::F32));
  Array big = dsl::abs(x / y) >= c(kIntegral);
  Array r = materialized(x - q * y);
  Array sx = materialized(dsl::where(negative(x), c(-1), c(1)));
  r = materialized(dsl::where(r * sx < c(0), r + sx * ay, r));
  r = materialized(dsl::where(dsl::abs(r) >= ay, r - sx * ay, r));
  r = materialized(dsl::where(big, c(0), r));
  r = materialized(dsl::where(isInf(y) & notMask(isInf(x)), x, r));
  return dsl::where((y == c(0)) | isInf(x) | isNan(x) | isNan(y), c(NAN), r);
}

Array atan2(const Array& yIn, const Array& xIn) {
  Array y = materialized(yIn), x = materialized(xIn);
  Array ax = materialized(dsl::abs(x)), ay = materialized(dsl::abs(y));
  Array mx = materialized(dsl::maximum(ax, ay)), mn = materialized(dsl::minimum(ax, ay));
  Array a = dsl::where(mx == c(0), c(0), mn / mx);
  a = materialized(dsl::where(isInf(ax) & isInf(ay), c(1), a));
  // atan on [0, 1]: above tan(pi/8) through atan(a) = pi/4 + atan((a-1)/(a+1)).
  Array far = a > c(0.41421356237309503);
  Array t = materialized(dsl::where(far, (a - 1.0) / (a + 1.0), a));
  Array z = materialized(t * t);
  Array p = (((c(8.05374449538e-2) * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -
             3.33329491539e-1) *
                z * t +
            t;
  Array at = materialized(dsl::where(far, p + 0.78539816339744831, p));
  at = materialized(dsl::where(ay > ax, c(1.5707963267948966) - at, at));
  at = materialized(dsl::where(negative(x), c(3.1415926535897932) - at, at));
  return copySign(dsl::abs(at), y);
}

Array erf(const Array& xIn) {
  // |x| < 0.5: the Taylor series to x^13 (relative error < 1e-9); else
  // Abramowitz-Stegun 7.1.26 (absolute error < 1.5e-7).
  Array x = materialized(xIn);
  Array ax = materialized(dsl::abs(x));
  Array x2 = materialized(x * x);
  Array series =
      x *
      (c(1.1283791670955126) +
       x2 * (c(-0.37612638903183754) +
             x2 * (c(0.11283791670955126) +
                   x2 * (c(-0.026866170645131252) +
                         x2 * (c(0.0052239776254421878) +
                               x2 * (c(-0.00085483270234508529) + x2 * 0.00012055332981789664))))));
  Array t = materialized(dsl::reciprocal(ax * 0.3275911 + 1.0));
  Array poly =
      t * (c(0.254829592) +
           t * (c(-0.284496736) + t * (c(1.421413741) + t * (c(-1.453152027) + t * 1.061405429))));
  Array tail = materialized(copySign(dsl::minimum(c(1.0) - poly * dsl::exp(-x2), c(1.0)), x));
  return dsl::where(ax < c(0.5), materialized(series), dsl::where(isNan(x), x, tail));
}

Array cbrt(const Array& xIn) {
  // exp(log|x| / 3), one Newton step, the sign of x.
  Array x = materialized(xIn);
  Array ax = materialized(dsl::abs(x));
  Array r = materialized(dsl::exp(dsl::log(ax) * (1.0 / 3.0)));
  Array newton = (r * 2.0 + ax / (r * r)) * (1.0 / 3.0);
  Array m = dsl::where((ax == c(0)) | isInf(ax) | isNan(ax), ax, newton);
  return copySign(materialized(m), x);
}

}  // namespace tpusim::lower::detail::math
