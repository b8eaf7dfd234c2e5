// Weights latched on the MXUs once (dsl::mxu_latch) and dots that stream
// through them with no pushes (DotOptions::latched, LowerMatmulLatched.cpp):
// inside a loop they give a plain dot's bits (interpret mode), the simulator
// equals interpret mode, and misuse is an error in interpret mode or codegen.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "kernels/codegen/Compile.h"
#include "kernels/codegen/HazardCheck.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// out [64, n] (+)= x [64, k] . w [k, n], 16 rows per loop trip; `latched`:
// through weights latched before the loop, else a plain dot per trip.
// `clobber`: a plain dot between the latch and the loop.
std::unique_ptr<llo::Kernel> rowsDot(int64_t k, int64_t n, bool latched, bool clobber = false) {
  CallConfig c;
  c.name = "rows_dot";
  c.out_shapes = {{{64, n}, F32, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({64, k}, whole), BlockSpec({k, n}, whole)};
  c.out_specs = {BlockSpec({64, n}, whole)};
  c.scratch = {VMEM({8, n}, F32)};
  auto call = pallas_call(
      [=](const std::vector<Ref>& r) {
        Ref x = r[0], w = r[1], o = r[2], t = r[3];
        o.store(zeros(64, n));
        if (latched) mxu_latch(w.load());
        if (clobber) t.store(dot(x.load(ds(0, 8), ds(0, k)), w.load()));
        fori_loop(0, 4, [&](Scalar i) {
          auto rows = ds(i * 16, 16);
          o.store(
              rows, ds(0, n),
              o.load(rows, ds(0, n)) + dot(x.load(rows, ds(0, k)), w.load(), {.latched = latched}));
        });
      },
      c);
  return call.trace({{{64, k}, BF16, "x"}, {{k, n}, BF16, "w"}});
}

std::vector<HostArray> interpretSeeded(const llo::Kernel& kernel, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<HostArray> ins;
  for (const llo::ArrayOperand& a : kernel.inputs)
    ins.push_back(randomArray(a.shape, a.dtype, rng));
  InterpretOptions o;
  o.mxuSize = 128;
  return interpret(kernel, ins, o).outputs;
}

}  // namespace

TEST_CASE("a latched dot in a loop gives a plain dot's bits, on the simulator too") {
  for (int64_t k : {128, 512}) {
    for (int64_t n : {128, 64}) {
      INFO("k " << k << " n " << n);
      auto latched = rowsDot(k, n, true), plain = rowsDot(k, n, false);
      std::string ir = llo::printKernel(*latched);
      CHECK(ir.find("mxu_latch") != std::string::npos);
      CHECK(ir.find(" latched") != std::string::npos);
      HostArray a = interpretSeeded(*latched, 9)[0], b = interpretSeeded(*plain, 9)[0];
      CHECK(testing::bitDifferences(b, a) == 0);
      auto sim = testing::checkSimAgainstInterpret(*latched, "v5e", 9);
      // One push per weight row tile for the whole kernel; mms and pops per trip.
      const std::string& text = sim.compiled.machineText;
      size_t pushes = 0;
      for (size_t at = text.find("mxu.wpush"); at != std::string::npos;
           at = text.find("mxu.wpush", at + 1))
        ++pushes;
      CHECK(pushes == size_t(k / 8));
    }
  }
}

TEST_CASE("latched weights are gone after another dot; codegen refuses what it cannot latch") {
  auto clobbered = rowsDot(256, 128, true, true);
  CHECK_THROWS_WITH(interpretSeeded(*clobbered, 1), Catch::Contains("no weights latched"));
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  CHECK_THROWS_WITH(codegen::compileKernel(*clobbered, t),
                    Catch::Contains("no 256x128 weights latched before it"));
  // Five K chunks on four MXUs.
  auto tooDeep = rowsDot(640, 128, true);
  CHECK_THROWS_WITH(codegen::compileKernel(*tooDeep, t), Catch::Contains("one per MXU"));
  // A latched dot with no latch at all.
  CallConfig c;
  c.name = "unlatched";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({8, 128}, whole), BlockSpec({128, 128}, whole)};
  c.out_specs = {BlockSpec({8, 128}, whole)};
  auto call = pallas_call(
      [](Ref x, Ref w, Ref o) { o.store(dot(x.load(), w.load(), {.latched = true})); }, c);
  auto k = call.trace({{{8, 128}, BF16, "x"}, {{128, 128}, BF16, "w"}});
  CHECK_THROWS_WITH(interpretSeeded(*k, 1), Catch::Contains("no weights latched"));
}

namespace {

// out [64, 128] = x [64, k] . w, 16 rows at a time, each trip popping the
// previous trip's results (mxu_finish) before starting its own (mxu_start):
// the results cross the loop's back edge in the MXU.
std::unique_ptr<llo::Kernel> splitDot(int64_t k, bool finishFirst = true, bool extraDot = false) {
  CallConfig c;
  c.name = "split_dot";
  c.out_shapes = {{{64, 128}, F32, "out"}};
  c.grid = {1};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({64, k}, whole), BlockSpec({k, 128}, whole)};
  c.out_specs = {BlockSpec({64, 128}, whole)};
  c.scratch = {VMEM({8, 128}, F32)};
  auto call = pallas_call(
      [=](const std::vector<Ref>& r) {
        Ref x = r[0], w = r[1], o = r[2], t = r[3];
        mxu_latch(w.load());
        mxu_start(x.load(ds(0, 16), ds(0, k)), 128, 1);
        if (extraDot) t.store(dot(x.load(ds(0, 8), ds(0, k)), w.load(), {.latched = true}));
        fori_loop(1, 4, [&](Scalar i) {
          if (finishFirst) mxu_finish(o, ds(i * 16 - 16, 16), ds(0, 128), k, 1, false);
          mxu_start(x.load(ds(i * 16, 16), ds(0, k)), 128, 1);
        });
        mxu_finish(o, ds(48, 16), ds(0, 128), k, 1, false);
      },
      c);
  return call.trace({{{64, k}, BF16, "x"}, {{k, 128}, BF16, "w"}});
}

}  // namespace

TEST_CASE("results handed across a loop's back edge in the MXU: a plain dot's bits") {
  auto split = splitDot(512);
  std::string ir = llo::printKernel(*split);
  CHECK(ir.find("mxu_start") != std::string::npos);
  CHECK(ir.find("mxu_finish") != std::string::npos);
  HostArray a = interpretSeeded(*split, 4)[0];
  HostArray b = interpretSeeded(*rowsDot(512, 128, false), 4)[0];
  // rowsDot accumulates into zeros: the same sums (0 + x = x for every finite x).
  CHECK(testing::bitDifferences(b, a) == 0);
  // The simulator (--strict) equals interpret mode; the loop body's pops read
  // the previous trip's mms 2N + 7 cycles later (the compile checks every
  // block's timing, the loop body over two iterations).
  testing::checkSimAgainstInterpret(*split, "v5e", 4);
}

TEST_CASE("split latched dots: interpret mode refuses a lost or overwritten slot set") {
  CHECK_THROWS_WITH(interpretSeeded(*splitDot(256, false), 1),
                    Catch::Contains("still holds results no mxu_finish has taken"));
  CHECK_THROWS_WITH(interpretSeeded(*splitDot(256, true, true), 1),
                    Catch::Contains("while slot set 1 holds mxu_start results"));
}

TEST_CASE("the loop timing check sees a pop of the previous iteration's mm") {
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  auto body = [&](int length) {
    std::vector<isa::Bundle> b(static_cast<size_t>(length));
    auto& pop = b[0].slot(isa::SlotKind::MatrixPop, 0);
    pop.op = isa::Opcode::MxuPop;
    pop.operands = {5, 0, 2};
    auto& mm = b[1].slot(isa::SlotKind::MatrixPush, 0);
    mm.op = isa::Opcode::MxuMmBf16;
    mm.operands = {0, 1, 2};
    return b;
  };
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
  };
  // The next iteration's pop comes `length` cycles after its entry: the mm
  // at bundle 1 is ready at 1 + 2N + 7.
  CHECK_THAT(joined(codegen::checkLoopBlockTiming(body(100), t)),
             Catch::Contains("slot a2 not ready"));
  CHECK(codegen::checkLoopBlockTiming(body(1 + 7 + 2 * t.mxuSize), t).empty());
}

namespace {

// out [64, 128] = x [64, k] . w over a grid of 2 steps: step 1 streams x
// through the weights step 0 latched (DotOptions::latched_earlier), the way
// the flash kernel's deferred p x V does (its dot comes first in program
// order: the code generator cannot see the latch). `earlier` false: a plain
// latched dot, which the code generator refuses there.
std::unique_ptr<llo::Kernel> nextStepDot(int64_t k, bool earlier = true, bool latchFirst = true) {
  CallConfig c;
  c.name = "next_step_dot";
  c.out_shapes = {{{64, 128}, F32, "out"}};
  c.grid = {2};
  c.compiler_params.dimension_semantics = {ARBITRARY};
  auto whole = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({64, k}, whole), BlockSpec({k, 128}, whole)};
  c.out_specs = {BlockSpec({64, 128}, whole)};
  auto call = pallas_call(
      [=](Ref x, Ref w, Ref o) {
        Scalar step = program_id(0);
        when_else(
            step == (latchFirst ? 1 : 0),
            [&] {
              o.store(dot(x.load(), w.load(), {.latched = true, .latched_earlier = earlier}));
            },
            [&] {
              mxu_latch(w.load());
              o.store(zeros(64, 128));
            });
      },
      c);
  return call.trace({{{64, k}, BF16, "x"}, {{k, 128}, BF16, "w"}});
}

}  // namespace

TEST_CASE("weights latched in one grid step serve a latched dot in the next") {
  auto next = nextStepDot(512);
  CHECK(llo::printKernel(*next).find(" latched-earlier") != std::string::npos);
  HostArray a = interpretSeeded(*next, 6)[0];
  HostArray b = interpretSeeded(*rowsDot(512, 128, false), 6)[0];
  CHECK(testing::bitDifferences(b, a) == 0);
  testing::checkSimAgainstInterpret(*next, "v5e", 6);
  // Without the flag the code generator sees no latch before the dot.
  codegen::TargetInfo t = testing::kernelTarget("v5e");
  CHECK_THROWS_WITH(codegen::compileKernel(*nextStepDot(512, false), t),
                    Catch::Contains("no 512x128 weights latched before it"));
  // Interpret mode checks the grid's order: the dot before any latch.
  CHECK_THROWS_WITH(interpretSeeded(*nextStepDot(512, true, false), 6),
                    Catch::Contains("no weights latched"));
}
