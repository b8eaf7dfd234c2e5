// A dot whose LHS is computed in the kernel (a norm's scale, SwiGLU's
// product: DotOptions::lhs_by_columns) is stored column tile by column tile in
// the matmul's basic block, its ops marked overlap: the scheduler starts the
// MXU after the first K chunk's column and overlaps the rest of the VPU work
// with the MXU stream. The result is bit for bit the same (the simulator run
// equals interpret mode) and the block is shorter than prologue + matmul.
#include <catch2/catch.hpp>

#include "kernels/codegen/Compile.h"
#include "kernels/dsl/PallasCall.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// out = dot(silu-like(x) * s, w): an EUP-heavy prologue (tanh) and a per-row
// scale broadcast along the lanes, one grid step.
std::unique_ptr<llo::Kernel> scaledDot(bool byColumns) {
  const int64_t m = 256, k = 512, n = 512;
  CallConfig c;
  c.name = "scaled_dot";
  c.out_shapes = {{{m, n}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({m, k}, map), BlockSpec({m, 1}, map), BlockSpec({k, n}, map)};
  c.out_specs = {BlockSpec({m, n}, map)};
  return pallas_call(
             [&](Ref x, Ref s, Ref w, Ref o) {
               Array xv = x.load();
               Array a = (xv * (0.5 + tanh(xv * 0.5) * 0.5) * s.load()).astype(BF16);
               DotOptions opts;
               opts.lhs_by_columns = byColumns;
               o.store(dot(a, w.load(), opts));
             },
             c)
      .trace({{{m, k}, F32, "x"}, {{m, 1}, F32, "s"}, {{k, n}, BF16, "w"}});
}

}  // namespace

TEST_CASE("a computed dot LHS stored by columns overlaps the MXU and keeps the numbers") {
  for (const char* chip : {"v5e", "v6e"}) {
    INFO(chip);
    auto plain = testing::checkSimAgainstInterpret(*scaledDot(false), chip, 5);
    auto overlapped = testing::checkSimAgainstInterpret(*scaledDot(true), chip, 5);
    // Same numbers from both programs.
    REQUIRE(plain.want.size() == overlapped.want.size());
    CHECK(testing::bitDifferences(plain.want[0], overlapped.want[0]) == 0);
    INFO("bundles " << plain.compiled.stats.bundles << " -> " << overlapped.compiled.stats.bundles);
    CHECK(overlapped.compiled.stats.bundles < plain.compiled.stats.bundles);
  }
}
