#include "kernels/lib/SwiGlu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tpusim::kernels::lib {

using namespace dsl;

PallasCall swiGluCall(int64_t m, int64_t d, int64_t f, const SwiGluOptions& o) {
  if (o.outType != F32 && o.outType != BF16)
    throw Error(
        fmt::format("error: swiglu output must be f32 or bf16, not {}", isa::dtypeName(o.outType)));
  int64_t bm = std::min(o.bm, m), bf = std::min(o.bf, f);
  auto cdiv = [](int64_t a, int64_t q) { return (a + q - 1) / q; };
  int64_t fBlocks = cdiv(f, bf);
  int64_t fTail = f - (fBlocks - 1) * bf;  // valid d_ff entries of the last block
  bool fd = o.gateUpFd;
  DType outType = o.outType;

  CallConfig c;
  c.name = fmt::format("swiglu_{}x{}x{}", m, d, f);
  c.out_shapes = {{{m, d}, outType, "out"}};
  c.grid = {cdiv(m, bm), fBlocks};
  auto rowBlock = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
  auto ffRows = [](const GridIndex& g) { return std::vector<Scalar>{g[1], 0}; };
  auto ffColumns = [](const GridIndex& g) { return std::vector<Scalar>{0, g[1]}; };
  BlockSpec gateUp = fd ? BlockSpec({bf, d}, ffRows) : BlockSpec({d, bf}, ffColumns);
  c.in_specs = {BlockSpec({bm, d}, rowBlock), gateUp, gateUp, BlockSpec({bf, d}, ffRows)};
  c.out_specs = {BlockSpec({bm, d}, rowBlock)};
  c.scratch = {VMEM({bm, d}, F32), VMEM({bm, bf}, F32), VMEM({bm, bf}, F32)};
  c.compiler_params.dimension_semantics = {PARALLEL, ARBITRARY};
  c.compiler_params.vmem_limit_bytes = o.vmemLimitBytes;

  auto body = [=](Ref x, Ref wGate, Ref wUp, Ref wDown, Ref out, Ref acc, Ref gRef, Ref uRef) {
    Scalar j = program_id(1);
    when(j == 0, [&] { acc.store(zeros(bm, d)); });
    // The projections go to VMEM through the accumulating form (zero, then
    // += dot), which emits each matmul once per step: a dot used directly in
    // an element-wise expression is emitted inside the row-tile loop of the
    // store that consumes it, once per 8 rows.
    DotOptions gateUpDot{false, fd};
    gRef.store(zeros(bm, bf));
    uRef.store(zeros(bm, bf));
    gRef.store(gRef.load() + dot(x.load(), wGate.load(), gateUpDot));
    uRef.store(uRef.load() + dot(x.load(), wUp.load(), gateUpDot));
    Array g = gRef.load(), u = uRef.load();
    Array h = g * (0.5 + 0.5 * tanh(0.5 * g)) * u;
    Array down = wDown.load();
    if (fTail != bf) {
      // The last d_ff block holds fTail valid entries; the rest of g, u and of
      // the w_down rows is padding (undefined, NaN in interpret mode), so h's
      // columns and w_down's rows beyond fTail are zeroed.
      Array lim = splat(select(j == fBlocks - 1, fTail, bf), 1, 1);
      h = where(iota(bm, bf, 1) < lim, h, zeros(1, 1));
      down = where(iota(bf, d, 0) < lim, down, zeros(1, 1, BF16));
    }
    acc.store(acc.load() + dot(h.astype(BF16), down));
    when(j == fBlocks - 1, [&] { out.store(acc.load().astype(outType)); });
  };
  return pallas_call(body, c);
}

std::vector<dsl::ShapeDtype> swiGluInputs(int64_t m, int64_t d, int64_t f, bool gateUpFd) {
  std::vector<int64_t> gateUp = gateUpFd ? std::vector<int64_t>{f, d} : std::vector<int64_t>{d, f};
  return {{{m, d}, BF16, "x"},
          {gateUp, BF16, "w_gate"},
          {gateUp, BF16, "w_up"},
          {{f, d}, BF16, "w_down"}};
}

std::vector<double> swiGluReference(const std::vector<double>& x, const std::vector<double>& wGate,
                                    const std::vector<double>& wUp,
                                    const std::vector<double>& wDown, int64_t m, int64_t d,
                                    int64_t f, bool gateUpFd) {
  // W[k][j] (k < d, j < f) of a gate/up matrix in either layout.
  auto at = [&](const std::vector<double>& w, int64_t k, int64_t j) {
    return w[size_t(gateUpFd ? j * d + k : k * f + j)];
  };
  std::vector<double> out(size_t(m * d), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const double* xr = &x[size_t(i * d)];
    double* o = &out[size_t(i * d)];
    for (int64_t j = 0; j < f; ++j) {
      double g = 0, u = 0;
      for (int64_t k = 0; k < d; ++k) {
        g += xr[k] * at(wGate, k, j);
        u += xr[k] * at(wUp, k, j);
      }
      double h = g / (1.0 + std::exp(-g)) * u;
      const double* dr = &wDown[size_t(j * d)];
      for (int64_t k = 0; k < d; ++k) o[k] += h * dr[k];
    }
  }
  return out;
}

KernelEntry swiGluEntry() {
  KernelEntry e;
  e.name = "swiglu";
  e.description =
      "SwiGLU FFN (silu(x @ w_gate) * (x @ w_up)) @ w_down, bf16 in, fused over d_ff blocks";
  e.params = {{"m", "128", "rows (tokens) of x and out"},
              {"d_model", "256", "columns of x, w_down and out"},
              {"d_ff", "512", "hidden size"},
              {"gate_up_layout", "fd",
               "w_gate/w_up as [d_ff, d_model] (fd, torch Linear) or [d_model, d_ff] (df)"},
              {"out_dtype", "f32", "f32 or bf16"},
              {"bm", "128", "rows per block"},
              {"bf", "512", "d_ff entries per grid step"},
              {"vmem_limit_mib", "96", "VMEM budget of the blocks in MiB (0: the DSL's 16)"}};
  e.build = [](const Params& p) {
    int64_t m = p.integer("m", 1), d = p.integer("d_model", 1), f = p.integer("d_ff", 1);
    SwiGluOptions o;
    const std::string& layout = p.text("gate_up_layout");
    if (layout != "fd" && layout != "df") p.invalid("gate_up_layout", "expected fd or df");
    o.gateUpFd = layout == "fd";
    o.outType = p.dtype("out_dtype", {F32, BF16});
    o.bm = p.integer("bm", 1);
    o.bf = p.integer("bf", 1);
    o.vmemLimitBytes = p.integer("vmem_limit_mib", 0) << 20;
    bool fd = o.gateUpFd;
    LibraryKernel lk(swiGluCall(m, d, f, o), swiGluInputs(m, d, f, fd));
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{
          swiGluReference(in.at(0), in.at(1), in.at(2), in.at(3), m, d, f, fd)};
    };
    // h is rounded to bf16 (up to 2^-8 relative) before the down projection;
    // those errors average out over d_ff terms but are large next to outputs
    // near zero, hence a floor relative to the largest output.
    lk.tolerance = {o.outType == F32 ? 2e-2 : 3e-2, 0.25};
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
