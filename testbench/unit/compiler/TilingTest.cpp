// The tiling heuristic (compiler/lower/fusion/Tiling.h) on the shapes of a
// transformer layer, for a v5e-like target: K-resident dot blocks, edge blocks
// over narrow divisors, the VMEM budget, and loop blocks big enough to hide
// the per-step overhead.
#include <catch2/catch.hpp>

#include "compiler/lower/fusion/Tiling.h"

using namespace tpusim::lower;

namespace {

TilingTarget v5eLike() {
  TilingTarget t;
  t.vmemBytes = int64_t(128) << 20;
  t.mxuSize = 128;
  t.mxuCount = 4;
  t.hbmBytesPerCycle = 819.2e9 / 1.5e9;
  return t;
}

// VMEM of the dot kernel's blocks as the heuristic counts them (bf16 operands).
int64_t dotVmem(const DotBlocking& b) {
  auto tiled = [](int64_t r, int64_t c) { return (r + 7) / 8 * 8 * ((c + 127) / 128 * 128) * 4; };
  return 2 * (tiled(b.bm, b.bk) + tiled(b.bk, b.bn) + tiled(b.bm, b.bn)) + tiled(b.bm, b.bn);
}

}  // namespace

TEST_CASE("a prefill FFN dot keeps K resident and takes a wide edge block") {
  TilingTarget t = v5eLike();
  // [2048, 4096] x [4096, 11008]: 11008 = 86 x 128, so 256 is the widest
  // dividing column block; a 1024-wide block with a partial last one re-reads
  // the LHS far less.
  DotBlocking b = chooseDotBlocks(1, 2048, 11008, 4096, 2, 2, 2, t);
  CHECK(b.bk == 4096);
  CHECK(b.bn == 1024);
  CHECK(b.bm == 512);
  CHECK(dotVmem(b) <= t.vmemBudget());
  CHECK(b.why.find("bm=512 bn=1024 bk=4096") != std::string::npos);
}

TEST_CASE("dot blocks shrink to the VMEM budget") {
  TilingTarget t = v5eLike();
  t.vmemBytes = int64_t(16) << 20;  // 8 MiB for blocks
  DotBlocking b = chooseDotBlocks(1, 2048, 11008, 4096, 2, 2, 2, t);
  CHECK(dotVmem(b) <= t.vmemBudget());
  CHECK(b.bk < 4096);
}

TEST_CASE("a decode dot (M = 1) streams wide weight blocks") {
  DotBlocking b = chooseDotBlocks(1, 1, 11008, 4096, 2, 2, 2, v5eLike());
  CHECK(b.bm == 1);
  CHECK(b.bn * b.bk * 2 >= (int64_t(4) << 20));  // at least 4 MiB of weights per step
}

TEST_CASE("int8 decode weights are priced at one byte and read in long HBM runs") {
  TilingTarget t = v5eLike();
  // [1, 4096] x [4096, 4096] with s8 weights converted in the kernel: whole
  // 4 KiB weight rows per block (one contiguous run each), not 1 KiB pieces.
  DotBlocking s8 = chooseDotBlocks(1, 1, 4096, 4096, 2, 1, 2, t);
  CHECK(s8.bm == 1);
  CHECK(s8.bn == 4096);
  // Its estimate is about half the bf16 weights' (half the bytes; HBM-bound).
  DotBlocking bf16 = chooseDotBlocks(1, 1, 4096, 4096, 2, 2, 2, t);
  CHECK(s8.estimatedCycles < 0.6 * bf16.estimatedCycles);
}

TEST_CASE("loop blocks move enough bytes per step to hide the step overhead") {
  TilingTarget t = v5eLike();
  // exp(scores - max): one f32 input and one f32 output of [65536, 2048].
  std::vector<BlockUse> uses = {{true, true, 2, 4}, {true, true, 2, 4}};
  LoopBlock b = chooseLoopBlock(65536, 2048, false, false, uses, t);
  int64_t bytesPerStep = b.rows * b.cols * 8;
  CHECK(bytesPerStep / t.hbmBytesPerCycle >= 16 * kStepOverheadCycles);
  CHECK(65536 % b.rows == 0);
  // A reduced dim is divided exactly (padding would enter the result).
  LoopBlock r = chooseLoopBlock(65536, 2000, false, true, uses, t);
  CHECK(2000 % r.cols == 0);
}

TEST_CASE("small whole planes take several leading-axis planes per step") {
  TilingTarget t = v5eLike();
  // Rotary embedding of [2048 seq, 32 heads, 64]: x and the output span seq;
  // the [seq, 64] table does not span heads (rows).
  std::vector<BlockUse> uses = {
      {true, true, 2, 4, true}, {false, true, 2, 4, true}, {true, true, 2, 4, true}};
  LoopBlock plane = chooseLoopBlock(32, 64, false, false, uses, t);
  REQUIRE(plane.rows == 32);
  REQUIRE(plane.cols == 64);
  int64_t lb = chooseLeadBlock(2048, plane, uses, t);
  CHECK(lb > 1);
  CHECK(2048 % lb == 0);
  CHECK(plane.why.find(std::to_string(lb) + " planes per step") != std::string::npos);
  // Enough bytes per step to hide the overhead, not many times more.
  double bytes = double(lb) * (32 * 64 * 4 * 2 + 64 * 4);
  CHECK(bytes / t.hbmBytesPerCycle >= 8 * kStepOverheadCycles);
  // A plane that already moves enough stays one per step.
  std::vector<BlockUse> big = {{true, true, 2, 4, true}, {true, true, 2, 4, true}};
  LoopBlock whole{512, 1024, ""};  // 4 MiB of HBM traffic per step
  CHECK(chooseLeadBlock(64, whole, big, t) == 1);
}
