// Bit-exact numeric helpers shared by every layer (isa, sim, kernels, compiler):
// bf16 and f16 <-> f32 conversion with round-to-nearest-even, and the
// canonical NaN.
// Everything that must agree bit for bit (simulator, reference evaluator,
// interpret mode, RTL testbenches) uses these and nothing else.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tpusim {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The quiet NaN every unit produces when a result is NaN.
constexpr uint32_t kCanonicalNanBits = 0x7FC00000u;

inline bool isNanBits(uint32_t u) { return (u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu); }

// f32 -> bf16 bits, round to nearest even; NaN becomes the canonical quiet NaN's
// upper half (0x7FC0), so a NaN never rounds into an infinity.
inline uint16_t f32ToBf16Bits(float f) {
  uint32_t u = bitsOf(f);
  if (isNanBits(u)) return static_cast<uint16_t>(kCanonicalNanBits >> 16);
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7FFFu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

// bf16 bits -> f32: exact (bf16 is the upper half of an f32).
inline float bf16BitsToF32(uint16_t b) { return floatOf(static_cast<uint32_t>(b) << 16); }

// Rounds an f32 to the nearest bf16 value and returns it as f32.
inline float roundToBf16(float f) { return bf16BitsToF32(f32ToBf16Bits(f)); }

// Replaces any NaN by the canonical NaN (MXU outputs, see isa/README.md).
inline float canonicalizeNan(float f) {
  return isNanBits(bitsOf(f)) ? floatOf(kCanonicalNanBits) : f;
}

// IEEE binary16 (f16) <-> f32. f32 -> f16 rounds to nearest even; NaN becomes
// the quiet NaN 0x7E00 with its sign kept.
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

}  // namespace tpusim
