#include "kernels/lib/LayerNorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "kernels/lib/RowNormConfig.h"

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {
constexpr int64_t kOutputChunk = 4096;  // columns per output loop
}  // namespace

PallasCall layerNormCall(int64_t rows, int64_t cols, llo::DType dtype, double eps,
                         int64_t blockRows) {
  CallConfig c = rowNormConfig("layer_norm", rows, cols, dtype, blockRows, 2);  // x, gamma, beta
  const int64_t br = std::min(blockRows, rows);
  // The centered rows, computed once and read by the variance and the output.
  c.scratch = {VMEM({br, cols}, F32)};
  double invCols = 1.0 / double(cols);
  return pallas_call(
      [=](Ref x, Ref gamma, Ref beta, Ref o, Ref centeredRef) {
        Array xf = x.load().astype(F32);
        // Two passes (mean, then the mean of squared deviations): no
        // cancellation of E[x^2] - E[x]^2 when the mean is large.
        centeredRef.store(xf - sum(xf, 1) * invCols);
        Array centered = centeredRef.load();
        Array variance = sum(centered * centered, 1) * invCols;
        // A lane max over one column is the identity; it stores the scale once
        // per row tile, lane-replicated, instead of an rsqrt per column tile.
        Array scale = max(rsqrt(variance + eps), 1);
        // The output in chunks of at most 32 column tiles: each tile needs its
        // own address registers, and wider loops spill them (measured on v5e at
        // 2048 x 4096: chunks of 4, 8 and 32 tiles take 152k, 150k and 143k cycles).
        for (int64_t c0 = 0; c0 < cols; c0 += kOutputChunk) {
          int64_t n = std::min(kOutputChunk, cols - c0);
          Array y = centeredRef.load(ds(0, br), ds(c0, n)) * scale *
                        gamma.load(ds(0, 1), ds(c0, n)).astype(F32) +
                    beta.load(ds(0, 1), ds(c0, n)).astype(F32);
          o.store(ds(0, br), ds(c0, n), y.astype(dtype));
        }
      },
      c);
}

std::vector<double> layerNormReference(const std::vector<double>& x,
                                       const std::vector<double>& gamma,
                                       const std::vector<double>& beta, int64_t rows, int64_t cols,
                                       double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &x[size_t(r * cols)];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += row[j];
    mean /= double(cols);
    for (int64_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    double scale = 1.0 / std::sqrt(var / double(cols) + eps);
    for (int64_t j = 0; j < cols; ++j)
      out[size_t(r * cols + j)] = (row[j] - mean) * scale * gamma[size_t(j)] + beta[size_t(j)];
  }
  return out;
}

KernelEntry layerNormEntry() {
  KernelEntry e;
  e.name = "layer_norm";
  e.description =
      "(x - mean) * rsqrt(var + eps) * gamma + beta over rows: x [rows, cols], gamma/beta [1, "
      "cols]";
  e.params = {{"rows", "256", "rows of x"},
              {"cols", "1024", "columns of x, gamma and beta (the normalized axis)"},
              {"dtype", "f32", "dtype of x, gamma, beta and out: f32 or bf16"},
              {"eps", "1e-5", "added to the variance"},
              {"block_rows", "32", "rows per block"}};
  e.build = [](const Params& p) {
    int64_t r = p.integer("rows", 1), c = p.integer("cols", 1);
    llo::DType t = p.dtype("dtype", {F32, BF16});
    double eps = p.real("eps");
    if (eps < 0) p.invalid("eps", "must not be negative");
    LibraryKernel lk{layerNormCall(r, c, t, eps, p.integer("block_rows", 1)),
                     {{{r, c}, t, "x"}, {{1, c}, t, "gamma"}, {{1, c}, t, "beta"}},
                     {},
                     {}};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{
          layerNormReference(in.at(0), in.at(1), in.at(2), r, c, eps)};
    };
    // The output adds beta to a product: near its zeros the error is relative
    // to the terms, hence the floor. bf16: one final rounding (up to 2^-8) dominates.
    lk.tolerance = t == F32 ? Tolerance{1e-5, 5e-2} : Tolerance{5e-3, 5e-2};
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
