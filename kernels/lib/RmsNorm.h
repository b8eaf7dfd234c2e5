// RMSNorm: out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w[0, :], over
// blocks of `blockRows` full rows (the row axis parallel). x and w are f32 or
// bf16 (the same dtype, which is also the output's); the arithmetic is f32.
// w is [1, cols] (a [cols] vector reshaped: the same bytes).
#pragma once

#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

dsl::PallasCall rmsNormCall(int64_t rows, int64_t cols, llo::DType dtype, double eps = 1e-6,
                            int64_t blockRows = 32);

// Plain C++ reference in double precision (w given as cols values).
std::vector<double> rmsNormReference(const std::vector<double>& x, const std::vector<double>& w,
                                     int64_t rows, int64_t cols, double eps);

// The registry entry "rms_norm".
KernelEntry rmsNormEntry();

}  // namespace tpusim::kernels::lib
