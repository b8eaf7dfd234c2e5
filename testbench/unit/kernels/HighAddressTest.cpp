// HBM arrays above 4 GiB and across a 4 GiB boundary (a whole 7B model's
// weights fill most of a 16 GiB chip). Scalar registers hold 32 bits, so the
// code generator computes a DMA address's low word at run time and takes the
// high word from the descriptor template, or from the carry when the array
// crosses a boundary: each DMA path (scalar prefetch, pipelined block
// streams, manual async copies) checked against interpret mode bit for bit.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/codegen/Compile.h"
#include "kernels/dsl/PallasCall.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using namespace tpusim::kernels::dsl;

namespace {

constexpr int64_t GiB = int64_t(1) << 30;

// out block i = x block perm[i] * 2 + 1: the prefetched permutation is loaded
// into SMEM before the grid, the x and out blocks are streamed.
std::unique_ptr<llo::Kernel> gather() {
  CallConfig c;
  c.name = "gather";
  c.num_scalar_prefetch = 1;
  c.out_shapes = {{{32, 128}, F32, "out"}};
  c.grid = {4};
  c.in_specs = {BlockSpec({8, 128}, [](const GridIndex& g) {
    return std::vector<Scalar>{g.prefetch[0].get({g[0]}), 0};
  })};
  c.out_specs = {BlockSpec({8, 128}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], 0};
  })};
  return pallas_call([](Ref, Ref x, Ref o) { o.store(x.load() * 2.0 + 1.0); }, c)
      .trace({{{4}, S32, "perm"}, {{32, 128}, F32, "x"}});
}

// The input stays in HBM; the body copies rows 8..15 into scratch.
std::unique_ptr<llo::Kernel> manualCopy() {
  CallConfig d;
  d.name = "manual_copy";
  d.out_shapes = {{{8, 128}, F32, "out"}};
  d.grid = {1};
  d.in_specs = {BlockSpec::in(Space::ANY)};
  d.out_specs = {BlockSpec()};
  d.scratch = {VMEM({8, 128}, F32), Semaphores(1)};
  return pallas_call(
             [](Ref x, Ref o, Ref buf, Ref sem) {
               auto copy =
                   make_async_copy(x.window({ds(8, 8), ds(0, 128)}), buf.window(), sem.at(0));
               copy.start();
               copy.wait();
               o.store(buf.load() + 1.0);
             },
             d)
      .trace({{{16, 128}, F32, "x"}});
}

// The gather kernel at the addresses `o` gives, with a fixed permutation (a
// random one would index blocks that do not exist), against interpret mode.
void checkGather(const CompileOptions& o, uint64_t seed) {
  auto k = gather();
  std::mt19937_64 rng(seed);
  std::vector<HostArray> ins{HostArray::fromInts({4}, S32, {3, 1, 0, 2}),
                             randomArray({32, 128}, F32, rng)};
  TargetInfo t = testing::kernelTarget("v5e");
  HostArray want = interpret(*k, ins).outputs[0];
  CompiledKernel ck = compileKernel(*k, t, o);
  sim::SimResult r = testing::simulate("v5e", ck.program, {{"perm", ins[0]}, {"x", ins[1]}});
  CHECK(testing::bitDifferences(want, testing::simOutput(r, "out", want)) == 0);
}

}  // namespace

TEST_CASE("HBM arrays above 4 GiB", "[codegen][dma]") {
  CompileOptions o;
  o.inputAddresses = {5 * GiB, 5 * GiB + (1 << 20)};
  o.outputAddresses = {6 * GiB + 4096};
  checkGather(o, 1);

  CompileOptions m;
  m.inputAddresses = {9 * GiB + 512};
  m.outputAddresses = {15 * GiB};
  testing::checkSimAgainstInterpret(*manualCopy(), "v5e", 2, m);
}

TEST_CASE("HBM arrays across a 4 GiB boundary carry into the high word", "[codegen][dma]") {
  // x's 16 KiB straddle 8 GiB: blocks 0 and 1 below it (block 1 ends past it), 2 and 3 above;
  // the output straddles 12 GiB, and the permutation's 16 bytes end exactly at 4 GiB.
  CompileOptions o;
  o.inputAddresses = {4 * GiB - 16, 8 * GiB - 6 * 1024};
  o.outputAddresses = {12 * GiB - 8 * 1024};
  checkGather(o, 3);

  // The copied window itself crosses 8 GiB (one descriptor, low word 0xFFFFFC00).
  CompileOptions m;
  m.inputAddresses = {8 * GiB - 5 * 1024};
  m.outputAddresses = {16 * GiB - 4096};
  testing::checkSimAgainstInterpret(*manualCopy(), "v5e", 4, m);
}

TEST_CASE("an array past the end of HBM is refused", "[codegen][dma]") {
  CompileOptions o;
  o.inputAddresses = {16 * GiB - 1024};
  o.outputAddresses = {0};
  CHECK_THROWS_WITH(compileKernel(*manualCopy(), testing::kernelTarget("v5e"), o),
                    Catch::Contains("is outside the target's 17179869184 bytes of HBM"));
}
