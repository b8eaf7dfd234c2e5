// Row softmax: out[r, :] = exp(x[r, :] - max_r) / sum(exp(x[r, :] - max_r)),
// f32, blocks of `blockRows` full rows, the row axis parallel.
#pragma once

#include "kernels/dsl/PallasCall.h"

namespace tpusim::kernels::lib {

dsl::PallasCall softmaxCall(int64_t rows, int64_t cols, int64_t blockRows = 8);

// Plain C++ reference in double precision.
std::vector<double> softmaxReference(const std::vector<double>& x, int64_t rows, int64_t cols);

}  // namespace tpusim::kernels::lib
