// LayerNorm: out[r, :] = (x[r, :] - mean_r) * rsqrt(var_r + eps) * gamma[0, :] + beta[0, :]
// with the mean and the (biased, two-pass) variance over the row, over blocks
// of `blockRows` full rows (the row axis parallel). x, gamma, beta and out are
// f32 or bf16 (all the same dtype); the arithmetic is f32. gamma and beta are
// [1, cols].
#pragma once

#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

dsl::PallasCall layerNormCall(int64_t rows, int64_t cols, llo::DType dtype, double eps = 1e-5,
                              int64_t blockRows = 32);

// Plain C++ reference in double precision.
std::vector<double> layerNormReference(const std::vector<double>& x,
                                       const std::vector<double>& gamma,
                                       const std::vector<double>& beta, int64_t rows, int64_t cols,
                                       double eps);

// The registry entry "layer_norm".
KernelEntry layerNormEntry();

}  // namespace tpusim::kernels::lib
