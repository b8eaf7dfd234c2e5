// The arithmetic of one LHS row through the array, in the order isa/README.md
// fixes: r[n] = ((+0 + a[0]*W[0][n]) + a[1]*W[1][n]) + ..., each multiply and
// add rounded to nearest even in f32 (bf16) or wrapping in s32 (s8). The loop
// runs over n innermost so it vectorizes without reassociating any sum.
#pragma once

#include <cstdint>

namespace tpusim::sim {

// w is K x N row-major (K = N), a has N values, r receives N values; only the
// terms k = ks[0] < ks[1] < ... < ks[count-1] are added, in that order. The
// caller leaves out terms that cannot change the sum (MxuModel: a zero a[k]
// against a finite weight row; the running f32 sum starts at +0 and so is
// never -0, and x + (+-0) == x for every other x).
void mxuRowF32(const float* a, const float* w, float* r, int n, const int* ks, int count);
void mxuRowS32(const int32_t* a, const int32_t* w, uint32_t* r, int n, const int* ks, int count);

}  // namespace tpusim::sim
