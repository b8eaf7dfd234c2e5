// Flash attention and decode attention (contiguous and paged KV cache) in
// interpret mode against their double-precision C++ references.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "isa/support/Numerics.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/lib/DecodeAttention.h"
#include "kernels/lib/FlashAttention.h"
#include "kernels/llo/Interpreter.h"
#include "kernels/llo/Printer.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// bf16-representable values in [-lim, lim) (the reference sees exactly the inputs).
std::vector<float> randomBf16(size_t n, uint64_t seed, float lim = 2.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> f(-lim, lim);
  std::vector<float> v(n);
  for (float& x : v) x = roundToBf16(f(rng));
  return v;
}

std::vector<double> asDoubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

HostArray ints(std::vector<int64_t> shape, const std::vector<int32_t>& v) {
  return HostArray::fromInts(std::move(shape), S32, v);
}

// Worst |out - ref| over all elements (NaN counts as infinitely wrong).
double worstError(const HostArray& out, const std::vector<double>& ref) {
  REQUIRE(out.size() == int64_t(ref.size()));
  double worst = 0;
  for (int64_t i = 0; i < out.size(); ++i) {
    double e = std::fabs(double(out.floatAt(i)) - ref[size_t(i)]);
    worst = std::max(worst, std::isnan(e) ? std::numeric_limits<double>::infinity() : e);
  }
  return worst;
}

// Error budget: p is rounded to bf16 before the MXU (relative 2^-9 on each
// weight, |v| <= 2), and a bf16 output rounds once more (2^-9 of |out| <= 2).
double tolerance(DType out) { return out == BF16 ? 1.2e-2 : 6e-3; }

struct FlashCase {
  int64_t bh, seqQ, seqK, d, bq, bk;
  bool causal;
  DType out;
  bool overlap = false;  // FlashAttentionParams::overlap (with mxuSize 128)
  int64_t groups = 1;
  // V latched on v5e's four MXUs (latchV, mxuCount 4), p x V deferred to the
  // next step (pvNext) or not.
  bool latchV = false, pvNext = false;
  // p x V of the score dot block's groups started there (pvEarly, with
  // v5e's 32 result slots per MXU).
  bool pvEarly = false;
  // The next step's scores made in this one (scoreNext, V latched).
  bool scoreNext = false;
  // A q block's last step makes the next q block's first scores (scoreNextQ).
  bool scoreNextQ = false;
  // Causal: q blocks i and nq - 1 - i paired on grid axis 1 (pairQ).
  bool pairQ = false;
};

lib::FlashAttentionParams flashParams(const FlashCase& c) {
  lib::FlashAttentionParams p;
  p.blockQ = c.bq;
  p.blockK = c.bk;
  p.causal = c.causal;
  p.outType = c.out;
  p.overlap = c.overlap;
  p.mxuSize = 128;
  p.groups = c.groups;
  p.latchV = c.latchV;
  p.mxuCount = c.latchV ? 4 : 0;
  p.pvNext = c.pvNext;
  p.accSlots = c.pvEarly ? 32 : 0;
  p.scoreNext = c.scoreNext;
  p.scoreNextQ = c.scoreNextQ;
  p.pairQ = c.pairQ;
  return p;
}

// The kernel as traced for `c`, printed (to tell two parameter sets apart).
std::string flashKernelText(const FlashCase& c) {
  return llo::printKernel(
      *lib::flashAttentionCall(c.bh, c.seqQ, c.seqK, c.d, flashParams(c))
           .trace(lib::flashAttentionInputs(c.bh, c.seqQ, c.seqK, c.d, c.groups)));
}

InterpretResult runFlash(const FlashCase& c, uint64_t seed = 3, bool shuffle = true) {
  INFO("flash attention bh=" << c.bh << " seq_q=" << c.seqQ << " seq_k=" << c.seqK << " d=" << c.d
                             << " blocks " << c.bq << "," << c.bk << (c.causal ? " causal" : "")
                             << " out " << isa::dtypeName(c.out));
  const lib::FlashAttentionParams p = flashParams(c);
  const int64_t kvh = c.bh / c.groups;
  auto q = randomBf16(size_t(c.bh * c.seqQ * c.d), seed);
  auto k = randomBf16(size_t(kvh * c.seqK * c.d), seed + 1);
  auto v = randomBf16(size_t(kvh * c.seqK * c.d), seed + 2);
  auto kernel = lib::flashAttentionCall(c.bh, c.seqQ, c.seqK, c.d, p)
                    .trace(lib::flashAttentionInputs(c.bh, c.seqQ, c.seqK, c.d, c.groups));
  InterpretOptions o;
  o.seed = seed;
  o.shuffleParallel = shuffle;
  auto res = interpret(*kernel,
                       {HostArray::fromFloats({c.bh, c.seqQ, c.d}, BF16, q),
                        HostArray::fromFloats({kvh, c.seqK, c.d}, BF16, k),
                        HostArray::fromFloats({kvh, c.seqK, c.d}, BF16, v)},
                       o);
  REQUIRE(res.races.empty());
  auto want = lib::flashAttentionReference(asDoubles(q), asDoubles(k), asDoubles(v), c.bh, c.seqQ,
                                           c.seqK, c.d, c.causal, 0, c.groups);
  double err = worstError(res.outputs[0], want);
  INFO("max abs error " << err);
  CHECK(err <= tolerance(c.out));
  if (getenv("ATTN_VERBOSE")) WARN("flash max abs error " << err);
  return res;
}

// Switches a kernel path on (`take`) and checks that the case's kernel text
// changes (the shape takes the path) while its output bits do not.
template <class Take>
void checkPathKeepsBits(FlashCase c, Take take) {
  InterpretResult base = runFlash(c);
  const std::string baseText = flashKernelText(c);
  take(c);
  CHECK(flashKernelText(c) != baseText);
  InterpretResult taken = runFlash(c);
  CHECK(taken.outputs[0].words == base.outputs[0].words);
}

// The sanitizer build (ASan + UBSan, 10x slower here) checks each kernel
// path's same-bits test on the listed cases only; the normal build on all.
#ifdef __SANITIZE_ADDRESS__
constexpr bool kSanitizerBuild = true;
#else
constexpr bool kSanitizerBuild = false;
#endif

template <size_t N>
std::vector<FlashCase> casesToRun(const FlashCase (&cases)[N],
                                  std::initializer_list<size_t> sanitized) {
  std::vector<FlashCase> run;
  for (size_t i = 0; i < N; ++i)
    if (!kSanitizerBuild || std::find(sanitized.begin(), sanitized.end(), i) != sanitized.end())
      run.push_back(cases[i]);
  return run;
}

// The block index along dimension 1 that mapping `m` of `kernel` gives at
// grid step (0, i, j): which q (or kv) block a step copies.
int64_t blockAt(const llo::Kernel& kernel, const llo::BlockMapping& m, int64_t i, int64_t j) {
  llo::Interpreter interp;
  std::vector<llo::Arg> args;
  for (int64_t id : {int64_t(0), i, j}) args.push_back(llo::Arg::ofScalar(int32_t(id)));
  return interp.run(*m.indexMap, args, llo::GridContext{kernel.grid, {0, i, j}}).at(1);
}

}  // namespace

TEST_CASE("flash attention matches the reference: head_dim 64 and 128, causal and not") {
  for (bool causal : {false, true}) {
    runFlash({2, 256, 256, 128, 128, 128, causal, BF16});
    runFlash({1, 256, 256, 64, 64, 128, causal, F32});
    runFlash({1, 128, 256, 64, 128, 256, causal, BF16});  // seq_q != seq_k
  }
}

TEST_CASE("flash attention with block_q != block_k straddles the diagonal correctly") {
  runFlash({1, 256, 256, 64, 256, 128, true, F32});  // a q block spans two kv blocks
  runFlash({1, 256, 256, 64, 64, 256, true, F32});   // a kv block spans four q blocks
}

TEST_CASE("flash attention on sequences that are not multiples of the blocks") {
  for (bool causal : {false, true}) {
    runFlash({2, 200, 300, 64, 64, 128, causal, F32});    // ragged q and kv blocks
    runFlash({1, 100, 72, 128, 128, 128, causal, BF16});  // one kv block narrower than 128
    runFlash({1, 77, 200, 128, 128, 512, causal, F32});   // block_k past seq_k (one padded block)
  }
}

TEST_CASE("causal flash attention skips the copies of blocks above the diagonal") {
  // bh 1, 3 x 3 blocks, grid in order. q: 3 blocks. k and v: q block i needs
  // kv blocks 0..i and the clamped index repeats block i after the diagonal, so
  // copies are 1 (q0) + 1 (q1: block 0 is still resident) + 3 (q2) = 5 each.
  auto causal = runFlash({1, 384, 384, 64, 128, 128, true, F32}, 3, /*shuffle=*/false);
  CHECK(causal.blockCopiesIn == 3 + 5 + 5);
  auto full = runFlash({1, 384, 384, 64, 128, 128, false, F32}, 3, /*shuffle=*/false);
  CHECK(full.blockCopiesIn == 3 + 9 + 9);
  CHECK(full.gridSteps == causal.gridSteps);
}

TEST_CASE("causal flash attention with block_k 384 (not a power of two) maps kv blocks exactly") {
  // 512 % 384 != 0: q block i needs kv blocks 0 .. (512 i + 511) / 384 = 1, 2, 3
  // (a multiply-and-shift on the scalar unit). Copies: k and v 2 + 3 + 4 each.
  auto r = runFlash({1, 1536, 1536, 128, 512, 384, true, F32}, 3, /*shuffle=*/false);
  CHECK(r.blockCopiesIn == 3 + 9 + 9);
  runFlash({2, 1000, 1100, 64, 512, 384, true, BF16});  // ragged q and kv blocks
}

TEST_CASE("flash attention's overlapped MXU phases give the same output bits", "[same-bits-pv]") {
  // updateChunked: several kv blocks (the chunks' scores, softmax and split
  // p x V interleaved in one block; the diagonal and ragged blocks keep
  // update), causal and not, GQA, head_dim 64 (p x V parts narrower than a
  // vreg), f32 and bf16 outputs. Any change in the order of the additions or a
  // chunk reading another chunk's rows shows up in the bits.
  const FlashCase cases[] = {
      {1, 1024, 1024, 128, 512, 512, true, F32},  // a full block below the diagonal
      {4, 512, 768, 64, 256, 256, false, BF16, false, 2},
      {2, 384, 640, 128, 384, 256, false, F32, false, 2},  // 3 chunks, ragged last kv block
  };
  for (FlashCase c : casesToRun(cases, {2})) {
    InterpretResult base = runFlash(c);
    c.overlap = true;
    InterpretResult over = runFlash(c);
    CHECK(over.outputs[0].words == base.outputs[0].words);
  }
}

TEST_CASE("flash attention's p x V deferred to the next step gives the same output bits",
          "[same-bits-pv]") {
  // pvNext: a step below the diagonal leaves its p x V to the next step,
  // which streams it through the still latched V before its score dot:
  // three kv steps (the middle one both takes and leaves one), causal (the
  // diagonal step takes one, the q block's last leaves none), a ragged last
  // kv block (plain p x V there), GQA with head_dim 64, f32 output. The
  // interpreter keeps the latched weights from one grid step to the next and
  // refuses the dot if another matmul replaced them.
  // pvNext needs 512-key blocks (128 x four MXUs); short query blocks keep the
  // interpreter's work small enough for the sanitizer run's time limit.
  const FlashCase cases[] = {
      {1, 256, 1536, 128, 128, 512, false, BF16},
      {1, 1024, 1024, 128, 512, 512, true, F32},
      {1, 200, 1300, 128, 128, 512, false, BF16},
      {2, 1024, 1024, 64, 512, 512, true, BF16, false, 2},
  };
  for (FlashCase c : casesToRun(cases, {0})) {
    c.latchV = true;
    checkPathKeepsBits(c, [](FlashCase& x) { x.pvNext = true; });
  }
}

TEST_CASE("flash attention's p x V started in the score dot's block gives the same output bits",
          "[same-bits-pv]") {
  // pvEarly: the groups the score dot's block finishes start their p x V
  // there (mxu_start, a slot set each) and the block after the slab loop
  // pops them (mxu_finish) before the other groups' p x V: two kv steps,
  // causal and not (the causal step below the diagonal takes the path),
  // ragged. Short query blocks (4 groups of 32 rows: 3 start early) keep the
  // interpreter's work small for the sanitizer run.
  const FlashCase cases[] = {
      {1, 128, 1024, 128, 128, 512, false, BF16},
      {1, 640, 1024, 128, 128, 512, true, F32},  // q block 4's kv block 0
      {1, 200, 1100, 64, 128, 512, false, BF16},
  };
  for (FlashCase c : casesToRun(cases, {0})) {
    c.latchV = true;
    checkPathKeepsBits(c, [](FlashCase& x) { x.pvEarly = true; });
  }
}

TEST_CASE("flash attention's scores made one step ahead give the same output bits",
          "[same-bits-scores]") {
  // scoreNext: K of the whole head in VMEM, the scores in two buffers by step
  // parity; an unmasked step makes the next step's scores (the q block's
  // first its own too). Four kv steps (both parities, the last one makes
  // none), causal (a q block's steps below the diagonal, its diagonal step
  // makes its own), GQA (two q heads read one K head), f32 output, with and
  // without p x V started in the score block. Short query blocks keep the
  // interpreter's work small for the sanitizer run.
  const FlashCase cases[] = {
      {1, 128, 2048, 128, 128, 512, false, BF16},
      {1, 1536, 1536, 64, 512, 512, true, F32},  // q block 2: two steps below the diagonal
      {2, 128, 1024, 128, 128, 512, false, BF16, false, 2},
  };
  for (FlashCase c : casesToRun(cases, {0}))
    for (bool early : {false, true}) {
      c.latchV = true;
      c.pvEarly = early;
      c.scoreNext = false;
      checkPathKeepsBits(c, [](FlashCase& x) { x.scoreNext = true; });
    }
}

TEST_CASE("flash attention's next q block's first scores made ahead give the same output bits",
          "[same-bits-scores]") {
  // scoreNextQ: q of the whole head in VMEM, a q block's last step makes the
  // next q block's first scores (and that step, ready, writes m, l and acc
  // without reading them). Two and three q blocks, two and four kv steps,
  // two heads (the last q block of head 0 makes none: head 1's first makes
  // its own), GQA, f32 output.
  const FlashCase cases[] = {
      {1, 384, 1024, 128, 128, 512, false, BF16},
      {2, 256, 2048, 64, 128, 512, false, F32, false, 2},
  };
  for (FlashCase c : casesToRun(cases, {0}))
    for (bool early : {false, true}) {
      c.latchV = true;
      c.pvEarly = early;
      c.scoreNext = true;
      checkPathKeepsBits(c, [](FlashCase& x) { x.scoreNextQ = true; });
    }
}

TEST_CASE("causal flash attention's diagonal makes the next q block's first scores: same bits") {
  // Causal scoreNextQ: q of the whole head in VMEM; the diagonal step of a
  // q block with a next one makes that block's first scores (into a third
  // buffer: its own last part still reads its scores) under its last part,
  // and that first step is a ready one (fresh). Two q blocks of 512 rows
  // (the smallest diagonal in parts with V latched on four MXUs), q block
  // 0's diagonal in buffer 0 (the one the next scores once overwrote); one
  // head (the sanitizer build's time limit).
  FlashCase c{1, 1024, 1024, 64, 512, 512, true, F32};
  c.latchV = true;
  c.pvEarly = true;
  c.scoreNext = true;
  checkPathKeepsBits(c, [](FlashCase& x) { x.scoreNextQ = true; });
}

TEST_CASE("flash attention says why the scores are not made one step ahead") {
  // v5e's MXUs (4 of 128): V is latched with 512-key blocks.
  lib::FlashAttentionParams p;
  p.blockQ = p.blockK = 512;
  p.mxuSize = 128;
  p.mxuCount = 4;
  p.latchV = true;
  CHECK(lib::flashScoreNextFallback(2048, 128, p).empty());  // scoreNext off: nothing to say
  p.scoreNext = true;
  CHECK(lib::flashScoreNextFallback(2048, 128, p).empty());  // taken
  CHECK_THAT(lib::flashScoreNextFallback(2000, 128, p),
             Catch::Contains("seq_k 2000 is not a multiple of block_k 512"));
  CHECK_THAT(lib::flashScoreNextFallback(512, 128, p), Catch::Contains("one K/V block"));
  // 8192 keys: 8 MiB of K buffers, over a quarter of the DSL's default 16 MiB.
  CHECK_THAT(lib::flashScoreNextFallback(8192, 128, p),
             Catch::Contains("over a quarter of the VMEM limit 16777216"));
  p.vmemLimitBytes = int64_t(96) << 20;
  CHECK(lib::flashScoreNextFallback(8192, 128, p).empty());
  CHECK_THAT(lib::flashScoreNextFallback(2048, 256, p), Catch::Contains("head_dim 256"));
  p.blockK = 256;
  CHECK_THAT(lib::flashScoreNextFallback(2048, 128, p),
             Catch::Contains("block_k 256 is not mxu.count x 128 = 512"));
  p.blockK = 512;
  p.latchV = false;
  CHECK_THAT(lib::flashScoreNextFallback(2048, 128, p), Catch::Contains("latch_v off"));
  p.latchV = true;
  p.pvNext = true;
  CHECK_THAT(lib::flashScoreNextFallback(2048, 128, p), Catch::Contains("pv_next"));
  // The reason is the kernel's own rule: with a fallback K comes in
  // block_k rows per step, with none as the whole head.
  p.pvNext = false;
  CHECK(lib::flashAttentionCall(1, 512, 2048, 128, p).config().in_specs[1].block_shape[1] == 2048);
  CHECK(lib::flashAttentionCall(1, 512, 2000, 128, p).config().in_specs[1].block_shape[1] == 512);
}

TEST_CASE("causal flash attention copies the next q block's first blocks during its diagonal") {
  // Blocks of 256 rows, 4 q blocks and 4 kv blocks; (i, kv) for kv > i are
  // skipped. Their q and V blocks are those of step (i + 1, 0), so the
  // pipeline copies them during step (i, i); the last q block has none; K
  // (the whole head) and the output keep their blocks.
  lib::FlashAttentionParams p;
  p.blockQ = p.blockK = 256;
  p.causal = true;
  auto kernel = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                    .trace(lib::flashAttentionInputs(1, 1024, 1024, 128, 1));
  auto block = [&](const llo::BlockMapping& m, int64_t i, int64_t j) {
    return blockAt(*kernel, m, i, j);
  };
  const llo::BlockMapping &q = kernel->inMaps.at(0), &v = kernel->inMaps.at(2),
                          &out = kernel->outMaps.at(0);
  for (int64_t qi = 0; qi < 4; ++qi)
    for (int64_t kv = 0; kv < 4; ++kv) {
      INFO("step (" << qi << ", " << kv << ")");
      const bool skippedToNext = kv > qi && qi < 3;
      CHECK(block(q, qi, kv) == (skippedToNext ? qi + 1 : qi));
      CHECK(block(v, qi, kv) == (skippedToNext ? 0 : std::min(kv, qi)));
      CHECK(block(out, qi, kv) == qi);
    }
  // Not causal: the blocks of the step itself.
  p.causal = false;
  auto plain = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                   .trace(lib::flashAttentionInputs(1, 1024, 1024, 128, 1));
  kernel = std::move(plain);
  CHECK(block(kernel->inMaps.at(0), 1, 3) == 1);
  CHECK(block(kernel->inMaps.at(2), 1, 3) == 3);
}

TEST_CASE("causal flash attention pairs q blocks i and nq - 1 - i: no skipped steps") {
  // Blocks of 256 rows, 4 q blocks: grid (1, 2, 5); pair 0 runs q block 0's
  // kv block 0, then q block 3's 0..3; pair 1 q block 1's 0..1, then q
  // block 2's 0..2. Every step computes (10 steps, as many as the causal
  // blocks), K/V follow the step's kv block and the output its q block.
  lib::FlashAttentionParams p;
  p.blockQ = p.blockK = 256;
  p.causal = true;
  p.pairQ = true;
  CHECK(lib::flashPairsQ(1024, 1024, p));
  auto kernel = lib::flashAttentionCall(1, 1024, 1024, 128, p)
                    .trace(lib::flashAttentionInputs(1, 1024, 1024, 128, 1));
  CHECK(kernel->grid == std::vector<int64_t>{1, 2, 5});
  auto block = [&](const llo::BlockMapping& m, int64_t i, int64_t j) {
    return blockAt(*kernel, m, i, j);
  };
  const llo::BlockMapping &q = kernel->inMaps.at(0), &k = kernel->inMaps.at(1),
                          &v = kernel->inMaps.at(2), &out = kernel->outMaps.at(0);
  const std::vector<std::pair<int64_t, int64_t>> want[2] = {
      {{0, 0}, {3, 0}, {3, 1}, {3, 2}, {3, 3}}, {{1, 0}, {1, 1}, {2, 0}, {2, 1}, {2, 2}}};
  for (int64_t pair = 0; pair < 2; ++pair)
    for (int64_t j = 0; j < 5; ++j) {
      INFO("step (" << pair << ", " << j << ")");
      auto [qi, kv] = want[pair][size_t(j)];
      CHECK(block(q, pair, j) == qi);
      CHECK(block(k, pair, j) == kv);
      CHECK(block(v, pair, j) == kv);
      CHECK(block(out, pair, j) == qi);
    }
  // Not paired: an odd number of q blocks, block_q != block_k, seq_q != seq_k, not causal.
  CHECK_FALSE(lib::flashPairsQ(768, 768, p));
  p.blockQ = 128;
  CHECK_FALSE(lib::flashPairsQ(1024, 1024, p));
  p.blockQ = 256;
  CHECK_FALSE(lib::flashPairsQ(1024, 2048, p));
  p.causal = false;
  CHECK_FALSE(lib::flashPairsQ(1024, 1024, p));
}

TEST_CASE("causal flash attention with paired q blocks gives the same output bits") {
  // Four q blocks of 128 rows (the order 0, 3, 1, 2), two heads, GQA,
  // head_dim 64; and two q blocks of 512 with the diagonal making the next
  // q block's first scores (V latched on four MXUs, scoreNextQ; ~9 s, not
  // in the sanitizer build).
  const FlashCase cases[] = {
      {2, 512, 512, 64, 128, 128, true, F32, false, 2},
      {1, 1024, 1024, 64, 512, 512, true, BF16},
  };
  for (FlashCase c : casesToRun(cases, {0})) {
    c.latchV = c.pvEarly = c.scoreNext = c.scoreNextQ = c.bq == 512;
    checkPathKeepsBits(c, [](FlashCase& x) { x.pairQ = true; });
  }
}

TEST_CASE("flash attention parameter errors are clear") {
  CHECK_THROWS_WITH(lib::flashAttentionCall(1, 256, 256, 100), Catch::Contains("head_dim 100"));
  lib::FlashAttentionParams p;
  p.blockK = 192;
  CHECK_THROWS_WITH(lib::flashAttentionCall(1, 256, 512, 128, p),
                    Catch::Contains("block_k 192 must be a multiple of 128"));
  p = {};
  p.blockQ = 12;
  CHECK_THROWS_WITH(lib::flashAttentionCall(1, 256, 256, 128, p),
                    Catch::Contains("block_q 12 must be a multiple of 8"));
  p = {};
  p.outType = S32;
  CHECK_THROWS_WITH(lib::flashAttentionCall(1, 256, 256, 128, p),
                    Catch::Contains("must be bf16 or f32"));
  p = {};
  p.pvEarly = -2;
  CHECK_THROWS_WITH(lib::flashAttentionCall(1, 256, 256, 128, p),
                    Catch::Contains("pv_early -2 must be -1"));
}

namespace {

// Cache positions at or past each sequence's length hold NaN: the kernel must
// never let them reach a result (masked scores, zeroed v rows).
void poisonPastLength(std::vector<float>& cache, const lib::DecodeShape& s, int64_t maxLen,
                      const std::vector<int32_t>& lengths) {
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.kvHeads; ++h)
      for (int64_t j = lengths[size_t(b)]; j < maxLen; ++j)
        for (int64_t e = 0; e < s.headDim; ++e)
          cache[size_t(((b * s.kvHeads + h) * maxLen + j) * s.headDim + e)] =
              std::numeric_limits<float>::quiet_NaN();
}

void checkDecode(const lib::DecodeShape& s, int64_t maxLen, int64_t bk,
                 const std::vector<int32_t>& lengths) {
  INFO("decode attention batch " << s.batch << " kv_heads " << s.kvHeads << " group " << s.group
                                 << " d " << s.headDim << " max_len " << maxLen << " block_k "
                                 << bk);
  lib::DecodeAttentionParams p;
  p.blockK = bk;
  auto q = randomBf16(size_t(s.batch * s.kvHeads * s.group * s.headDim), 31);
  auto k = randomBf16(size_t(s.batch * s.kvHeads * maxLen * s.headDim), 32);
  auto v = randomBf16(size_t(s.batch * s.kvHeads * maxLen * s.headDim), 33);
  auto want =
      lib::decodeAttentionReference(lengths, asDoubles(q), asDoubles(k), asDoubles(v), s, maxLen);
  poisonPastLength(k, s, maxLen, lengths);
  poisonPastLength(v, s, maxLen, lengths);
  auto kernel = lib::decodeAttentionCall(s, maxLen, p).trace(lib::decodeAttentionInputs(s, maxLen));
  std::vector<int64_t> qs{s.batch, s.kvHeads, s.group, s.headDim},
      cs{s.batch, s.kvHeads, maxLen, s.headDim};
  auto res =
      interpret(*kernel, {ints({s.batch}, lengths), HostArray::fromFloats(qs, BF16, q),
                          HostArray::fromFloats(cs, BF16, k), HostArray::fromFloats(cs, BF16, v)});
  REQUIRE(res.races.empty());
  double err = worstError(res.outputs[0], want);
  INFO("max abs error " << err);
  CHECK(err <= tolerance(F32));
}

}  // namespace

TEST_CASE("decode attention over a contiguous cache masks past each sequence's length") {
  checkDecode({2, 2, 1, 128}, 1024, 256, {1024, 333});
  checkDecode({3, 1, 4, 64}, 384, 128, {1, 129, 256});  // GQA: 4 q heads per kv head
  checkDecode({1, 2, 8, 128}, 1000, 512, {999});        // capacity not a multiple of the block
  checkDecode({2, 1, 2, 64}, 100, 512, {100, 50});      // one block narrower than 128
}

TEST_CASE("decode attention copies no block past the length") {
  lib::DecodeShape s{1, 1, 1, 128};
  lib::DecodeAttentionParams p;
  p.blockK = 512;
  auto kernel = lib::decodeAttentionCall(s, 2048, p).trace(lib::decodeAttentionInputs(s, 2048));
  std::vector<HostArray> in{
      ints({1}, {700}), HostArray::fromFloats({1, 1, 1, 128}, BF16, randomBf16(128, 1)),
      HostArray::fromFloats({1, 1, 2048, 128}, BF16, randomBf16(2048 * 128, 2)),
      HostArray::fromFloats({1, 1, 2048, 128}, BF16, randomBf16(2048 * 128, 3))};
  auto res = interpret(*kernel, in);
  // q once, k and v: blocks 0 and 1 of 512 (length 700); 4 grid steps.
  CHECK(res.gridSteps == 4);
  CHECK(res.blockCopiesIn == 1 + 2 + 2);
}

namespace {

void checkPaged(const lib::DecodeShape& s, const lib::PagedLayout& pg,
                const std::vector<int32_t>& lengths, uint64_t seed) {
  INFO("paged attention batch " << s.batch << " kv_heads " << s.kvHeads << " group " << s.group
                                << " d " << s.headDim << " pages " << pg.numPages << " x "
                                << pg.pageSize << ", " << pg.pagesPerSeq << " per sequence");
  // A random page table: each sequence gets distinct physical pages.
  std::mt19937_64 rng(seed);
  std::vector<int32_t> perm(size_t(pg.numPages));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  REQUIRE(s.batch * pg.pagesPerSeq <= pg.numPages);
  std::vector<int32_t> table(perm.begin(), perm.begin() + s.batch * pg.pagesPerSeq);
  auto q = randomBf16(size_t(s.batch * s.kvHeads * s.group * s.headDim), seed + 1);
  size_t cacheSize = size_t(s.kvHeads * pg.numPages * pg.pageSize * s.headDim);
  auto k = randomBf16(cacheSize, seed + 2), v = randomBf16(cacheSize, seed + 3);
  auto want =
      lib::pagedAttentionReference(lengths, table, asDoubles(q), asDoubles(k), asDoubles(v), s, pg);
  // Pages no sequence uses, and positions past a length inside a used page, are NaN.
  std::vector<bool> live(cacheSize / size_t(s.headDim), false);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < lengths[size_t(b)]; ++j)
      for (int64_t h = 0; h < s.kvHeads; ++h) {
        int64_t page = table[size_t(b * pg.pagesPerSeq + j / pg.pageSize)];
        live[size_t((h * pg.numPages + page) * pg.pageSize + j % pg.pageSize)] = true;
      }
  for (size_t r = 0; r < live.size(); ++r)
    if (!live[r])
      for (int64_t e = 0; e < s.headDim; ++e)
        k[r * size_t(s.headDim) + size_t(e)] = v[r * size_t(s.headDim) + size_t(e)] =
            std::numeric_limits<float>::quiet_NaN();
  auto kernel = lib::pagedAttentionCall(s, pg).trace(lib::pagedAttentionInputs(s, pg));
  std::vector<int64_t> cs{s.kvHeads, pg.numPages, pg.pageSize, s.headDim};
  auto res =
      interpret(*kernel, {ints({s.batch}, lengths), ints({s.batch, pg.pagesPerSeq}, table),
                          HostArray::fromFloats({s.batch, s.kvHeads, s.group, s.headDim}, BF16, q),
                          HostArray::fromFloats(cs, BF16, k), HostArray::fromFloats(cs, BF16, v)});
  REQUIRE(res.races.empty());
  double err = worstError(res.outputs[0], want);
  INFO("max abs error " << err);
  CHECK(err <= tolerance(F32));
}

}  // namespace

TEST_CASE("paged decode attention follows the page table") {
  checkPaged({3, 2, 1, 128}, {32, 16, 8}, {100, 128, 7}, 41);
  checkPaged({2, 2, 4, 64}, {16, 128, 4}, {512, 300}, 42);  // GQA, 128-position pages
  checkPaged({1, 1, 2, 128}, {8, 256, 3}, {513}, 43);       // 256-position pages
}

TEST_CASE("decode attention parameter errors are clear") {
  CHECK_THROWS_WITH(lib::decodeAttentionCall({1, 1, 1, 100}, 512), Catch::Contains("head_dim 100"));
  lib::DecodeAttentionParams p;
  p.blockK = 200;
  CHECK_THROWS_WITH(lib::decodeAttentionCall({1, 1, 1, 128}, 512, p),
                    Catch::Contains("block_k 200 must be a multiple of 128"));
  CHECK_THROWS_WITH(lib::pagedAttentionCall({1, 1, 1, 128}, {8, 200, 2}),
                    Catch::Contains("page_size 200"));
}
