#include "kernels/lib/Softmax.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tpusim::kernels::lib {

using namespace dsl;

PallasCall softmaxCall(int64_t rows, int64_t cols, int64_t blockRows) {
  int64_t br = std::min(blockRows, rows);
  CallConfig c;
  c.name = fmt::format("softmax_{}x{}", rows, cols);
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {(rows + br - 1) / br};
  auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
  c.in_specs = {BlockSpec({br, cols}, map)};
  c.out_specs = {BlockSpec({br, cols}, map)};
  c.compiler_params.dimension_semantics = {PARALLEL};
  return pallas_call(
      [](Ref x, Ref o) {
        Array v = x.load();
        Array e = exp(v - max(v, 1));
        o.store(e / sum(e, 1));
      },
      c);
}

std::vector<double> softmaxReference(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[r * cols];
    double m = *std::max_element(row, row + cols), s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(row[c] - m);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = std::exp(row[c] - m) / s;
  }
  return out;
}

}  // namespace tpusim::kernels::lib
