// A dot whose LHS is computed in the kernel (a norm's scale, SwiGLU's
// product: DotOptions::lhs_by_columns) is stored column tile by column tile in
// the matmul's basic block, its ops marked overlap: the scheduler starts the
// MXU after the first K chunk's column and overlaps the rest of the VPU work
// with the MXU stream. The result is bit for bit the same (the simulator run
// equals interpret mode) and the block is shorter than prologue + matmul.
#include <catch2/catch.hpp>

#include <string>

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

namespace {

// Two dots of one computed LHS kept in a VMEM cache (sibling dots' row cache,
// DotLowering.cpp): stored by a loop before the dots, or by columns as the
// first dot's LHS (DotOptions::lhs_into) and read back by the second.
std::unique_ptr<llo::Kernel> cachedLhsDots(bool into) {
  const int64_t m = 256, k = 512, n = 512;
  CallConfig c;
  c.name = into ? "cached_lhs_into" : "cached_lhs_loop";
  c.out_shapes = {{{m, n}, F32, "g"}, {{m, n}, F32, "u"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({m, k}, map), BlockSpec({m, 1}, map), BlockSpec({k, n}, map),
                BlockSpec({k, n}, map)};
  c.out_specs = {BlockSpec({m, n}, map), BlockSpec({m, n}, map)};
  c.scratch = {VMEM({m, k}, BF16)};
  return pallas_call(
             [&](Ref x, Ref s, Ref w1, Ref w3, Ref g, Ref u, Ref cache) {
               Array xv = x.load();
               Array a = (xv * s.load()).astype(BF16);  // a norm's scale
               DotOptions first;
               if (into) {
                 first.lhs_by_columns = true;
                 first.lhs_into = cache.value();
                 g.store(dot(a, w1.load(), first));
               } else {
                 cache.store(a);
                 g.store(dot(cache.load(), w1.load()));
               }
               u.store(dot(cache.load(), w3.load()));
             },
             c)
      .trace({{{m, k}, F32, "x"}, {{m, 1}, F32, "s"}, {{k, n}, BF16, "w1"}, {{k, n}, BF16, "w3"}});
}

}  // namespace

TEST_CASE("a cached dot LHS computed by columns into its ref (lhs_into) keeps the numbers") {
  for (const char* chip : {"v5e", "v6e"}) {
    INFO(chip);
    auto loop = testing::checkSimAgainstInterpret(*cachedLhsDots(false), chip, 5);
    auto into = testing::checkSimAgainstInterpret(*cachedLhsDots(true), chip, 5);
    REQUIRE(loop.want.size() == 2);
    REQUIRE(into.want.size() == 2);
    CHECK(testing::bitDifferences(loop.want[0], into.want[0]) == 0);
    CHECK(testing::bitDifferences(loop.want[1], into.want[1]) == 0);
    INFO("bundles " << loop.compiled.stats.bundles << " -> " << into.compiled.stats.bundles);
    // v5e: the first dot starts after the first column (1 grid step here).
    // v6e's 256-wide MXU runs this small block's first dot faster than the
    // VPU stores the cache by columns, and the second dot waits for all of
    // it: more bundles in this one-step kernel (the tiny prefill's sibling
    // kernels on v6e are 2.1% faster in all; docs/performance.md, tinydown).
    if (std::string(chip) == "v5e")
      CHECK(into.compiled.stats.bundles < loop.compiled.stats.bundles);
  }
}

TEST_CASE("lhs_into needs a VMEM ref of the LHS's shape") {
  CallConfig c;
  c.name = "bad_lhs_into";
  c.out_shapes = {{{8, 128}, F32, "o"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({8, 128}, map), BlockSpec({128, 128}, map)};
  c.out_specs = {BlockSpec({8, 128}, map)};
  c.scratch = {VMEM({16, 128}, BF16)};
  auto call = pallas_call(
      [&](Ref x, Ref w, Ref o, Ref cache) {
        DotOptions opts;
        opts.lhs_into = cache.value();
        o.store(dot((x.load() * 2.0).astype(BF16), w.load(), opts));
      },
      c);
  CHECK_THROWS_WITH(call.trace({{{8, 128}, F32, "x"}, {{128, 128}, BF16, "w"}}),
                    Catch::Contains("lhs_into") && Catch::Contains("8x128"));
}
