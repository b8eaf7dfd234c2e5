#include "kernels/lib/RmsNorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/lib/RowNormConfig.h"

namespace tpusim::kernels::lib {

using namespace dsl;

PallasCall rmsNormCall(int64_t rows, int64_t cols, llo::DType dtype, double eps,
                       int64_t blockRows) {
  CallConfig c = rowNormConfig("rms_norm", rows, cols, dtype, blockRows, 1);  // x, w
  double invCols = 1.0 / double(cols);
  return pallas_call(
      [=](Ref x, Ref w, Ref o) {
        Array xf = x.load().astype(F32);
        Array meanSquare = sum(xf * xf, 1) * invCols;
        // A lane max over one column is the identity; it stores the scale once
        // per row tile with every lane holding it, instead of recomputing the
        // rsqrt (the EUP) for every column tile of the row.
        Array scale = max(rsqrt(meanSquare + eps), 1);
        o.store((xf * scale * w.load().astype(F32)).astype(dtype));
      },
      c);
}

std::vector<double> rmsNormReference(const std::vector<double>& x, const std::vector<double>& w,
                                     int64_t rows, int64_t cols, double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[size_t(r * cols)];
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j) ss += row[j] * row[j];
    double scale = 1.0 / std::sqrt(ss / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) out[size_t(r * cols + j)] = row[j] * scale * w[size_t(j)];
  }
  return out;
}

KernelEntry rmsNormEntry() {
  KernelEntry e;
  e.name = "rms_norm";
  e.description = "x * rsqrt(mean(x^2, row) + eps) * w: x [rows, cols], w [1, cols], f32 math";
  e.params = {{"rows", "256", "rows of x"},
              {"cols", "1024", "columns of x and w (the normalized axis)"},
              {"dtype", "f32", "dtype of x, w and out: f32 or bf16"},
              {"eps", "1e-6", "added to the mean square"},
              {"block_rows", "32", "rows per block"}};
  e.build = [](const Params& p) {
    int64_t r = p.integer("rows", 1), c = p.integer("cols", 1);
    llo::DType t = p.dtype("dtype", {F32, BF16});
    double eps = p.real("eps");
    if (eps < 0) p.invalid("eps", "must not be negative");
    LibraryKernel lk{rmsNormCall(r, c, t, eps, p.integer("block_rows", 1)),
                     {{{r, c}, t, "x"}, {{1, c}, t, "w"}},
                     {},
                     {}};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{rmsNormReference(in.at(0), in.at(1), r, c, eps)};
    };
    // f32: a few roundings per element and the sum of squares; bf16: one final
    // rounding to bf16 (up to 2^-8 relative) dominates.
    lk.tolerance = t == F32 ? Tolerance{1e-5, 1e-3} : Tolerance{5e-3, 1e-3};
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
