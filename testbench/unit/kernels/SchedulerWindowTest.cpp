// The list scheduler's window (Scheduler.cpp, `oldest` and the lookahead): an
// MXU result in flight does not hold it back, and a kernel may widen it
// (dsl::CompilerParams::schedule_lookahead).
#include <catch2/catch.hpp>

#include "kernels/codegen/Prefetch.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/AttentionBackward.h"
#include "kernels/llo/Printer.h"
#include "testbench/unit/kernels/ScaledAddKernel.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using isa::Opcode;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }

// An mm and its pop (and the store of the result), then `fill` independent
// scalar immediates, then a load and a weight push for another MXU: index
// 5 + fill + 1 of the block.
MBlock popThenFarPush(MFunction& fn, int fill) {
  MBlock b;
  MOperand base = fn.newReg(RegClass::Scalar), x = fn.newReg(RegClass::Vector);
  MOperand r = fn.newReg(RegClass::Vector), w = fn.newReg(RegClass::Vector);
  b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
  MInstr ld = makeInstr(Opcode::VLd, {x, base, I(0), I(1), I(0xFF)});
  ld.mem = {MemAccess::Space::Vmem, 0, false, 0, 8};
  b.instrs.push_back(ld);
  b.instrs.push_back(makeInstr(Opcode::MxuMmBf16, {I(0), x, I(3)}));
  b.instrs.push_back(makeInstr(Opcode::MxuPop, {r, I(0), I(3)}));
  MInstr st = makeInstr(Opcode::VSt, {r, base, I(64), I(1), I(0xFF)});
  st.mem = {MemAccess::Space::Vmem, 1, true, 0, 8};
  b.instrs.push_back(st);
  for (int i = 0; i < fill; ++i)
    b.instrs.push_back(makeInstr(Opcode::SLi, {fn.newReg(RegClass::Scalar), I(i)}));
  MInstr wl = makeInstr(Opcode::VLd, {w, base, I(128), I(1), I(0xFF)});
  wl.mem = {MemAccess::Space::Vmem, 2, false, 0, 8};
  b.instrs.push_back(wl);
  b.instrs.push_back(makeInstr(Opcode::MxuWPushBf16, {I(1), w}));
  return b;
}

// The causal attention backward, 8 heads in one step at lookahead 6144: more
// than the 32 scalar registers in the block of its output dots, even after
// spilling.
std::unique_ptr<llo::Kernel> backwardAt6144() {
  lib::AttentionBackwardParams p;
  p.causal = true;
  p.heads = 8;
  p.headsPerStep = 8;
  p.scheduleLookahead = 6144;
  p.vmemLimitBytes = int64_t(96) << 20;
  return lib::attentionBackwardCall(8, 256, 256, 128, p)
      .trace(lib::attentionBackwardInputs(8, 256, 256, 128, 8));
}

}  // namespace

TEST_CASE("a pop waiting for its mm does not hold the scheduler's window") {
  TargetInfo t = testing::kernelTarget("v5e");
  const int ready = 7 + 2 * t.mxuSize;  // the pop's earliest cycle
  MFunction fn;
  // The far push is 1,100 places after the pop: past the default lookahead
  // (1024) from it, within it from the immediates the scalar slots work through.
  MBlock b = popThenFarPush(fn, 1100);
  BlockSchedule s = scheduleBlock(b, t);
  const size_t push = b.instrs.size() - 1;
  CHECK(s.cycle[3] >= ready);
  // Counted as the oldest, the pop (then its store) kept the push's load out
  // of the window until the pop issued.
  CHECK(s.cycle[push] < ready);
  // A window of 8 instructions: the push waits for the immediates before it.
  BlockSchedule narrow = scheduleBlock(b, t, 8);
  CHECK(narrow.cycle[push] >= 1100 / 2);
}

TEST_CASE("compiler_params.schedule_lookahead reaches the kernel IR") {
  auto call = [](int64_t lookahead) {
    dsl::CallConfig c;
    c.name = "copy";
    c.grid = {1};
    c.out_shapes = {{{8, 128}, dsl::F32, "y"}};
    auto map = [](const dsl::GridIndex&) { return std::vector<dsl::Scalar>{0, 0}; };
    c.in_specs = {dsl::BlockSpec({8, 128}, map)};
    c.out_specs = {dsl::BlockSpec({8, 128}, map)};
    c.compiler_params.schedule_lookahead = lookahead;
    return dsl::pallas_call([](const std::vector<dsl::Ref>& r) { r[1].store(r[0].load()); }, c)
        .trace({{{8, 128}, dsl::F32, "x"}});
  };
  auto k = call(6144);
  CHECK(k->scheduleLookahead == 6144);
  CHECK(llo::printKernel(*k).find("schedule_lookahead=6144") != std::string::npos);
  // The default prints nothing (the IR of every other kernel is unchanged).
  CHECK(llo::printKernel(*call(0)).find("schedule_lookahead") == std::string::npos);
  CHECK_THROWS_WITH(call(-1), Catch::Contains("compiler_params.schedule_lookahead = -1 must be"));
  CHECK_THROWS_WITH(call(int64_t(1) << 21), Catch::Contains("schedule_lookahead"));
}

TEST_CASE("the attention kernels reject a negative lookahead other than -1 (automatic)") {
  lib::AttentionBackwardParams p;
  p.scheduleLookahead = -5;
  CHECK_THROWS_WITH(lib::attentionBackwardCall(8, 256, 256, 128, p),
                    Catch::Contains("schedule_lookahead -5 must be -1 (automatic) or >= 0"));
  CHECK_THROWS_WITH(lib::attentionForwardCall(8, 256, 256, 128, p),
                    Catch::Contains("schedule_lookahead -5"));
  p.scheduleLookahead = -1;
  CHECK_NOTHROW(lib::attentionBackwardCall(8, 256, 256, 128, p));
}

TEST_CASE("a kernel whose lookahead runs out of registers compiles with the default") {
  auto k = backwardAt6144();
  CHECK(k->scheduleLookahead == 6144);
  const codegen::CompiledKernel c = compileKernel(*k, testing::kernelTarget("v6e"));
  CHECK(c.stats.bundles > 0);
}

// Scalar arithmetic reads and writes registers only: it moves up across a
// `dma` or a `sync.wait` (a step's variant test is ready while the wait
// stalls), while a load after the wait stays behind it and the wait stays
// after everything before it.
TEST_CASE("scalar arithmetic moves up across a dma and a sync.wait, a load does not") {
  TargetInfo t = testing::kernelTarget("v5e");
  MFunction fn;
  MBlock b;
  MOperand k = fn.newReg(RegClass::Scalar), last = fn.newReg(RegClass::Scalar);
  MOperand c = fn.newReg(RegClass::Scalar), base = fn.newReg(RegClass::Scalar);
  MOperand v = fn.newReg(RegClass::Vector), d = fn.newReg(RegClass::Scalar);
  b.instrs.push_back(makeInstr(Opcode::SLi, {k, I(3)}));     // 0
  b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));  // 1
  b.instrs.push_back(makeInstr(Opcode::SLi, {d, I(16)}));    // 2
  MInstr dma = makeInstr(Opcode::Dma, {d, I(0), I(0)});      // 3
  dma.mem = {MemAccess::Space::Smem, -1, false, -1, 0};
  b.instrs.push_back(dma);
  b.instrs.push_back(makeInstr(Opcode::SLi, {last, I(15)}));      // 4
  b.instrs.push_back(makeInstr(Opcode::SyncWait, {I(0), I(1)}));  // 5
  b.instrs.push_back(makeInstr(Opcode::SCmpEq, {c, k, last}));    // 6
  MInstr ld = makeInstr(Opcode::VLd, {v, base, I(0), I(1), I(0xFF)});
  ld.mem = {MemAccess::Space::Vmem, 0, false, 0, 8};
  b.instrs.push_back(ld);  // 7
  BlockSchedule s = scheduleBlock(b, t);
  CHECK(s.cycle[4] <= s.cycle[3]);  // the immediate beside (or before) the dma
  CHECK(s.cycle[5] > s.cycle[3]);   // the wait after the dma
  CHECK(s.cycle[5] > s.cycle[4]);   // and after the immediate before it
  CHECK(s.cycle[6] <= s.cycle[5]);  // the compare beside (or before) the wait
  CHECK(s.cycle[7] > s.cycle[5]);   // the load after it
}

// A carrying block (MBlock::mxuCarry: a resident matmul's K step) ends at its
// last mm instead of draining the MXU ports' 8 cycles; every such block lets
// its first weight push and mm of each MXU wait 7 cycles on entry instead.
TEST_CASE("a carrying block leaves its MXU ports' drain to the next block") {
  TargetInfo t = testing::kernelTarget("v5e");
  for (bool carry : {false, true}) {
    MFunction fn;
    MBlock b;
    b.mxuCarry = carry;
    MOperand base = fn.newReg(RegClass::Scalar), w = fn.newReg(RegClass::Vector);
    MOperand x = fn.newReg(RegClass::Vector);
    b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
    MInstr wl = makeInstr(Opcode::VLd, {w, base, I(0), I(1), I(0xFF)});
    wl.mem = {MemAccess::Space::Vmem, 0, false, 0, 8};
    b.instrs.push_back(wl);
    MInstr xl = makeInstr(Opcode::VLd, {x, base, I(64), I(1), I(0xFF)});
    xl.mem = {MemAccess::Space::Vmem, 1, false, 64, 8};
    b.instrs.push_back(xl);
    b.instrs.push_back(makeInstr(Opcode::MxuWPushBf16, {I(0), w}));     // 3
    b.instrs.push_back(makeInstr(Opcode::MxuLatch, {I(0)}));            // 4
    b.instrs.push_back(makeInstr(Opcode::MxuMmBf16, {I(0), x, I(3)}));  // 5
    BlockSchedule s = scheduleBlock(b, t);
    if (carry) {
      CHECK(s.cycle[3] >= 7);  // the block before's port may be busy
      CHECK(s.length == s.cycle[5] + 1);
    } else {
      CHECK(s.length == s.cycle[5] + 7 + 2 * t.mxuSize + 1);  // the result lands
    }
  }
}

TEST_CASE("a kernel's lookahead is kept over the next kernel's prefetch") {
  // The same kernel, linked, with the first blocks of a next kernel to start
  // in its last step: out of registers at its lookahead it throws (the module
  // lowering then drops the prefetch), and compiles without the prefetch.
  auto k = backwardAt6144();
  const TargetInfo t = testing::kernelTarget("v6e");
  auto next = testing::scaledAddCall("next", 512, 512, 128, false)
                  .trace({{{512, 512}, llo::DType::F32, "x"}, {{512, 512}, llo::DType::F32, "y"}});
  CompileOptions o;
  o.standalone = false;
  const int64_t mib = int64_t(1) << 20;
  o.inputAddresses = {0, mib, 2 * mib, 3 * mib};
  o.outputAddresses = {4 * mib, 5 * mib, 6 * mib};
  o.prefetchNext =
      planPrefetch(*next, t, {8 * mib, 10 * mib}, {}, /*fromTop=*/true, t.vmemRows() / 2);
  REQUIRE(!o.prefetchNext.empty());
  CHECK_THROWS_AS(compileKernel(*k, t, o), RegisterPressureError);
  o.prefetchNext = {};
  CHECK(compileKernel(*k, t, o).stats.bundles > 0);
}

// The driver's retry list (Compile.cpp): every distinct schedule tried,
// shortest first, tagged with its lookahead; the first is scheduleBlock's.
TEST_CASE("a block's schedules come shortest first, scheduleBlock's first") {
  TargetInfo t = testing::kernelTarget("v5e");
  MFunction fn;
  MBlock b = popThenFarPush(fn, 1100);
  const std::vector<BlockSchedule> all = scheduleBlockVariants(b, t, 2048);
  REQUIRE(!all.empty());
  const BlockSchedule first = scheduleBlock(b, t, 2048);
  CHECK(all.front().cycle == first.cycle);
  CHECK(all.front().length == first.length);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK((all[i].lookahead == 0 || all[i].lookahead == 2048));
    if (i > 0) CHECK(all[i - 1].length <= all[i].length);
  }
  // The default lookahead and the kernel's differ here (the far push):
  // both are kept.
  CHECK(all.size() == 2);
}
