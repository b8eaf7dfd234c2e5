// Compiled with -O3 -ffp-contract=off (see CMakeLists.txt): vectorized across
// columns, and never fused into an FMA (that would skip the product's rounding).
// Each kernel is also compiled for AVX2 and AVX-512 and picked at load time by
// the host CPU: wider vectors over the same independent columns, each column's
// sum still added in k order, so every variant gives the same bits.
#include "sim/mxu/MxuRowKernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TPUSIM_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TPUSIM_ROW_CLONES
#endif

namespace tpusim::sim {

TPUSIM_ROW_CLONES
void mxuRowF32(const float* __restrict a, const float* __restrict w, float* __restrict r, int n) {
  for (int c = 0; c < n; ++c) r[c] = 0.0f;
  for (int k = 0; k < n; ++k) {
    const float ak = a[k];
    const float* __restrict wk = w + static_cast<long>(k) * n;
    for (int c = 0; c < n; ++c) r[c] = r[c] + ak * wk[c];
  }
}

TPUSIM_ROW_CLONES
void mxuRowS32(const int32_t* __restrict a, const int32_t* __restrict w, uint32_t* __restrict r,
               int n) {
  for (int c = 0; c < n; ++c) r[c] = 0;
  for (int k = 0; k < n; ++k) {
    const uint32_t ak = static_cast<uint32_t>(a[k]);
    const int32_t* __restrict wk = w + static_cast<long>(k) * n;
    // Unsigned arithmetic: s32 wrapping without undefined behaviour.
    for (int c = 0; c < n; ++c) r[c] = r[c] + ak * static_cast<uint32_t>(wk[c]);
  }
}

}  // namespace tpusim::sim
