// The grid pipeline on the simulator, against interpret mode bit for bit:
// Buffered(1) and Buffered(3) inputs and outputs (with reused blocks and edge
// blocks whose copies have different descriptor counts), and input/output
// aliasing (an in-place update).
#include <catch2/catch.hpp>

#include <random>

#include "kernels/codegen/Compile.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using namespace tpusim::kernels::dsl;

namespace {

// out[i, j] = x[i, j] * 2 + y[j-block] + z[i, j]: y's block depends only on
// the column index, so consecutive steps reuse it along the row axis when
// the column axis is outer.
PallasCall pipelined(int64_t rows, int64_t cols, int64_t br, int64_t bc, int bx, int by, int bo) {
  CallConfig c;
  c.name = "pipelined";
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {(cols + bc - 1) / bc, (rows + br - 1) / br};  // column blocks outer
  auto xy = [](const GridIndex& g) { return std::vector<Scalar>{g[1], g[0]}; };
  auto row = [](const GridIndex& g) { return std::vector<Scalar>{0, g[0]}; };
  c.in_specs = {BlockSpec({br, bc}, xy).buffered(bx), BlockSpec({8, bc}, row).buffered(by),
                BlockSpec({br, bc}, xy)};
  c.out_specs = {BlockSpec({br, bc}, xy).buffered(bo)};
  c.compiler_params.dimension_semantics = {PARALLEL, ARBITRARY};
  return pallas_call(
      [](Ref x, Ref y, Ref z, Ref o) {
        Array yr = y.load(ds(0, 1), ds(0, y.shape()[1]));
        o.store(x.load() * 2.0 + yr + z.load());
      },
      c);
}

void checkAgainstInterpret(const llo::Kernel& k, const std::string& chip) {
  testing::checkSimAgainstInterpret(k, chip, 11);
}

std::vector<ShapeDtype> shapes(int64_t rows, int64_t cols) {
  return {{{rows, cols}, F32, "x"}, {{8, cols}, F32, "y"}, {{rows, cols}, F32, "z"}};
}

}  // namespace

TEST_CASE("Buffered(1) and Buffered(3) blocks equal interpret mode on the simulator") {
  SECTION("single buffers everywhere") {
    checkAgainstInterpret(*pipelined(64, 512, 16, 256, 1, 1, 1).trace(shapes(64, 512)), "v5e");
  }
  SECTION("three buffers everywhere") {
    checkAgainstInterpret(*pipelined(64, 512, 16, 256, 3, 3, 3).trace(shapes(64, 512)), "v5e");
  }
  SECTION("mixed depths, a grid shorter than the lookahead") {
    checkAgainstInterpret(*pipelined(16, 256, 16, 256, 3, 1, 3).trace(shapes(16, 256)), "v5e");
  }
  SECTION("four buffers with edge blocks (a 300-column edge is two descriptors)") {
    checkAgainstInterpret(*pipelined(60, 812, 16, 512, 4, 3, 4).trace(shapes(60, 812)), "v5e");
  }
  SECTION("tiny8 preset") {
    checkAgainstInterpret(*pipelined(40, 384, 8, 128, 3, 1, 1).trace(shapes(40, 384)), "tiny8");
  }
}

TEST_CASE("Buffered(n) allocates n buffers and rejects unsupported depths") {
  TargetInfo t = testing::kernelTarget("v5e");
  CompiledKernel one =
      compileKernel(*pipelined(64, 512, 16, 256, 1, 1, 1).trace(shapes(64, 512)), t);
  CompiledKernel three =
      compileKernel(*pipelined(64, 512, 16, 256, 3, 3, 3).trace(shapes(64, 512)), t);
  // x and out blocks are 16x256 (32 rows), y's 8x256 (16 rows); z keeps 2 buffers.
  CHECK(three.stats.vmemRows - one.stats.vmemRows == 2 * (32 + 16 + 32));
  auto five = pipelined(64, 512, 16, 256, 5, 2, 2).trace(shapes(64, 512));
  CHECK_THROWS_WITH(
      compileKernel(*five, t),
      Catch::Contains("'x' asks for Buffered(5); the code generator supports 1 to 4"));
}

TEST_CASE("input/output aliasing updates the input's HBM buffer in place") {
  CallConfig c;
  c.name = "inplace";
  c.out_shapes = {{{48, 256}, F32, "acc_out"}};
  c.grid = {6};
  auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
  c.in_specs = {BlockSpec({8, 256}, map), BlockSpec({8, 256}, map)};
  c.out_specs = {BlockSpec({8, 256}, map)};
  c.input_output_aliases = {{0, 0}};
  auto k = pallas_call([](Ref acc, Ref d, Ref o) { o.store(acc.load() + d.load() * 0.5); }, c)
               .trace({{{48, 256}, F32, "acc"}, {{48, 256}, F32, "d"}});
  TargetInfo t = testing::kernelTarget("v5e");
  CompiledKernel ck = compileKernel(*k, t);
  REQUIRE(ck.program.buffers.size() == 3);
  CHECK(ck.program.buffers[2].name == "acc_out");
  CHECK(ck.program.buffers[2].address == ck.program.buffers[0].address);
  CHECK(ck.program.buffers[1].address != ck.program.buffers[0].address);
  checkAgainstInterpret(*k, "v5e");

  CompileOptions o;
  o.inputAddresses = {0, 1 << 20};
  o.outputAddresses = {2 << 20};
  CHECK_THROWS_WITH(compileKernel(*k, t, o),
                    Catch::Contains("output 'acc_out' aliases input 'acc' but its address"));
  o.outputAddresses = {0};
  CHECK(compileKernel(*k, t, o).program.buffers[2].address == 0);
}

namespace {
int64_t countOf(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("copy decisions known at compile time leave no code in the grid loop") {
  // One column block: y's block never changes after the first step, and x, z
  // and out change at every step (their copies start while a step is left).
  SECTION("two buffers, one-point column dimension") {
    checkAgainstInterpret(*pipelined(64, 256, 16, 256, 2, 2, 2).trace(shapes(64, 256)), "v5e");
  }
  SECTION("two buffers, blocks reused along the row axis") {
    checkAgainstInterpret(*pipelined(64, 512, 16, 256, 2, 2, 2).trace(shapes(64, 512)), "v5e");
  }
  SECTION("y never copied again: one dma for it, in the prologue") {
    TargetInfo t = testing::kernelTarget("v5e");
    CompiledKernel k =
        compileKernel(*pipelined(64, 256, 16, 256, 2, 2, 2).trace(shapes(64, 256)), t);
    // Prologue: x, y, z; loop: x and z ahead, the write-back; nothing for y.
    CHECK(countOf(k.machineText, "dma ") == 6);
    // Each step waits for x and z; the epilogue for the last write-back.
    CHECK(countOf(k.machineText, "sync.wait") <= 5);
  }
}

namespace {
// out = 2 x[:, block 0] + x[:, block 1] + ... + x[:, block last], halved at
// the last step: a body that branches on the grid index (first step, the
// others, the last), as a resident dot's K steps do. x is Buffered(bx).
PallasCall stepBranches(int64_t steps, int bx) {
  CallConfig c;
  c.name = "step_branches";
  c.out_shapes = {{{16, 128}, F32, "out"}};
  c.grid = {steps};
  c.in_specs = {BlockSpec({16, 128}, [](const GridIndex& g) {
                  return std::vector<Scalar>{0, g[0]};
                }).buffered(bx)};
  c.out_specs = {BlockSpec({16, 128}, [](const GridIndex&) { return std::vector<Scalar>{0, 0}; })};
  c.compiler_params.dimension_semantics = {ARBITRARY};
  return pallas_call(
      [steps](Ref x, Ref o) {
        Scalar k = program_id(0);
        when_else(
            k > 0, [&] { o.store(o.load() + x.load()); }, [&] { o.store(x.load() * 2.0); });
        when(k == steps - 1, [&] { o.store(o.load() * 0.5); });
      },
      c);
}
}  // namespace

TEST_CASE("a grid loop whose body branches on the grid index is peeled") {
  for (int bx : {2, 3}) {
    for (int64_t steps : {2, 3, 4, 5, 8}) {
      INFO("Buffered(" << bx << "), " << steps << " steps");
      auto k = stepBranches(steps, bx).trace({{{16, 128 * steps}, F32, "x"}});
      checkAgainstInterpret(*k, "v5e");
      CompiledKernel ck = compileKernel(*k, testing::kernelTarget("v5e"));
      // Peeled when the loop keeps a middle step: the first step and the
      // last bx - 1 steps have constant indices, and the loop's body (one
      // block, up to its latch) tests nothing: no branch on the index, the
      // copies ahead or the write-back.
      const bool peeled = steps >= std::max(bx - 1, 1) + 3;
      INFO(ck.machineText);
      CHECK(countOf(ck.machineText, "first step") == (peeled ? 1 : 0));
      const std::string& m = ck.machineText;
      const size_t body = m.find("\nstep"), latch = m.find("\nnext", body);
      if (peeled) {
        REQUIRE(latch != std::string::npos);
        CHECK(countOf(m.substr(body, latch - body), "br.") == 0);
      } else {
        CHECK(countOf(m, "br.") > 0);
      }
    }
  }
}
