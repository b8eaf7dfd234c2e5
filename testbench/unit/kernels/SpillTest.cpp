// Spilling: a kernel that needs more vector registers than the target has
// (a 32-tile loop carry plus temporaries on v4's 32 vregs) and one that needs
// more scalar registers than the 32 of the ISA (many pipelined streams) still
// compile, run hazard-free under --strict and equal interpret mode.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/codegen/Compile.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

codegen::CompiledKernel checkAgainstInterpret(const llo::Kernel& k, const std::string& chip) {
  return testing::checkSimAgainstInterpret(k, chip, 3).compiled;
}

}  // namespace

TEST_CASE("vector registers spill to VMEM when a loop carry fills the register file") {
  const int64_t cols = 32 * 128;  // 32 tiles of 8 rows
  CallConfig c;
  c.name = "wide_carry";
  c.out_shapes = {{{8, cols}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({32, cols}, map)};
  c.out_specs = {BlockSpec({8, cols}, map)};
  auto k = pallas_call(
               [&](Ref x, Ref o) {
                 Array acc = fori_loop(
                     0, 4,
                     [&](Scalar i, Array a) { return a * 0.5 + x.load(ds(i * 8, 8), ds(0, cols)); },
                     zeros(8, cols));
                 o.store(acc);
               },
               c)
               .trace({{{32, cols}, F32, "x"}});
  codegen::CompiledKernel ck = checkAgainstInterpret(*k, "v4");
  CHECK(ck.stats.spills > 0);
  CHECK(ck.stats.spillInstructions >= 2 * ck.stats.spills);
  CHECK(ck.stats.vectorRegs <= 32);
}

TEST_CASE("scalar registers spill to SMEM with many pipelined streams") {
  // Eight inputs with three buffers each: their pipeline state alone passes
  // the 32 scalar registers.
  const int n = 8;
  CallConfig c;
  c.name = "many_streams";
  c.out_shapes = {{{64, 256}, F32, "out"}};
  c.grid = {4, 2};
  auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1]}; };
  for (int i = 0; i < n; ++i) c.in_specs.push_back(BlockSpec({16, 128}, map).buffered(3));
  c.out_specs = {BlockSpec({16, 128}, map)};
  auto k = pallas_call(
               [&](const std::vector<Ref>& r) {
                 Array s = r[0].load();
                 for (int i = 1; i < n; ++i) s = s + r[size_t(i)].load() * double(i);
                 r[size_t(n)].store(s);
               },
               c)
               .trace(std::vector<ShapeDtype>(size_t(n), ShapeDtype{{64, 256}, F32}));
  codegen::CompiledKernel ck = checkAgainstInterpret(*k, "v5e");
  CHECK(ck.stats.scalarRegs <= 32);
  CHECK(ck.stats.spills > 0);
}
