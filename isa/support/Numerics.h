// Bit-exact numeric helpers shared by every layer (isa, sim, kernels, compiler):
// bf16 <-> f32 conversion with round-to-nearest-even, and the canonical NaN.
// Everything that must agree bit for bit (simulator, reference evaluator,
// interpret mode, RTL testbenches) uses these and nothing else.
#pragma once

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

}  // namespace tpusim
