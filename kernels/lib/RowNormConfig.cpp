#include "kernels/lib/RowNormConfig.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::kernels::lib {

using namespace dsl;

CallConfig rowNormConfig(const std::string& kernel, int64_t rows, int64_t cols, llo::DType dtype,
                         int64_t blockRows, int params) {
  if (dtype != F32 && dtype != BF16)
    throw Error(
        fmt::format("error: {} inputs must be f32 or bf16, not {}", kernel, isa::dtypeName(dtype)));
  int64_t br = std::min(blockRows, rows);
  CallConfig c;
  c.name = fmt::format("{}_{}_{}x{}", kernel, isa::dtypeName(dtype), rows, cols);
  c.out_shapes = {{{rows, cols}, dtype, "out"}};
  c.grid = {(rows + br - 1) / br};
  auto rowMap = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
  auto fixed = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({br, cols}, rowMap)};
  for (int p = 0; p < params; ++p) c.in_specs.push_back(BlockSpec({1, cols}, fixed));
  c.out_specs = {BlockSpec({br, cols}, rowMap)};
  c.compiler_params.dimension_semantics = {PARALLEL};
  return c;
}

}  // namespace tpusim::kernels::lib
