// The tiling model (kernels/tiling/Tiling.h, as fusion lowering sees it) on the shapes of a
// transformer layer, for a v5e-like target: K-resident dot blocks, edge blocks
// over narrow divisors, the VMEM budget, and loop blocks big enough to hide
// the per-step overhead.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <array>

#include "compiler/lower/fusion/Tiling.h"
#include "kernels/llo/Types.h"

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

// v6e (sim/chips/v6e.json): 4 MXUs of 256x256 with 64 result slots, 128 MiB
// of VMEM, 1640 GB/s at 1.75 GHz, an 8 KiB HBM interleave line.
TilingTarget v6eLike() {
  TilingTarget t;
  t.vmemBytes = int64_t(128) << 20;
  t.mxuSize = 256;
  t.mxuCount = 4;
  t.accSlots = 64;
  t.hbmBytesPerCycle = 1640e9 / 1.75e9;
  t.hbmInterleaveBytes = 8192;
  return t;
}

// VMEM of a dot kernel's blocks with an accumulator (bf16 operands, K divided).
int64_t dotVmem(const DotBlocking& b) { return dotVmemBytes(b.bm, b.bn, b.bk, true, 2, 2); }

}  // namespace

TEST_CASE("a prefill FFN dot keeps K resident and takes a wide edge block") {
  TilingTarget t = v5eLike();
  // [2048, 4096] x [4096, 11008]: 11008 = 86 x 128, so 256 is the widest
  // dividing column block below 11008 / 2; a wider block with a partial last
  // one re-reads the LHS less (the dot has an epilogue and fused operands:
  // half of VMEM).
  DotBlocking b = chooseDotBlocks(1, 2048, 11008, 4096, 2, 2, 2, t);
  CHECK(b.bk == 4096);
  CHECK(b.bn > 256);
  CHECK(b.bn % 128 == 0);
  CHECK(11008 % b.bn != 0);
  CHECK(dotVmem(b) <= t.vmemBudget());
  CHECK(b.why.find(fmt::format("bm={} bn={} bk=4096", b.bm, b.bn)) != std::string::npos);
  // The model's choice is at least as cheap as the old fixed 512 x 1024 blocks.
  CHECK(b.estimatedCycles <= dotBlockCost(1, 2048, 11008, 4096, 512, 1024, 4096, 2, 2, 2, t));
}

TEST_CASE("a v6e 4096^3 plain dot keeps K whole in 2048 x 1024 blocks") {
  // The issue-17 roofline row: 512-row blocks re-read y eight times (HBM-bound
  // on v6e); 2048 rows fit when the dot's blocks may take most of VMEM.
  TilingTarget t = v6eLike();
  t.dotEpilogue = false;
  t.dotOperandsAreInputs = true;
  DotBlocking b = chooseDotBlocks(1, 4096, 4096, 4096, 2, 2, 4, t);
  CHECK(b.bk == 4096);  // K not split: no accumulator load / add / store
  CHECK(b.bm == 2048);
  CHECK(b.bn == 1024);
  int64_t vmem = dotVmemBytes(b.bm, b.bn, b.bk, false, 2, 2);
  CHECK(vmem <= t.dotVmemBudget());
  CHECK(vmem > t.vmemBudget());  // it needs more than half of VMEM
  // With fused operands (VMEM temporaries the model does not count) the same
  // dot keeps half of VMEM for them.
  t.dotOperandsAreInputs = false;
  DotBlocking h = chooseDotBlocks(1, 4096, 4096, 4096, 2, 2, 4, t);
  CHECK(dotVmemBytes(h.bm, h.bn, h.bk, false, 2, 2) <= t.vmemBudget());
  CHECK(h.estimatedCycles > b.estimatedCycles);
}

TEST_CASE("dot VMEM is priced as the code generator lays blocks out") {
  // Every element takes a 32-bit word of an (8, 128) tile: bf16 and s8 are
  // not packed in VMEM (kernels/llo/Types.h, TiledLayout), so a bf16 block
  // costs as much as an f32 one.
  auto layoutBytes = [](int64_t r, int64_t c) {
    return tpusim::kernels::llo::tiledLayout({r, c}).totalBytes();
  };
  for (auto [bm, bn, bk] : {std::array<int64_t, 3>{2048, 1024, 4096}, {100, 200, 300}}) {
    int64_t blocks = 2 * (layoutBytes(bm, bk) + layoutBytes(bk, bn) + layoutBytes(bm, bn));
    CHECK(dotVmemBytes(bm, bn, bk, false, 2, 2) == blocks);
    CHECK(dotVmemBytes(bm, bn, bk, false, 1, 1) == blocks);
    CHECK(dotVmemBytes(bm, bn, bk, true, 2, 2) == blocks + layoutBytes(bm, bn));
    // f32 operands are cast into bf16 copies of their blocks.
    CHECK(dotVmemBytes(bm, bn, bk, false, 4, 2) == blocks + layoutBytes(bm, bk));
  }
}

TEST_CASE("dot blocks shrink to the VMEM budget") {
  TilingTarget t = v5eLike();
  t.vmemBytes = int64_t(16) << 20;  // 8 MiB for blocks
  DotBlocking b = chooseDotBlocks(1, 2048, 11008, 4096, 2, 2, 2, t);
  CHECK(dotVmem(b) <= t.vmemBudget());
  CHECK(b.bk < 4096);
}

TEST_CASE("a decode dot (M = 1) streams wide weight blocks") {
  TilingTarget t = v5eLike();
  DotBlocking b = chooseDotBlocks(1, 1, 11008, 4096, 2, 2, 2, t);
  CHECK(b.bm == 1);
  CHECK(b.bn >= 2048);                           // long HBM runs
  CHECK(b.bn * b.bk * 2 >= (int64_t(2) << 20));  // at least 2 MiB of weights per step
  // Its K steps keep their results in the MXU result slots, so a step costs
  // no fill and drain: K is split into smaller blocks (a smaller exposed first
  // block) than when each step drains.
  CHECK(b.bk < 4096);
  CHECK(dotResultsFitMxu(1, b.bm, b.bn, t));
}

TEST_CASE("clearly DMA-bound steps keep two weight copies in flight") {
  TilingTarget t = v5eLike();
  // bf16 weights of an M = 1 dot: HBM moves 273 weights per cycle, the MXUs
  // push ~500: every step waits on DMA, and a third RHS buffer hides the
  // start of each copy.
  CHECK(chooseDotBlocks(1, 1, 4096, 4096, 2, 2, 2, t).rhsBuffers == 3);
  // int8 weights: HBM and the weight port within a few percent, two buffers.
  CHECK(chooseDotBlocks(1, 1, 4096, 4096, 2, 1, 2, t).rhsBuffers == 2);
  // A prefill dot is MXU-bound.
  CHECK(chooseDotBlocks(1, 2048, 4096, 4096, 2, 2, 4, t).rhsBuffers == 2);
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

TEST_CASE("an 11008-wide int8 decode weight takes N blocks balanced over the MXUs") {
  TilingTarget t = v5eLike();
  // 86 column tiles: in one block (or two of 43) the busiest of 4 MXUs takes
  // 22 per K chunk; blocks of at most 4096 columns (29 tiles) dealt it 8 of
  // each 29, 24 in all.
  DotBlocking b = chooseDotBlocks(1, 1, 11008, 4096, 2, 1, 2, t);
  CHECK(b.bn > 4096);
  const int64_t tiles = (b.bn + 127) / 128, blocks = (11008 + b.bn - 1) / b.bn;
  CHECK(blocks * ((tiles + 3) / 4) == 22);  // the busiest MXU: 22 tiles per K chunk
  CHECK(b.estimatedCycles < dotBlockCost(1, 1, 11008, 4096, 1, 3712, b.bk, 2, 1, 2, t));
}

TEST_CASE("N blocks past 4096 columns only where they balance the MXUs better") {
  TilingTarget t = v5eLike();
  // 14336 = 112 column tiles: 3584-column blocks already give each of 4 MXUs
  // 7 per block, so the wider block (the model's longer HBM runs) is not taken.
  DotBlocking b = chooseDotBlocks(1, 1, 14336, 4096, 2, 2, 2, t);
  CHECK(b.bn <= 4096);
}

TEST_CASE("s8 x s8 dots take K blocks of whole packed 2N-deep tiles") {
  TilingTarget t = v5eLike();
  t.int8Rate = 2;
  // The LHS is quantized in the dot's prologue (read as bf16): the MXU still
  // runs s8 x s8, so a 128-deep K block would fill half of each packed tile.
  t.dotMxuInt8 = true;
  DotBlocking q = chooseDotBlocks(1, 1, 11008, 4096, 2, 1, 2, t);
  CHECK(q.bk % 256 == 0);
  CHECK(chooseDotBlocks(1, 1, 11008, 4096, 1, 1, 2, t).bk % 256 == 0);
  // Priced 2N deep: half the weight pushes of the same block run unpacked.
  TilingTarget unpacked = t;
  unpacked.dotMxuInt8 = false;
  CHECK(dotBlockCost(1, 1, 4096, 4096, 1, 4096, 512, 2, 1, 2, t) <
        dotBlockCost(1, 1, 4096, 4096, 1, 4096, 512, 2, 1, 2, unpacked));
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

TEST_CASE("a reduced lane dim with only small divisors is one block") {
  TilingTarget t = v5eLike();
  // A decode step's softmax sum over [heads, cache length] (f32 in, f32 out
  // per head): 2176 = 17 x 128 would walk 17 steps of 128 lanes per row
  // block; it takes the whole row as 2177 (no divisor) does, so the kernel's
  // time follows the length. A length with a wide divisor keeps it.
  std::vector<BlockUse> uses = {{true, true, 2, 4}, {true, false, 2, 4}};
  CHECK(chooseLoopBlock(32, 2176, false, true, uses, t).cols == 2176);
  CHECK(chooseLoopBlock(32, 2177, false, true, uses, t).cols == 2177);
  CHECK(chooseLoopBlock(32, 2304, false, true, uses, t).cols == 768);
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

TEST_CASE("a small kernel whose first blocks are prefetched keeps at most two steps") {
  TilingTarget t = v5eLike();
  // The tiny prefill's RoPE of q: x and the output bf16 [256, 8, 128], the
  // two f32 [256, 128] tables: 1.25 MiB, about 2.4k cycles of HBM traffic.
  const double bytes = 2.0 * 256 * 1024 * 2 + 2.0 * 256 * 128 * 4;
  CHECK(smallKernelSteps(bytes, t) == 4);
  TilingTarget prefetched = t;
  prefetched.firstBlocksPrefetched = true;
  CHECK(smallKernelSteps(bytes, prefetched) == 2);
  // Its planes: 256 positions of [8, 128]; two steps of 128 positions.
  std::vector<BlockUse> uses = {
      {true, true, 2, 2, true}, {false, true, 2, 4, true}, {true, true, 2, 2, true}};
  LoopBlock plane = chooseLoopBlock(8, 128, false, false, uses, prefetched);
  REQUIRE(plane.rows == 8);
  CHECK(chooseLeadBlock(256, plane, uses, prefetched) == 128);
  // A kernel too small for two steps keeps one.
  CHECK(smallKernelSteps(100.0 * t.hbmBytesPerCycle, prefetched) == 1);
}

TEST_CASE("sibling dots are priced with an RHS block and an accumulator each") {
  // The tiny prefill's gate and up projections: [256, 1024] x [1024, 2048], bf16.
  TilingTarget one = v5eLike(), two = v5eLike();
  two.dotRhsCount = 2;
  CHECK(dotVmemBytes(256, 512, 512, true, 2, 2, 2) ==
        dotVmemBytes(256, 512, 512, true, 2, 2) + 2 * 512 * 512 * 4 + 256 * 512 * 4);
  // At the same blocks, the pair costs more than one dot (twice the MXU work
  // and weight bytes) and less than two (one LHS block, one fill and drain,
  // one output block).
  const double single = dotBlockCost(1, 256, 2048, 1024, 256, 512, 1024, 2, 2, 2, one);
  const double pair = dotBlockCost(1, 256, 2048, 1024, 256, 512, 1024, 2, 2, 2, two);
  CHECK(pair > single);
  CHECK(pair < 2 * single);
  DotBlocking b = chooseDotBlocks(1, 256, 2048, 1024, 2, 2, 2, two);
  CHECK(dotVmemBytes(b.bm, b.bn, b.bk, true, 2, 2, 2) <= two.dotVmemBudget());
  CHECK(b.why.find("2 sibling dots") != std::string::npos);
}

TEST_CASE("a sibling kernel's epilogue is priced under the next N block's matmul") {
  // The tiny prefill's gate and up projections on v6e: in one 2048-wide block
  // the 8 MiB of weights, the MXU work and SwiGLU run one after another; in
  // two, block 0's SwiGLU runs under block 1's matmul (DotLowering's
  // pipelined epilogue) and block 1's weights load under block 0's (measured:
  // 501,062 cycles against 525,557 for the whole workload).
  TilingTarget two = v6eLike();
  two.dotRhsCount = 2;
  DotBlocking b = chooseDotBlocks(1, 256, 2048, 1024, 2, 2, 2, two);
  CHECK(b.bm == 256);
  CHECK(b.bn == 1024);
  CHECK(b.bk == 1024);
  // The pipelining is the sibling lowering's: one dot of the shape keeps
  // its single block.
  TilingTarget one = v6eLike();
  CHECK(chooseDotBlocks(1, 256, 2048, 1024, 2, 2, 2, one).bn == 2048);
}

TEST_CASE("weight rows of half an interleave line alternate its halves") {
  // [2048, 1024] bf16 weights on a 4 KiB line: a 512-column block reads 1 KiB
  // runs 2 KiB apart, which cover two quarters of the line (all channels,
  // two bank groups); the same runs a multiple of the line apart (an RHS read
  // through strides, dotRhsRunBytes) cover one.
  TilingTarget t = v5eLike(), strided = v5eLike();
  strided.dotRhsRunBytes = 1024;
  CHECK(dotBlockCost(1, 256, 1024, 2048, 256, 512, 2048, 2, 2, 2, t) <
        dotBlockCost(1, 256, 1024, 2048, 256, 512, 2048, 2, 2, 2, strided));
  // The tiny prefill's down projection then takes one K block (measured
  // faster: 794,084 cycles for the workload against 802,521 with 1024 x 1024).
  DotBlocking b = chooseDotBlocks(1, 256, 1024, 2048, 2, 2, 2, t);
  CHECK(b.bn == 512);
  CHECK(b.bk == 2048);
}

TEST_CASE("a transposed-LHS dot is priced at the transpose unit and keeps no results in the MXU") {
  // The workload's weight gradient dy^T x on v6e: [1024 x 65536] (dy given as
  // [65536, 1024]) x [65536, 2048]. Each step's LHS block goes through the
  // transpose unit (256 cycles per 128 x 128 block), which bounds the dot.
  TilingTarget t = v6eLike();
  t.dotEpilogue = false;
  t.dotOperandsAreInputs = true;
  t.dotLhsTransposed = true;
  DotBlocking b = chooseDotBlocks(1, 1024, 2048, 65536, 2, 2, 2, t);
  const double transposes = double(1024 / 128) * (65536 / 128) * 256;  // 1,048,576
  CHECK(b.estimatedCycles >= transposes);
  CHECK_FALSE(dotResultsFitMxu(1, 256, 256, t));
  // Blocks whose results do not fit the slots together pay the transposes and
  // then the MXU work of the later items: dearer than the MXU-bound estimate.
  t.dotLhsTransposed = false;
  CHECK(dotBlockCost(1, 1024, 2048, 65536, b.bm, b.bn, b.bk, 2, 2, 2, t) < b.estimatedCycles);
}
