// The call configuration the row normalizations (RmsNorm, LayerNorm) share:
// whole rows per block, `blockRows` rows per grid step, the output like the
// input, and `params` per-column parameter vectors ([1, cols]) whose block
// index never changes, so the pipeline copies them once.
#pragma once

#include <string>

#include "kernels/dsl/PallasCall.h"

namespace tpusim::kernels::lib {

// Throws dsl::Error for a dtype other than f32 / bf16, naming `kernel`.
dsl::CallConfig rowNormConfig(const std::string& kernel, int64_t rows, int64_t cols,
                              llo::DType dtype, int64_t blockRows, int params);

}  // namespace tpusim::kernels::lib
