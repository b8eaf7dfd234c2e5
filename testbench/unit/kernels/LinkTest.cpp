// Linking: two kernels compiled for their place in one program (caller's HBM
// addresses, absolute bundle indices, disjoint SMEM, no halt), the second
// reading the first's output, run on the simulator and compared bit for bit
// with interpret mode; and the errors the linker reports.
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

constexpr int64_t kRows = 64, kCols = 256;

PallasCall scaledAdd() { return testing::scaledAddCall("scaled_add", kRows, kCols, 32); }

isa::BufferDesc buffer(const std::string& name, uint64_t address, isa::BufferRole role) {
  return testing::f32ArrayBuffer(name, kRows, kCols, address, role);
}

struct Pair {
  std::unique_ptr<llo::Kernel> add, softmax;
};
Pair traced() {
  ShapeDtype a{{kRows, kCols}, F32, "x"}, b{{kRows, kCols}, F32, "y"};
  return {scaledAdd().trace({a, b}), lib::softmaxCall(kRows, kCols, 16).trace({a})};
}

}  // namespace

TEST_CASE("two linked kernels: the second reads the first's output, equal to interpret mode") {
  TargetInfo t = testing::kernelTarget("v5e");
  Pair k = traced();
  // The caller's buffer assignment: deliberately not where MemoryPlan would put them.
  const int64_t x = 4096, y = 1 << 20, mid = 3 << 20, out = (5 << 20) + 512;

  Module m;
  CompileOptions o1;
  o1.standalone = false;
  o1.inputAddresses = {x, y};
  o1.outputAddresses = {mid};
  o1.firstBundle = m.nextBundle();
  o1.smemBase = m.nextSmemWord();
  o1.hloInstruction = "add.1";
  CompiledKernel c1 = compileKernel(*k.add, t, o1);
  CHECK(c1.smemWords > 0);
  for (const isa::Bundle& b : c1.program.code)
    for (const isa::Instruction& in : b.slots) CHECK(in.op != isa::Opcode::Halt);
  CHECK(c1.program.buffers.empty());
  appendKernel(m, c1);

  int64_t mine = reserveSmem(m, 7, "the caller's loop counters");
  CHECK(mine == c1.smemWords);

  CompileOptions o2;
  o2.standalone = false;
  o2.inputAddresses = {mid};
  o2.outputAddresses = {out};
  o2.firstBundle = m.nextBundle();
  o2.smemBase = m.nextSmemWord();
  CHECK(o2.firstBundle == c1.program.code.size());
  CHECK(o2.smemBase == c1.smemWords + 7);
  CompiledKernel c2 = compileKernel(*k.softmax, t, o2);
  CHECK(c2.program.symbols.at(0).bundle == o2.firstBundle);
  appendKernel(m, c2);

  isa::Program p = finishModule(
      m,
      {buffer("x", x, isa::BufferRole::Input), buffer("y", y, isa::BufferRole::Input),
       buffer("mid", mid, isa::BufferRole::Output), buffer("out", out, isa::BufferRole::Output)});
  REQUIRE(p.debugMap.size() == 2);
  CHECK(p.debugMap[0].hloInstruction == "add.1");
  CHECK(p.debugMap[1].begin == o2.firstBundle);
  CHECK(p.debugMap[1].end == p.code.size() - 1);  // the final halt belongs to no kernel
  CHECK(p.costs.size() == 2);
  CHECK(p.code.back().slot(isa::SlotKind::Misc, 0).op == isa::Opcode::Halt);
  // The second kernel's mark names the second debug-map entry.
  bool marked = false;
  for (uint32_t c = o2.firstBundle; c < p.code.size(); ++c)
    for (const isa::Instruction& in : p.code[c].slots)
      if (in.op == isa::Opcode::Mark) marked = in.operands[0] == 1;
  CHECK(marked);

  std::mt19937_64 rng(7);
  HostArray xs = randomArray({kRows, kCols}, llo::DType::F32, rng);
  HostArray ys = randomArray({kRows, kCols}, llo::DType::F32, rng);
  HostArray want1 = interpret(*k.add, {xs, ys}).outputs.at(0);
  HostArray want2 = interpret(*k.softmax, {want1}).outputs.at(0);

  sim::SimResult r = testing::simulate("v5e", p, {{"x", xs}, {"y", ys}});
  CHECK(testing::bitDifferences(want1, testing::simOutput(r, "mid", want1)) == 0);
  CHECK(testing::bitDifferences(want2, testing::simOutput(r, "out", want2)) == 0);
  // The profile attributes cycles to both kernels through the renumbered marks.
  REQUIRE(r.ops.size() >= 2);
  CHECK(r.ops[0].name == c1.program.symbols[0].name);
  CHECK(r.ops[1].name == c2.program.symbols[0].name);
  CHECK(r.ops[0].stats.bundles > 0);
  CHECK(r.ops[1].stats.bundles > 0);
}

TEST_CASE("the linker and compile options reject inconsistent pieces") {
  TargetInfo t = testing::kernelTarget("v5e");
  Pair k = traced();
  CompileOptions o;
  o.standalone = false;
  o.inputAddresses = {0, 1 << 20};
  o.outputAddresses = {2 << 20};

  SECTION("wrong number of addresses") {
    o.inputAddresses = {0};
    CHECK_THROWS_WITH(compileKernel(*k.add, t, o),
                      Catch::Contains("inputAddresses has 1 addresses but the kernel has 2"));
  }
  SECTION("overlapping arrays") {
    o.outputAddresses = {(1 << 20) + 4096};
    CHECK_THROWS_WITH(compileKernel(*k.add, t, o), Catch::Contains("overlaps input 'y'"));
  }
  SECTION("code compiled for another bundle index") {
    Module m;
    o.firstBundle = 3;
    CHECK_THROWS_WITH(appendKernel(m, compileKernel(*k.add, t, o)),
                      Catch::Contains("compiled for firstBundle 3 but the module's code ends at "
                                      "bundle 0"));
  }
  SECTION("a standalone kernel") {
    Module m;
    o.standalone = true;
    CHECK_THROWS_WITH(appendKernel(m, compileKernel(*k.add, t, o)),
                      Catch::Contains("standalone = true"));
  }
  SECTION("SMEM shared with an earlier kernel") {
    Module m;
    CompiledKernel a = compileKernel(*k.add, t, o);
    appendKernel(m, a);
    CompileOptions o2;
    o2.standalone = false;
    o2.firstBundle = m.nextBundle();
    o2.smemBase = a.smemWords - 1;
    o2.inputAddresses = {2 << 20};
    o2.outputAddresses = {3 << 20};
    CHECK_THROWS_WITH(
        appendKernel(m, compileKernel(*k.softmax, t, o2)),
        Catch::Contains("overlap [0, " + std::to_string(a.smemWords) + ") of kernel 'scaled_add'"));
  }
  SECTION("overlapping buffers, and appending after finishing") {
    Module m;
    appendKernel(m, compileKernel(*k.add, t, o));
    CHECK_THROWS_WITH(finishModule(m, {buffer("a", 0, isa::BufferRole::Input),
                                       buffer("b", 1024, isa::BufferRole::Output)}),
                      Catch::Contains("buffer 'b' [1024, 66560) overlaps buffer 'a'"));
    Module n;
    finishModule(n, {});
    CHECK_THROWS_WITH(reserveSmem(n, 1, "x"), Catch::Contains("already finished"));
  }
  SECTION("SMEM past the chip's size") {
    Module m;
    m.smemCapacityWords = 100;
    reserveSmem(m, 60, "table a");
    reserveSmem(m, 30, "table b");
    reserveSmem(m, 10, "table b");  // ends exactly at the end: fits
    CHECK_THROWS_WITH(reserveSmem(m, 5, "table c"),
                      Catch::Contains("table c: SMEM words [100, 105) pass the end of SMEM: the "
                                      "program needs at least 105 words (420 bytes) but the "
                                      "chip's SMEM holds 100 words (400 bytes") &&
                          Catch::Contains("60 words  table a\n          40 words  table b\n"
                                          "           5 words  table c"));
    Module unlimited;
    CHECK(reserveSmem(unlimited, 1 << 20, "big") == 0);
  }
}
