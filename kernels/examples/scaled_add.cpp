// Example kernel: out = alpha * x + y over a 2-D grid of (64, 256) blocks.
// Build with tpusim_add_kernel(); run as `scaled_add --tpusim build/bin/tpusim`.
#include "kernels/examples/KernelMain.h"

using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

int main(int argc, char** argv) {
  const int64_t rows = 256, cols = 512;
  auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1]}; };
  CallConfig c;
  c.name = "scaled_add";
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {rows / 64, cols / 256};
  c.in_specs = {BlockSpec({64, 256}, map), BlockSpec({64, 256}, map)};
  c.out_specs = {BlockSpec({64, 256}, map)};
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL};
  examples::KernelExample ex{
      pallas_call([](Ref x, Ref y, Ref o) { o.store(x.load() * 1.5 + y.load()); }, c),
      {{{rows, cols}, F32, "x"}, {{rows, cols}, F32, "y"}},
      [](const std::vector<std::vector<double>>& in) {
        std::vector<double> out(in[0].size());
        for (size_t i = 0; i < out.size(); ++i) out[i] = 1.5 * in[0][i] + in[1][i];
        return std::vector<std::vector<double>>{out};
      },
      1e-6};
  return examples::kernelMain(argc, argv, ex);
}
