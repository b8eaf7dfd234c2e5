// fori_loop with carried values (lax.fori_loop(lo, hi, body, init)): scalar
// and array carries through the IR, interpret mode and the code generator;
// the simulator must equal interpret mode bit for bit.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/codegen/Compile.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"
#include "kernels/llo/Verifier.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

std::vector<HostArray> runBoth(const llo::Kernel& k, const std::string& chip) {
  return testing::checkSimAgainstInterpret(k, chip, 5).want;
}

// x block (32, 256) per grid step g; out block (8, 256):
//   acc = sum of the four 8-row chunks (array carry, in registers),
//   m   = running row max of the chunks (an (8,1) lane-replicated carry),
//   (a, b) swapped every trip (3 trips: a ends as b),
//   s   = 7 + 3 * (0 + 1 + ... + g - 1) (a scalar carry over a run-time trip count),
//   out = acc + m + (a - b) + s.
std::unique_ptr<llo::Kernel> carried(int64_t steps) {
  CallConfig c;
  c.name = "carried";
  c.out_shapes = {{{8 * steps, 256}, F32, "out"}};
  c.grid = {steps};
  c.in_specs = {BlockSpec({32, 256}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], 0};
  })};
  c.out_specs = {BlockSpec({8, 256}, [](const GridIndex& g) {
    return std::vector<Scalar>{g[0], 0};
  })};
  c.compiler_params.dimension_semantics = {PARALLEL};
  auto call = pallas_call(
      [](Ref x, Ref o) {
        std::vector<Array> r =
            fori_loop(0, 4,
                      [&](Scalar i, const std::vector<Array>& cs) {
                        Array chunk = x.load(ds(i * 8, 8), ds(0, 256));
                        return std::vector<Array>{cs[0] + chunk, maximum(cs[1], max(chunk, 1))};
                      },
                      {zeros(8, 256), full(8, 1, -1e30)});
        std::vector<Array> ab = fori_loop(0, 3,
                                          [](Scalar, const std::vector<Array>& cs) {
                                            return std::vector<Array>{cs[1], cs[0]};
                                          },
                                          {full(8, 256, 1.0), full(8, 256, 5.0)});
        Scalar s = fori_loop(
            0, program_id(0), [](Scalar i, Scalar acc) { return acc + i * 3; }, Scalar(7));
        Array sf = splat(s, 1, 1).astype(F32);
        o.store(r[0] + r[1] + (ab[0] - ab[1]) + sf);
      },
      c);
  return call.trace({{{32 * steps, 256}, F32, "x"}});
}

}  // namespace

TEST_CASE("fori_loop carries scalars and arrays: IR, interpret mode and the simulator agree") {
  auto k = carried(3);
  std::string ir = llo::printKernel(*k);
  CHECK(ir.find("carry(") != std::string::npos);
  CHECK(ir.find("yield") != std::string::npos);
  std::vector<HostArray> out = runBoth(*k, "v5e");
  // Spot-check interpret mode against the formula for grid step 2, element (0, 0).
  // (the swap of 1.0 and 5.0 three times leaves a = 5, b = 1).
  HostArray x;
  {
    std::mt19937_64 rng(5);
    x = randomArray({96, 256}, F32, rng);
  }
  double acc = 0, m = -1e30;
  for (int r = 0; r < 32; r += 8) acc += x.floatAt((64 + r) * 256);
  for (int r = 0; r < 32; r += 8)
    for (int c = 0; c < 256; ++c) m = std::max<double>(m, x.floatAt((64 + r) * 256 + c));
  double want = acc + m + 4.0 + (7 + 3 * (0 + 1));
  CHECK(out[0].floatAt(16 * 256) == Approx(want).epsilon(1e-5));
  SECTION("on tiny8") { runBoth(*carried(2), "tiny8"); }
}

TEST_CASE("fori_loop carry errors and verification") {
  CallConfig c;
  c.name = "bad";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({8, 128}, map)};
  c.out_specs = {BlockSpec({8, 128}, map)};
  auto shapeChange = pallas_call(
      [](Ref x, Ref o) {
        o.store(fori_loop(
                    0, 2, [&](Scalar, Array a) { return a.astype(S32); }, x.load())
                    .astype(F32));
      },
      c);
  CHECK_THROWS_WITH(shapeChange.trace({{{8, 128}, F32, "x"}}),
                    Catch::Contains("carry 0 changes from f32[8,128] to s32[8,128]"));
  auto tooBig = pallas_call(
      [](Ref x, Ref o) {
        Array big = fori_loop(
            0, 2, [&](Scalar, Array a) { return a; }, zeros(64, 640));
        o.store(x.load() + big.astype(F32));
      },
      c);
  CHECK_THROWS_WITH(tooBig.trace({{{8, 128}, F32, "x"}}),
                    Catch::Contains("fori_loop carries 40 (8,128) tiles; at most 32"));

  // The verifier: a loop carrying a value must end with a yield of its type.
  llo::Function f;
  llo::Builder b(&f, &f.body);
  llo::Value* zero = b.sconst(0);
  llo::Op* loop = b.forLoop(zero, b.sconst(4), 1, "i", {zero});
  std::vector<std::string> errs = llo::verifyFunction(f);
  REQUIRE_FALSE(errs.empty());
  CHECK_THAT(errs[0], Catch::Contains("must end its body with a yield of 1"));
  llo::Builder in(&f, &loop->regions[0]);
  in.create(llo::OpKind::Yield, {in.vconst(0, llo::DType::F32)}, {});
  errs = llo::verifyFunction(f);
  REQUIRE_FALSE(errs.empty());
  CHECK_THAT(errs[0], Catch::Contains("has another type in the body, the yield or the result"));
}

namespace {

// One (8, 356) block per grid step (three column tiles, the last 100 columns
// wide: a masked edge for the reductions); two outputs of the same math, the
// first with its intermediates in vector registers (in_vregs, max_vregs,
// sum_vregs), the second through VMEM (max(a, 1), sum(a, 1), stores).
std::unique_ptr<llo::Kernel> vregValues(bool registersOnly) {
  CallConfig c;
  c.name = "vreg_values";
  c.out_shapes = {{{16, 356}, F32, "out"}};
  if (!registersOnly) c.out_shapes.push_back({{16, 356}, F32, "ref"});
  c.grid = {2};
  auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0}; };
  c.in_specs = {BlockSpec({8, 356}, map)};
  c.out_specs = {BlockSpec({8, 356}, map)};
  if (!registersOnly) c.out_specs.push_back(BlockSpec({8, 356}, map));
  c.compiler_params.dimension_semantics = {PARALLEL};
  auto call = pallas_call(
      [=](const std::vector<Ref>& r) {
        Array x = r[0].load() * 0.5;
        Array a = in_vregs(x);
        Array mx = max_vregs(a);
        Array e = in_vregs(exp(a - mx));
        r[1].store(e * reciprocal(sum_vregs(e)) + mx);
        if (registersOnly) return;
        Array m2 = max(x, 1);
        Array e2 = exp(x - m2);
        r[2].store(e2 * reciprocal(sum(e2, 1)) + m2);
      },
      c);
  return call.trace({{{16, 356}, F32, "x"}});
}

}  // namespace

TEST_CASE("values in vector registers: the same bits as through VMEM, no temporaries") {
  // Both forms in one kernel: interpret mode and the simulator agree, and the
  // register form equals the VMEM form bit for bit.
  std::vector<HostArray> out = runBoth(*vregValues(false), "v5e");
  REQUIRE(out.size() == 2);
  CHECK(out[0].words == out[1].words);
  // Alone, the register form allocates no VMEM temporary (the reductions and
  // the shared exp stay in registers) and runs on the simulator.
  auto k = vregValues(true);
  CHECK(llo::printKernel(*k).find("alloc") == std::string::npos);
  runBoth(*k, "v5e");
  SECTION("on tiny8") { runBoth(*vregValues(false), "tiny8"); }
}

TEST_CASE("values in vector registers: errors") {
  CallConfig c;
  c.name = "bad";
  c.out_shapes = {{{16, 128}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({16, 128}, map)};
  c.out_specs = {BlockSpec({16, 128}, map)};
  auto tooBig = pallas_call([](Ref x, Ref o) { o.store(x.load() + in_vregs(zeros(64, 384))); }, c);
  CHECK_THROWS_WITH(tooBig.trace({{{16, 128}, F32, "x"}}),
                    Catch::Contains("24 (8,128) tiles, at most 16 stay in registers"));
  auto tallMax = pallas_call([](Ref x, Ref o) { o.store(x.load() + max_vregs(x.load())); }, c);
  CHECK_THROWS_WITH(tallMax.trace({{{16, 128}, F32, "x"}}),
                    Catch::Contains("covers at most 8 rows, not 16"));
}
