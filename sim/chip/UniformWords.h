// 64-bit random words to uniform floats in [lo, hi), as
// std::uniform_real_distribution<float>(lo, hi) on a 64-bit engine maps one
// word: x = float(word) * 2^-64, clamped below 1, then (x * (hi - lo)) + lo.
// Whole blocks at once, also compiled for AVX-512 (the 64-bit integer to float
// conversion vectorizes there); no FMA anywhere, so every host gives the same
// bits as the scalar form.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpusim::sim {

// f32 bits of each value.
void uniformF32Bits(const uint64_t* words, uint32_t* out, size_t n, float lo, float hi);
// bf16 bits of each value, rounded to nearest even (isa f32ToBf16Bits; never NaN).
void uniformBf16Bits(const uint64_t* words, uint16_t* out, size_t n, float lo, float hi);

}  // namespace tpusim::sim
