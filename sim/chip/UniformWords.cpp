// Compiled with -ffp-contract=off (CMakeLists.txt): the AVX-512 clone has FMA,
// which would skip the multiply's rounding.
#include "sim/chip/UniformWords.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TPUSIM_WORD_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define TPUSIM_WORD_CLONES
#endif

namespace tpusim::sim {
namespace {

inline float uniform(uint64_t word, float lo, float span) {
  float x = float(word) * 0x1p-64f;
  x = x >= 1.0f ? 0x1.fffffep-1f : x;  // std::nextafter(1.0f, 0.0f)
  return (x * span) + lo;
}

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TPUSIM_WORD_CLONES
void uniformF32Bits(const uint64_t* __restrict words, uint32_t* __restrict out, size_t n, float lo,
                    float hi) {
  const float span = hi - lo;
  for (size_t i = 0; i < n; ++i) out[i] = bitsOf(uniform(words[i], lo, span));
}

TPUSIM_WORD_CLONES
void uniformBf16Bits(const uint64_t* __restrict words, uint16_t* __restrict out, size_t n, float lo,
                     float hi) {
  const float span = hi - lo;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = bitsOf(uniform(words[i], lo, span));
    out[i] = uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  // finite: no NaN case
  }
}

}  // namespace tpusim::sim
