// Deferred write-back (kernels/codegen/Drain.h): a linked kernel leaves its
// last write-back in flight and the kernel after it waits for it, at its start
// when it reads that output (or its rows and flags overlap), else at its end.
// Run on the simulator and compared bit for bit with interpret mode; dropping
// the wait of a kernel that reads the output gives wrong results, so the
// comparison catches a broken rule.
#include <catch2/catch.hpp>

#include <random>

#include "kernels/codegen/Link.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/lib/Softmax.h"
#include "testbench/unit/kernels/ScaledAddKernel.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using namespace tpusim::kernels::dsl;

namespace {

constexpr int64_t kRows = 512, kCols = 512;
constexpr int64_t kBytes = kRows * kCols * 4;

// out = 1.5 x + y in blocks of `rows` rows (1 MiB arrays: a long write-back,
// whose requests the next kernel's reads can overtake).
// `reversed`: the blocks from the last one down.
PallasCall scaledAdd(const std::string& name, int64_t rows, bool reversed = false) {
  return testing::scaledAddCall(name, kRows, kCols, rows, reversed);
}

isa::BufferDesc buffer(const std::string& name, uint64_t address, isa::BufferRole role) {
  return testing::f32ArrayBuffer(name, kRows, kCols, address, role);
}

CompileOptions linked(Module& m, std::vector<int64_t> in, std::vector<int64_t> out) {
  CompileOptions o;
  o.standalone = false;
  o.inputAddresses = std::move(in);
  o.outputAddresses = std::move(out);
  o.firstBundle = m.nextBundle();
  o.smemBase = m.nextSmemWord();
  return o;
}

const int64_t x = 4096, y = 2 << 20, mid = 4 << 20, other = 6 << 20, out = 8 << 20;

struct Inputs {
  HostArray xs, ys;
};
Inputs inputs() {
  std::mt19937_64 rng(11);
  return {randomArray({kRows, kCols}, llo::DType::F32, rng),
          randomArray({kRows, kCols}, llo::DType::F32, rng)};
}

}  // namespace

TEST_CASE("a deferred write-back: the kernel that reads it waits at its start") {
  TargetInfo t = testing::kernelTarget("v5e");
  ShapeDtype a{{kRows, kCols}, F32, "x"}, b{{kRows, kCols}, F32, "y"};
  auto add = scaledAdd("a", kRows).trace({a, b});
  // The first kernel's one write-back is all of `mid`; the second reads its
  // last rows first, while the start of that write-back is still under way.
  auto next = scaledAdd("b", 128, /*reversed=*/true).trace({a, b});
  Inputs in = inputs();
  HostArray wantMid = interpret(*add, {in.xs, in.ys}).outputs.at(0);
  HostArray wantOut = interpret(*next, {wantMid, in.ys}).outputs.at(0);

  auto run = [&](bool wait) {
    Module m;
    CompileOptions o1 = linked(m, {x, y}, {mid});
    o1.deferWriteBack = true;
    CompiledKernel c1 = compileKernel(*add, t, o1);
    REQUIRE(c1.pendingWriteBacks.size() == 1);
    CHECK(c1.pendingWriteBacks[0].output == 0);
    CHECK(c1.pendingWriteBacks[0].count >= 1);
    appendKernel(m, c1);
    CompileOptions o2 = linked(m, {mid, y}, {out});
    if (wait) {
      o2.drainBefore.copies = c1.pendingWriteBacks;
      o2.drainBefore.atStart = true;  // it reads `mid`: what the module lowerer decides
    }
    CompiledKernel c2 = compileKernel(*next, t, o2);
    CHECK(c2.drainedAt == (wait ? DrainAt::Start : DrainAt::None));
    appendKernel(m, c2);
    isa::Program p = finishModule(
        m,
        {buffer("x", x, isa::BufferRole::Input), buffer("y", y, isa::BufferRole::Input),
         buffer("mid", mid, isa::BufferRole::Output), buffer("out", out, isa::BufferRole::Output)});
    return testing::simulate("v5e", p, {{"x", in.xs}, {"y", in.ys}});
  };
  sim::SimResult r = run(true);
  CHECK(testing::bitDifferences(wantMid, testing::simOutput(r, "mid", wantMid)) == 0);
  CHECK(testing::bitDifferences(wantOut, testing::simOutput(r, "out", wantOut)) == 0);
  // Without the wait the second kernel reads `mid` before all of it is written.
  sim::SimResult bad = run(false);
  CHECK(testing::bitDifferences(wantMid, testing::simOutput(bad, "mid", wantMid)) == 0);
  CHECK(testing::bitDifferences(wantOut, testing::simOutput(bad, "out", wantOut)) > 0);
}

TEST_CASE("a deferred write-back: a kernel that does not touch it waits at its end") {
  TargetInfo t = testing::kernelTarget("v5e");
  ShapeDtype a{{kRows, kCols}, F32, "x"}, b{{kRows, kCols}, F32, "y"};
  auto add = scaledAdd("a", 128).trace({a, b});
  auto add2 = scaledAdd("b", 128).trace({a, b});
  auto last = scaledAdd("c", 128).trace({a, b});
  Inputs in = inputs();
  HostArray wantMid = interpret(*add, {in.xs, in.ys}).outputs.at(0);
  HostArray wantOut = interpret(*last, {wantMid, in.ys}).outputs.at(0);

  SECTION("allocated from the other end (a prefetch chain): at its end") {
    Module m;
    // The second kernel's first blocks of x and y, started by the first: it
    // allocates from the top, away from the first kernel's rows and flags.
    PrefetchPlan plan =
        planPrefetch(*add2, t, {x, y}, {{mid, mid + kBytes}}, /*fromTop=*/true, t.vmemRows() / 2);
    REQUIRE(plan.streams.size() == 2);
    CompileOptions o1 = linked(m, {x, y}, {mid});
    o1.deferWriteBack = true;
    o1.prefetchNext = plan;
    CompiledKernel c1 = compileKernel(*add, t, o1);
    REQUIRE(c1.pendingWriteBacks.size() == 1);
    appendKernel(m, c1);
    CompileOptions o2 = linked(m, {x, y}, {other});
    o2.prefetched = plan;
    o2.deferWriteBack = true;
    o2.drainBefore.copies = c1.pendingWriteBacks;
    CompiledKernel c2 = compileKernel(*add2, t, o2);
    CHECK(c2.drainedAt == DrainAt::End);
    REQUIRE(c2.pendingWriteBacks.size() == 1);
    appendKernel(m, c2);
    // The third reads `mid` (waited for by the second) and waits for `other`'s.
    CompileOptions o3 = linked(m, {mid, y}, {out});
    o3.drainBefore.copies = c2.pendingWriteBacks;
    CompiledKernel c3 = compileKernel(*last, t, o3);
    CHECK(c3.drainedAt != DrainAt::None);
    appendKernel(m, c3);
    isa::Program p = finishModule(
        m, {buffer("x", x, isa::BufferRole::Input), buffer("y", y, isa::BufferRole::Input),
            buffer("mid", mid, isa::BufferRole::Output),
            buffer("other", other, isa::BufferRole::Output),
            buffer("out", out, isa::BufferRole::Output)});
    sim::SimResult r = testing::simulate("v5e", p, {{"x", in.xs}, {"y", in.ys}});
    CHECK(testing::bitDifferences(wantMid, testing::simOutput(r, "mid", wantMid)) == 0);
    CHECK(testing::bitDifferences(wantMid, testing::simOutput(r, "other", wantMid)) == 0);
    CHECK(testing::bitDifferences(wantOut, testing::simOutput(r, "out", wantOut)) == 0);
  }
  SECTION("allocated from the same end: its rows and flags are the pending ones, at its start") {
    Module m;
    CompileOptions o1 = linked(m, {x, y}, {mid});
    o1.deferWriteBack = true;
    CompiledKernel c1 = compileKernel(*add, t, o1);
    appendKernel(m, c1);
    CompileOptions o2 = linked(m, {x, y}, {other});
    o2.drainBefore.copies = c1.pendingWriteBacks;
    CHECK(compileKernel(*add2, t, o2).drainedAt == DrainAt::Start);
  }
  SECTION("standalone kernels cannot defer") {
    CompileOptions o;
    o.deferWriteBack = true;
    CHECK_THROWS_WITH(compileKernel(*add, t, o), Catch::Contains("need linked kernels"));
  }
}
