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
void mxuRowF32(const float* __restrict a, const float* __restrict w, float* __restrict r, int n,
               const int* __restrict ks, int count) {
  for (int c = 0; c < n; ++c) r[c] = 0.0f;
  int t = 0;
  // Four terms per pass over r: r is loaded and stored once per four rows of
  // W, and each column still adds its products one at a time in k order.
  for (; t + 4 <= count; t += 4) {
    const float a0 = a[ks[t]], a1 = a[ks[t + 1]], a2 = a[ks[t + 2]], a3 = a[ks[t + 3]];
    const float* __restrict w0 = w + static_cast<long>(ks[t]) * n;
    const float* __restrict w1 = w + static_cast<long>(ks[t + 1]) * n;
    const float* __restrict w2 = w + static_cast<long>(ks[t + 2]) * n;
    const float* __restrict w3 = w + static_cast<long>(ks[t + 3]) * n;
    for (int c = 0; c < n; ++c)
      r[c] = (((r[c] + a0 * w0[c]) + a1 * w1[c]) + a2 * w2[c]) + a3 * w3[c];
  }
  for (; t < count; ++t) {
    const float ak = a[ks[t]];
    const float* __restrict wk = w + static_cast<long>(ks[t]) * n;
    for (int c = 0; c < n; ++c) r[c] = r[c] + ak * wk[c];
  }
}

TPUSIM_ROW_CLONES
void mxuRowS32(const int32_t* __restrict a, const int32_t* __restrict w, uint32_t* __restrict r,
               int n, const int* __restrict ks, int count) {
  for (int c = 0; c < n; ++c) r[c] = 0;
  for (int t = 0; t < count; ++t) {
    const int k = ks[t];
    const uint32_t ak = static_cast<uint32_t>(a[k]);
    const int32_t* __restrict wk = w + static_cast<long>(k) * n;
    // Unsigned arithmetic: s32 wrapping without undefined behaviour.
    for (int c = 0; c < n; ++c) r[c] = r[c] + ak * static_cast<uint32_t>(wk[c]);
  }
}

}  // namespace tpusim::sim
