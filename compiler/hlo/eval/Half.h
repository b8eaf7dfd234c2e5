// IEEE binary16 (f16) <-> f32 conversions for the evaluator. f16 arithmetic is
// done in f32 and rounded back after every op (round to nearest even), as XLA
// does; NaN becomes the quiet NaN 0x7E00 with the sign kept.
#pragma once

#include <cmath>
#include <cstdint>

#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {

inline uint16_t f32ToF16Bits(float f) {
  uint32_t u = bitsOf(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to infinity
  if (a >= 0x38800000u) {                       // normal f16 (>= 2^-14)
    uint32_t e = (a >> 23) - 127 + 15;
    uint32_t m = a & 0x7FFFFFu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal f16: units of 2^-24.
  uint32_t e = a >> 23;
  uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  uint32_t shift = 126 - e;  // >= 14 here
  if (e == 0 || shift > 24) return sign;
  uint32_t q = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

inline float f16BitsToF32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu;
  uint32_t m = h & 0x3FFu;
  if (e == 0x1F) return floatOf(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  return floatOf(sign | ((e - 15 + 127) << 23) | (m << 13));
}

inline float roundToF16(float f) { return f16BitsToF32(f32ToF16Bits(f)); }

}  // namespace tpusim::hlo::eval
