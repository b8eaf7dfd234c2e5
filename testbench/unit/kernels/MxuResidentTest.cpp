// Matmul results kept in the MXU result slots across grid steps (resident
// matmuls, LowerMatmul.cpp): the K steps of a dot accumulate there and only the
// last pops them. The numerics are those of one dot over the whole K; a step
// ends without waiting for the MXU to drain, and the next block's entry rules
// (MBlock::mxuCarry) keep the code hazard-free.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "isa/support/Numerics.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/HazardCheck.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/lib/Matmul.h"
#include "kernels/llo/TileMath.h"
#include "kernels/tiling/Tiling.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::codegen;
using isa::Opcode;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }

std::vector<float> randomBf16(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> f(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = roundToBf16(f(rng));
  return v;
}

dsl::HostArray run(int64_t m, int64_t n, int64_t k, lib::MatmulBlocks b,
                   const std::vector<float>& xs, const std::vector<float>& ys) {
  auto kernel =
      lib::matmulCall(m, n, k, dsl::BF16, b).trace({{{m, k}, dsl::BF16}, {{k, n}, dsl::BF16}});
  dsl::InterpretOptions o;
  o.seed = 3;
  auto res = dsl::interpret(*kernel,
                            {dsl::HostArray::fromFloats({m, k}, dsl::BF16, xs),
                             dsl::HostArray::fromFloats({k, n}, dsl::BF16, ys)},
                            o);
  REQUIRE(res.races.empty());
  return res.outputs[0];
}

}  // namespace

TEST_CASE("continuing an MXU accumulation equals one dot over the whole K") {
  auto a = randomBf16(640, 1), b = randomBf16(640, 2);
  std::vector<uint32_t> aw, bw;
  for (float x : a) aw.push_back(f32ToBf16Bits(x));
  for (float x : b) bw.push_back(f32ToBf16Bits(x));
  uint32_t whole = llo::mxuDotBf16(aw.data(), bw.data(), 640, 128);
  uint32_t first = llo::mxuDotBf16(aw.data(), bw.data(), 256, 128);
  uint32_t rest = llo::mxuDotBf16From(first, aw.data() + 256, bw.data() + 256, 384, 128);
  CHECK(rest == whole);
}

TEST_CASE("resident K steps compute the unsplit dot bit for bit in interpret mode") {
  const int64_t m = 16, n = 256, k = 1000;  // K ragged: the last step is clipped
  auto xs = randomBf16(size_t(m * k), 7), ys = randomBf16(size_t(k * n), 8);
  dsl::HostArray whole = run(m, n, k, {m, n, k}, xs, ys);
  dsl::HostArray resident = run(m, n, k, {8, 128, 256, true}, xs, ys);
  for (int64_t i = 0; i < m * n; ++i) REQUIRE(resident.floatAt(i) == whole.floatAt(i));
}

TEST_CASE("which blocks keep their results in the MXU") {
  tiling::TilingTarget t;  // 4 MXUs of 128, 16 slots
  t.accSlots = 32;
  CHECK(tiling::dotResultsFitMxu(1, 1, 4096, t));          // 32 items, 8 per MXU, 1 slot each
  CHECK(tiling::dotResultsFitMxu(16, 1, 128, t));          // 16 heads, one item each
  CHECK(tiling::dotResultsFitMxu(1, 128, 512, t));         // 16 row tiles, one item per MXU
  CHECK(tiling::dotResultsFitMxu(1, 128, 1024, t));        // 2 items of 16 slots per MXU
  CHECK_FALSE(tiling::dotResultsFitMxu(1, 256, 1024, t));  // 2 items of 32 slots per MXU
  CHECK_FALSE(tiling::dotResultsFitMxu(1, 512, 128, t));   // 64 row tiles > 32 slots
}

TEST_CASE("a block that keeps MXU results in flight ends after the LHS port, not the drain") {
  TargetInfo t = testing::kernelTarget("v5e");
  MBlock b;
  MFunction fn;
  MOperand base = fn.newReg(RegClass::Scalar), x = fn.newReg(RegClass::Vector);
  b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
  MInstr ld = makeInstr(Opcode::VLd, {x, base, I(0), I(1), I(0xFF)});
  ld.mem = {MemAccess::Space::Vmem, 0, false, 0, 8};
  b.instrs.push_back(ld);
  b.instrs.push_back(makeInstr(Opcode::MxuMmaBf16, {I(0), x, I(3)}));
  BlockSchedule drained = scheduleBlock(b, t);
  b.mxuCarry = true;
  BlockSchedule carried = scheduleBlock(b, t);
  CHECK(drained.length >= 7 + 2 * t.mxuSize);
  CHECK(carried.length < 7 + 2 * t.mxuSize);
  // Its LHS port's 8 cycles go on into the next block, whose first push and
  // mm of each MXU wait 7 cycles (this block's own mm too).
  CHECK(carried.cycle[2] >= 7);
  CHECK(carried.length == carried.cycle[2] + 1);

  // On entry a pop of a slot this block does not mm waits 2N + 7, a latch N.
  MBlock e;
  e.mxuCarry = true;
  MOperand r = fn.newReg(RegClass::Vector);
  e.instrs.push_back(makeInstr(Opcode::MxuPop, {r, I(1), I(3)}));
  e.instrs.push_back(makeInstr(Opcode::MxuLatch, {I(2)}));
  BlockSchedule entry = scheduleBlock(e, t);
  CHECK(entry.cycle[0] >= 7 + 2 * t.mxuSize);
  CHECK(entry.cycle[1] >= t.mxuSize);
}

TEST_CASE("the timing check allows for MXU work carried across blocks") {
  TargetInfo t = testing::kernelTarget("v5e");
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
  };
  // An mm in the last bundle: a carrying block may end with its LHS port busy
  // (7 cycles into the next block), a drained one may not leave its result.
  std::vector<isa::Bundle> mmOnly(8);
  auto& mm = mmOnly[7].slot(isa::SlotKind::MatrixPush, 0);
  mm.op = Opcode::MxuMmBf16;
  mm.operands = {0, 1, 2};
  CHECK_THAT(joined(checkBlockTiming(mmOnly, t)), Catch::Contains("slot a2 is ready only"));
  CHECK(checkBlockTiming(mmOnly, t, true).empty());
  // On entry to a carrying block the ports may be busy 7 cycles more.
  std::vector<isa::Bundle> tooEarly(mmOnly.begin() + 4, mmOnly.end());
  CHECK_THAT(joined(checkBlockTiming(tooEarly, t, true)), Catch::Contains("LHS port busy until 7"));

  std::vector<isa::Bundle> early(2);
  auto& pop = early[0].slot(isa::SlotKind::MatrixPop, 0);
  pop.op = Opcode::MxuPop;
  pop.operands = {5, 0, 2};
  auto& latch = early[1].slot(isa::SlotKind::MatrixPush, 0);
  latch.op = Opcode::MxuLatch;
  latch.operands = {1};
  std::string p = joined(checkBlockTiming(early, t, true));
  CHECK_THAT(p, Catch::Contains("may hold an mm of the block before"));
  CHECK_THAT(p, Catch::Contains("latch before the previous latch"));
  CHECK(joined(checkBlockTiming(early, t)).find("may hold") == std::string::npos);
}

TEST_CASE("a resident K-split matmul has no pops before its last K step") {
  TargetInfo t = testing::kernelTarget("v5e");
  const int64_t m = 8, n = 1024, k = 2048;
  lib::MatmulBlocks b{8, 1024, 512, true};
  REQUIRE(lib::matmulResultsFitMxu(b.bm, b.bn, t));
  auto kernel =
      lib::matmulCall(m, n, k, dsl::BF16, b).trace({{{m, k}, dsl::BF16}, {{k, n}, dsl::BF16}});
  CompiledKernel ck = compileKernel(*kernel, t);  // re-checks every block's timing
  const std::string& text = ck.machineText;
  // The kb == 0 step starts the slots (mm), the middle steps go on (mma)
  // without a pop; the last step pops each of the 8 column tiles once.
  size_t firstMm = text.find("mxu.mm.bf16");
  size_t firstPop = text.find("mxu.pop");
  REQUIRE(firstMm != std::string::npos);
  REQUIRE(firstPop != std::string::npos);
  CHECK(text.find("mxu.mma.bf16") < firstPop);
  size_t pops = 0;
  for (size_t at = text.find("mxu.pop"); at != std::string::npos; at = text.find("mxu.pop", at + 1))
    ++pops;
  CHECK(pops == 8);
  // Without residency every K step pops its 8 tiles (and adds them to a VMEM
  // accumulator).
  b.resident = false;
  auto plain =
      lib::matmulCall(m, n, k, dsl::BF16, b).trace({{{m, k}, dsl::BF16}, {{k, n}, dsl::BF16}});
  CompiledKernel pk = compileKernel(*plain, t);
  size_t plainPops = 0;
  for (size_t at = pk.machineText.find("mxu.pop"); at != std::string::npos;
       at = pk.machineText.find("mxu.pop", at + 1))
    ++plainPops;
  CHECK(plainPops >= 8);
  CHECK(ck.program.costs[0].flops == pk.program.costs[0].flops);
  // Both K loops are peeled (first, middle, last step: three lowered copies
  // of the body); the cost table still counts each step's dot once.
  CHECK(text.find("first step") != std::string::npos);
  CHECK(pk.machineText.find("first step") != std::string::npos);
  CHECK(pk.program.costs[0].flops == 2.0 * double(m) * double(n) * double(k));
}

TEST_CASE("a ragged last K step reads only its valid part, resident or not, bf16 and packed s8") {
  // K = 4 x 512 + 100: the last step's dot is 100 deep (unpacked, where the
  // packed s8 steps before it are 256 deep) and goes on from the MXU slots or
  // the accumulator. Its only selects are the MXU lowering's of LHS lanes past
  // K (masking both blocks took 12 in the code), and it equals interpret mode
  // bit for bit on the simulator.
  const int64_t m = 8, n = 256, k = 2148;
  for (dsl::DType type : {dsl::BF16, dsl::S8})
    for (bool resident : {true, false}) {
      INFO((type == dsl::BF16 ? "bf16" : "s8") << (resident ? ", resident" : ", accumulator"));
      auto kernel = lib::matmulCall(m, n, k, type, {8, 256, 512, resident})
                        .trace({{{m, k}, type}, {{k, n}, type}});
      testing::SimCheck c = testing::checkSimAgainstInterpret(*kernel, "v5e", 11);
      size_t selects = 0;
      const std::string& text = c.compiled.machineText;
      for (size_t at = text.find("vsel"); at != std::string::npos; at = text.find("vsel", at + 1))
        ++selects;
      CHECK(selects <= 4);
    }
}
