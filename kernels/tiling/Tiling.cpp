#include "kernels/tiling/Tiling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpusim::kernels::tiling {

TilingTarget TilingTarget::from(const kernels::codegen::TargetInfo& t) {
  TilingTarget out;
  out.vmemBytes = t.vmemBytes;
  out.mxuSize = t.mxuSize;
  out.mxuCount = t.mxuCount;
  out.accSlots = t.accSlots;
  out.int8Rate = t.int8Rate;
  out.hbmBytesPerCycle = t.hbmBytesPerCycle;
  out.hbmInterleaveBytes = t.hbmInterleaveBytes;
  if (t.hasHbm && hbmRunPricing()) {
    out.hbmRuns = std::make_shared<const HbmRunModel>(t.hbm, t.dma);
    out.dmaVmemBytesPerCycle = double(t.dma.vmem_bytes_per_cycle);
  }
  out.transposeBlockCycles = 16 * int64_t(t.transposePushInterval + t.transposePopInterval);
  return out;
}

bool& hbmRunPricing() {
  static bool on = false;
  return on;
}

int64_t dividingBlock(int64_t n, int64_t unit, int64_t limit) {
  if (n <= limit) return n;
  for (int64_t b = limit / unit * unit; b >= unit; b -= unit)
    if (n % b == 0) return b;
  return 0;
}

namespace {

// Caps that keep a block's unrolled code within what the code generator
// schedules in seconds: at most 16384 MXU pushes of 8 LHS rows per step (the
// library matmul's best v5e blocks, 512x1024x4096, and v6e's, 2048x1024x4096:
// docs/performance.md), a depth of 4096, and 4096 rows (beyond 512 in steps
// of 512, which keeps the search small); an element-wise row of 8 column tiles
// is unrolled per row tile. Columns up to 16384 (kBalancedDotCols): with few
// rows (a decode's M = 1) the push cap bounds the code, and a whole 11008-wide
// weight in one N block deals its 86 column tiles 22/22/21/21 to four MXUs,
// where blocks of at most 4096 columns (29 tiles: 8/7/7/7 per block) kept one
// MXU busy 1/8 longer.
constexpr int64_t kMaxDotRows = 4096, kMaxDotCols = 16384, kMaxDotDepth = 8192;
// N blocks wider than this only where they deal the column tiles more evenly
// to the MXUs than any narrower block (see chooseDotBlocks).
constexpr int64_t kBalancedDotCols = 4096;
constexpr int64_t kFineDotRows = 512;
constexpr int64_t kMaxDotPushesPerStep = 16384, kMaxLoopLanes = 1024;
// A reduced lane dim up to this wide is one block when its divisors within
// kMaxLoopLanes are all below half of it (2176 = 17 x 128: 128-lane steps,
// 17 of them per row block, where 2177 already took the whole row): a decode
// step's softmax then costs about the same at every cache length.
constexpr int64_t kMaxExactLoopLanes = 4096;
// Cycles per 8x128 result tile and grid step beyond the MXU stream: its pop,
// the accumulator's load / add / store and the epilogue (fitted to the
// library matmul on v5e, 4.5 to 8 cycles per tile over its block sweep).
constexpr double kDotCyclesPerResultTile = 6;
// The share of the HBM peak a DMA of contiguous runs of `bytes` reaches: a run
// of one 512-byte request pays about as much again in row activations and
// request overhead, long runs approach the peak. A run shorter than the
// interleave line (`line`: the bytes that reach every channel, pseudo-channel
// and bank group) keeps only the channels and bank groups of the bytes of the
// line it covers busy and leaves the others idle. Runs a multiple of the line
// apart (a block of a wide row-major matrix) cover `bytes` of it; rows of a
// fraction of the line (`stride`: 2 KiB rows on a 4 KiB line) tile it, and
// their runs cover line / stride parts of it (measured: the tiny prefill's
// 2 KiB-wide blocks of 4 KiB rows on v6e's 8 KiB line load as fast as whole
// rows). Strides past the line are left alone: each run then opens its own
// DRAM rows (the 7B FFN's 22016-byte rows in 512-byte runs were slower); so
// are runs of less than a 512-byte request (256-byte runs of 512-byte s8 rows
// took twice as long as the model's 1 KiB-run choice).
// kShortRunPenalty per missing byte is fitted to the library matmul on v6e
// (8 KiB line, 8 KiB rows): 1 KiB runs of y reach ~32% of the peak, 2 KiB
// runs of y with 4 KiB runs of the output ~63% (docs/performance.md).
constexpr double kShortRunPenalty = 0.23;
double runEfficiency(int64_t bytes, int64_t line, int64_t stride = 0) {
  double b = double(std::max<int64_t>(bytes, 1));
  int64_t covered = bytes;
  if (bytes >= 512 && stride > bytes && stride < line && line % stride == 0)
    covered = bytes * (line / stride);
  const double missing = double(std::max<int64_t>(line - covered, 0));
  return b / (b + 512.0 + kShortRunPenalty * missing * b / double(std::max<int64_t>(covered, 1)));
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t m) { return cdiv(a, m) * m; }

// VMEM bytes of a block: every element in its own 32-bit word, (8,128) tiles.
int64_t tiledBytes(int64_t rows, int64_t cols) { return roundUp(rows, 8) * roundUp(cols, 128) * 4; }

// Enough bytes that a step's DMA time covers the step overhead 32 times (an
// element-wise step of a 2048-lane row block measured ~250 cycles of overhead
// on v5e, not kStepOverheadCycles: a row loop per block).
double wantBytesPerStep(const TilingTarget& target) {
  return 32.0 * kStepOverheadCycles * target.hbmBytesPerCycle;
}

int64_t workingSet(int64_t br, int64_t bc, const std::vector<BlockUse>& uses) {
  int64_t total = 0;
  for (const BlockUse& u : uses) total += u.buffers * tiledBytes(u.rows ? br : 1, u.cols ? bc : 1);
  return total;
}

// Legal blocks of a dim, largest first: divisors that are multiples of `unit`
// (and the whole dim); when `exact` is false and nothing divides, multiples of
// `unit` too (edge blocks).
std::vector<int64_t> candidates(int64_t n, int64_t unit, int64_t limit, bool exact) {
  std::vector<int64_t> out;
  if (n <= limit) out.push_back(n);
  for (int64_t b = std::min(limit, n - 1) / unit * unit; b >= unit; b -= unit)
    if (n % b == 0) out.push_back(b);
  if (out.empty()) {
    if (exact) {
      out.push_back(n);  // the whole dim: always legal, maybe large
    } else {
      for (int64_t b = std::min(limit, n) / unit * unit; b >= unit; b -= unit) out.push_back(b);
      if (out.empty()) out.push_back(n);
    }
  }
  return out;
}

// Blocks of a dot dim, largest first: the whole dim if within the limit, and
// every multiple of `unit` below it (an edge block covers the rest: a wide
// block with a partial last one often beats a narrow divisor).
std::vector<int64_t> dotCandidates(int64_t n, int64_t unit, int64_t limit) {
  std::vector<int64_t> out;
  if (n <= limit) out.push_back(n);
  for (int64_t b = std::min(limit, n - 1) / unit * unit; b >= unit; b -= unit) out.push_back(b);
  if (out.empty()) out.push_back(n);
  return out;
}

// Row blocks of a dot, largest first: the whole dim within kMaxDotRows, then
// multiples of kFineDotRows above kFineDotRows and of 8 below it.
std::vector<int64_t> dotRowCandidates(int64_t m) {
  std::vector<int64_t> out;
  if (m <= kMaxDotRows) out.push_back(m);
  for (int64_t b = std::min(kMaxDotRows, m - 1) / kFineDotRows * kFineDotRows; b > kFineDotRows;
       b -= kFineDotRows)
    out.push_back(b);
  for (int64_t b = std::min(kFineDotRows, m - 1) / 8 * 8; b >= 8; b -= 8) out.push_back(b);
  if (out.empty()) out.push_back(m);
  return out;
}

}  // namespace

int64_t smallKernelSteps(double bytes, const TilingTarget& target) {
  double cycles = bytes / std::max(target.hbmBytesPerCycle, 1.0);
  double steps = std::floor(std::sqrt(cycles / double(kStepOverheadCycles)));
  return std::clamp<int64_t>(static_cast<int64_t>(steps), 1, target.firstBlocksPrefetched ? 2 : 8);
}

LoopBlock chooseLoopBlock(int64_t rows, int64_t cols, bool exactRows, bool exactCols,
                          const std::vector<BlockUse>& uses, const TilingTarget& target,
                          int64_t planes, bool wholeCols) {
  int64_t hbmPerElement = 0;
  for (const BlockUse& u : uses)
    if (u.rows && u.cols && u.buffers > 1) hbmPerElement += u.hbmBytesPerElement;
  hbmPerElement = std::max<int64_t>(hbmPerElement, 1);
  double wantBytes = wantBytesPerStep(target);
  int64_t wantElems =
      std::clamp<int64_t>(static_cast<int64_t>(wantBytes) / hbmPerElement, 8 * 128, 2048 * 1024);
  // A small kernel: a few steps (counting its planes as steps already).
  const int64_t total = rows * cols * std::max<int64_t>(planes, 1);
  const int64_t steps = smallKernelSteps(double(total * hbmPerElement), target);
  if (steps > planes) wantElems = std::min(wantElems, std::max<int64_t>(8 * 128, total / steps));
  const int64_t budget = target.vmemBudget();
  LoopBlock best;
  bool found = false;
  std::vector<int64_t> colBlocks = candidates(cols, 128, kMaxLoopLanes, exactCols);
  if (exactCols && cols > kMaxLoopLanes && cols <= kMaxExactLoopLanes &&
      colBlocks.front() < kMaxLoopLanes / 2)
    colBlocks.insert(colBlocks.begin(), cols);
  if (wholeCols) colBlocks = {cols};
  for (int64_t bc : colBlocks) {
    int64_t rowLimit = std::max<int64_t>(8, wantElems / std::max<int64_t>(bc, 1));
    for (int64_t br : candidates(rows, 8, rowLimit, exactRows)) {
      if (workingSet(br, bc, uses) > budget) continue;
      best = {br, bc, ""};
      found = true;
      break;
    }
    if (found) break;
  }
  if (!found) {  // nothing fits the budget: the smallest legal block
    auto rc = candidates(rows, 8, 8, exactRows), cc = candidates(cols, 128, 128, exactCols);
    if (wholeCols) cc = {cols};
    best = {rc.back(), cc.back(), ""};
  }
  best.why =
      fmt::format("block {}x{} of {}x{}: {} B of VMEM (budget {} B), {} B of HBM traffic per step",
                  best.rows, best.cols, rows, cols, workingSet(best.rows, best.cols, uses), budget,
                  best.rows * best.cols * hbmPerElement);
  return best;
}

LoopBlock wholeRowsBlock(const LoopBlock& b, int64_t rows, int64_t cols,
                         const std::vector<BlockUse>& uses, const TilingTarget& target) {
  if (b.cols >= cols || cols > kMaxExactLoopLanes || cols % b.cols != 0) return b;
  const int64_t bytes = workingSet(b.rows, cols, uses);
  if (bytes > target.vmemBudget()) return b;
  LoopBlock w{b.rows, cols, ""};
  w.why = fmt::format(
      "block {}x{} of {}x{} (whole rows, walked {} lanes at a time): {} B of VMEM (budget {} B)",
      w.rows, w.cols, rows, cols, b.cols, bytes, target.vmemBudget());
  return w;
}

int64_t chooseLeadBlock(int64_t leadSize, LoopBlock& plane, const std::vector<BlockUse>& uses,
                        const TilingTarget& target) {
  int64_t planeBytes = 0, leadVmem = 0, otherVmem = 0;
  for (const BlockUse& u : uses) {
    int64_t elems = (u.rows ? plane.rows : 1) * (u.cols ? plane.cols : 1);
    int64_t vmem = u.buffers * tiledBytes(u.rows ? plane.rows : 1, u.cols ? plane.cols : 1);
    if (u.lead && u.buffers > 1) planeBytes += elems * u.hbmBytesPerElement;
    (u.lead ? leadVmem : otherVmem) += vmem;
  }
  if (leadSize <= 1 || planeBytes <= 0) return 1;
  const double want = wantBytesPerStep(target);
  const int64_t steps = smallKernelSteps(double(leadSize * planeBytes), target);
  int64_t best = 1;
  for (int64_t lb = 2; lb <= leadSize; ++lb) {
    if (leadSize % lb) continue;
    if (leadSize / lb < steps) break;                  // a small kernel keeps a few steps
    if (double((lb - 1) * planeBytes) >= want) break;  // the previous one already moved enough
    if (otherVmem + lb * leadVmem > target.vmemBudget()) break;
    best = lb;
  }
  if (best > 1)
    plane.why += fmt::format("; {} planes per step (a loop in the kernel), {} B of HBM traffic",
                             best, best * planeBytes);
  return best;
}

namespace {
// bf16 x s8 (the dequantized int8 dot): s8 weights, widened in registers,
// read untransposed.
bool widenedS8Weights(int lhsInBytes, int rhsInBytes, const TilingTarget& target) {
  return rhsInBytes == 1 && lhsInBytes != 1 && !target.dotMxuInt8 && !target.dotRhsTransposed;
}
}  // namespace

bool dotResultsFitMxu(int64_t batch, int64_t bm, int64_t bn, const TilingTarget& target) {
  const int64_t mxu = std::max<int64_t>(target.mxuSize, 8);
  const int64_t rowTiles = cdiv(bm, 8), slots = std::max<int64_t>(target.accSlots, 1);
  if (rowTiles > slots || target.dotLhsTransposed) return false;
  const int64_t items = std::max<int64_t>(batch, 1) * cdiv(bn, mxu);
  return cdiv(items, std::max<int64_t>(target.mxuCount, 1)) * rowTiles <= slots;
}

int64_t dotVmemBytes(int64_t bm, int64_t bn, int64_t bk, bool accumulator, int lhsInBytes,
                     int rhsInBytes, int64_t rhsCount) {
  const int64_t r = std::max<int64_t>(rhsCount, 1);
  return 2 * (tiledBytes(bm, bk) + r * tiledBytes(bk, bn) + tiledBytes(bm, bn)) +
         (accumulator ? r * tiledBytes(bm, bn) : 0) + (lhsInBytes == 4 ? tiledBytes(bm, bk) : 0) +
         (rhsInBytes == 4 ? r * tiledBytes(bk, bn) : 0);
}

double dotBlockCost(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn,
                    int64_t bk, int lhsInBytes, int rhsInBytes, int outBytes,
                    const TilingTarget& target, DotStep* step) {
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t mxu = std::max<int64_t>(target.mxuSize, 8);
  const int64_t drain = 7 + 2 * mxu, fill = 8 * cdiv(mxu, 8);
  // K depth of one weight tile: 2N for s8 x s8 in the packed int8 mode.
  const bool int8 = target.dotMxuInt8 || (lhsInBytes == 1 && rhsInBytes == 1);
  const int64_t depth = target.int8Rate >= 2 && int8 ? 2 * mxu : mxu;
  // Dequantized s8 weights in K blocks of whole 2N-row chunks are copied
  // paired (PairPack.h): two weights per VMEM word at the DMA's VMEM port.
  const bool pairedWiden = widenedS8Weights(lhsInBytes, rhsInBytes, target) &&
                           (bk % (2 * mxu) == 0 || (bk >= k && k % (2 * mxu) == 0));
  const int64_t rhsCount = std::max<int64_t>(target.dotRhsCount, 1);
  const int64_t pushes = rhsCount * cdiv(bm, 8) * cdiv(bn, mxu) * cdiv(bk, depth);
  if (pushes > kMaxDotPushesPerStep) return inf;
  const int64_t mBlocks = cdiv(m, bm), nBlocks = cdiv(n, bn), kBlocks = cdiv(k, bk);
  // Double-buffered operand and output blocks, the accumulator (when K is
  // split or an epilogue reads the result), the bf16 copies f32 operands are
  // cast into before the dot, and the masked operand copies of a partial
  // last K block.
  const bool accumulator = kBlocks > 1 || target.dotEpilogue;
  if (dotVmemBytes(bm, bn, bk, accumulator, lhsInBytes, rhsInBytes, rhsCount) +
          (target.dotLhsTransposed ? tiledBytes(bm, bk) : 0) +
          2 * target.dotExtraBlocks * tiledBytes(bm, bn) >
      target.dotVmemBudget())
    return inf;
  // A step of bb batch entries: bb times the MXU work and bytes, one
  // fill and drain (the entries' matmuls overlap on the MXUs).
  const double bb = double(std::max<int64_t>(target.dotBatchBlock, 1));
  const double steps = double(batch) / bb * mBlocks * nBlocks * kBlocks;
  // One mm pushes 8 LHS rows through one (mxu x mxu) weight tile in 8
  // cycles; each weight tile takes 8 cycles per 8 of its rows on the
  // weight port and serves at most accSlots x 8 LHS rows (the result
  // slots), so a tile is bound by whichever port is busier: the weight
  // port for M = 1 decode and for 256-wide arrays.
  // A transposed push waits N cycles after the previous latch.
  const int64_t rowTiles = cdiv(bm, 8), slots = std::max<int64_t>(target.accSlots, 1);
  // A tile's pushes, then its latch (8 cycles after the last push); the next
  // tile's first push waits for the latch (isa/README.md, "MXU").
  const int64_t push = fill + 1 + (target.dotRhsTransposed ? mxu : 0);
  // The (row group, column tile) items of the step's bb entries are dealt
  // round-robin to the MXUs, each through every K chunk: the busiest MXU takes
  // ceil(items / MXUs) of them (8 items on 4 MXUs: 2 each; 29: 8 on one).
  const int64_t mxus = std::max<int64_t>(target.mxuCount, 1);
  const int64_t colTiles = cdiv(bn, mxu), chunks = cdiv(bk, depth);
  double itemCycles = 0;
  int64_t items = 0;
  for (int64_t g = 0; g < rowTiles; g += slots) {
    itemCycles += double(colTiles) * double(chunks) *
                  double(std::max<int64_t>(push, 8 * std::min(slots, rowTiles - g)));
    items += colTiles;
  }
  // Sibling dots are more items of the same step, as batch entries are.
  const double reps = bb * double(rhsCount);
  items *= int64_t(reps);
  double mxuCycles = reps * itemCycles / double(items) * double(cdiv(items, mxus));
  // A transposed LHS block (one for all sibling dots): the transpose unit works beside the MXUs, so
  // a step takes the longer of the two when an MXU's items go through the K chunks together (their
  // result slots apart: LowerMatmul.cpp); else its first item waits for the transposes and the
  // others follow.
  if (target.dotLhsTransposed) {
    const double transposes =
        bb * double(cdiv(bm, 128) * cdiv(bk, 128)) * double(target.transposeBlockCycles);
    const int64_t perMxu = cdiv(items, mxus);
    const bool together = perMxu * std::min(rowTiles, slots) <= slots;
    mxuCycles = together ? std::max(mxuCycles, transposes)
                         : transposes + mxuCycles * double(perMxu - 1) / double(perMxu);
  }
  // A block row is one contiguous run in HBM; short runs (a narrow RHS
  // block of a wide matrix) reach a fraction of the peak.
  const int64_t line = target.hbmInterleaveBytes;
  // The weights' rows lie a whole row apart (an RHS read through strides or
  // transposed: a multiple of the line assumed). Only the RHS: priced so for
  // the LHS and the output too, the tiny prefill's q / k / v projections took
  // blocks that ran slower (docs/performance.md, "sibdefault").
  const bool rhsRows = target.dotRhsRunBytes <= 0 && !target.dotRhsTransposed;
  double lhsEff = runEfficiency(
      target.dotLhsRunBytes > 0 ? target.dotLhsRunBytes : std::min(bk, k) * lhsInBytes, line);
  double rhsEff = runEfficiency(
      target.dotRhsRunBytes > 0 ? target.dotRhsRunBytes : std::min(bn, n) * rhsInBytes, line,
      rhsRows ? n * rhsInBytes : 0);
  double outEff = runEfficiency(std::min(bn, n) * outBytes, line);
  // With the preset's HBM model (HbmRuns.h; tpuc --hbm-run-model): the RHS
  // block by its runs, stride and rows (the LHS and the output too measured
  // slower: the tiny prefill v5e +4.6%, docs/performance.md "hbmbg").
  if (const HbmRunModel* hbm = target.hbmRuns.get()) {
    if (rhsRows)
      rhsEff = hbm->efficiency(std::min(bn, n) * rhsInBytes, n * rhsInBytes, std::min(bk, k));
    auto port = [&](int bytes) {
      return target.dmaVmemBytesPerCycle > 0
                 ? target.dmaVmemBytesPerCycle * double(bytes) / 4.0 / target.hbmBytesPerCycle
                 : 1.0;
    };
    lhsEff = std::min(lhsEff, port(lhsInBytes));
    rhsEff = std::min(rhsEff, port(pairedWiden ? 2 * rhsInBytes : rhsInBytes));
    outEff = std::min(outEff, port(outBytes));
  }
  const double lhsBlockCycles =
      bb * double(bm * bk) * lhsInBytes / lhsEff / target.hbmBytesPerCycle;
  const double rhsBlockCycles =
      reps * double(bk * bn) * rhsInBytes / rhsEff / target.hbmBytesPerCycle;
  // The pipeline skips a copy whose block index did not change: with one K
  // block the RHS stays for the whole dot when N is one block too (amortized
  // over the M blocks, as a batched dot reloads it per entry), and the LHS
  // stays for a row of N blocks. A step that loads a new LHS block moves it
  // on top of its RHS block and the previous output block's write-back: with
  // few large N blocks those steps are DMA-bound while the others are not,
  // so they are priced apart.
  const double rhsCycles =
      kBlocks == 1 && nBlocks == 1 ? rhsBlockCycles / double(mBlocks) : rhsBlockCycles;
  // Further outputs and the epilogue's inputs (dotExtraBlocks) move blocks
  // of the output's shape and runs too.
  const double outCycles = bb * double(1 + target.dotExtraBlocks) * double(bm * bn) * outBytes /
                           double(kBlocks) / outEff / target.hbmBytesPerCycle;
  const double baseDma = rhsCycles + outCycles;
  // Steps after the first that load a new LHS block.
  const double lhsSteps =
      kBlocks > 1 || nBlocks == 1 ? steps - 1 : double(batch) / bb * double(mBlocks) - 1;
  const double tileCycles = reps * kDotCyclesPerResultTile * double(cdiv(bm, 8) * cdiv(bn, 128));
  // The pipeline overlaps a step's DMAs with the previous step's MXU work,
  // except the first step's input blocks (nothing to hide them behind) and
  // the last output block's write-back: the kernel's prologue and drain,
  // which few large steps leave exposed (a small dot of two steps). So the
  // first step costs its DMA plus its MXU work, the others the larger of
  // the two.
  // Each step fills and drains the MXUs and pops and stores its result
  // tiles. With several K blocks whose results fit the MXU result slots
  // (dotResultsFitMxu) the K steps accumulate there: only the last step of an
  // output block fills, drains and pops, and the others cost the larger of
  // their MXU work and their DMA.
  const bool resident = kBlocks > 1 && dotResultsFitMxu(target.dotBatchBlock * rhsCount,
                                                        std::min(bm, m), std::min(bn, n), target);
  // Sibling dots with one K block and several N blocks run output block n's
  // epilogue at step n + 1 under block n + 1's MXU stream (DotLowering's
  // pipelined epilogue, when its second set of accumulators fits): a row's
  // other steps cost the larger of their MXU work and the result tiles, and
  // each row takes one step more, which runs its last block's tiles alone.
  const bool pipelined = (rhsCount > 1 || target.dotExtraBlocks > 0) && kBlocks == 1 &&
                         nBlocks > 1 && bb == 1 && !target.dotLhsTransposed && target.dotEpilogue &&
                         dotVmemBytes(bm, bn, bk, true, lhsInBytes, rhsInBytes, rhsCount) +
                                 rhsCount * tiledBytes(bm, bn) +
                                 2 * target.dotExtraBlocks * tiledBytes(bm, bn) <=
                             target.dotVmemBudget();
  const double rows = double(batch) * double(mBlocks);
  const double once = (pipelined ? 0.0 : tileCycles) + fill + drain;
  const double perStep = resident ? 0.0 : once;
  const double work = pipelined ? std::max(mxuCycles, tileCycles) : mxuCycles;
  const double tailSteps = pipelined ? rows * (tileCycles + kStepOverheadCycles) : 0.0;
  const double outputBlocks = steps / double(kBlocks);
  if (step) *step = {steps, mxuCycles, baseDma, !(kBlocks == 1 && nBlocks == 1)};
  const double prologueCycles = lhsBlockCycles + rhsBlockCycles;
  const double drainCycles = bb * double(bm * bn) * outBytes / outEff / target.hbmBytesPerCycle;
  return prologueCycles + mxuCycles + lhsSteps * std::max(mxuCycles, baseDma + lhsBlockCycles) +
         (steps - 1 - lhsSteps) * std::max(work, baseDma) +
         steps * (perStep + kStepOverheadCycles) + (resident ? outputBlocks * once : 0.0) +
         tailSteps + drainCycles;
}

DotBlocking chooseDotBlocks(int64_t batch, int64_t m, int64_t n, int64_t k, int lhsInBytes,
                            int rhsInBytes, int outBytes, const TilingTarget& target) {
  DotBlocking best;
  double bestCost = std::numeric_limits<double>::infinity();
  // K blocks of whole weight tiles: 2N deep for s8 x s8 in the packed int8
  // mode, so every block's weights pair (PairPack.h) and may be stored packed.
  // Dequantized s8 weights (bf16 x s8) pair too when their K blocks happen to
  // be whole 2N-row chunks, but are not held to them: the int8 decode's
  // 11008-wide w1 / w3 then took 5504 x 256 blocks (two N blocks, an epilogue
  // each) and ran 0.8% slower than in 11008 x 128 unpaired ones.
  const bool int8 = target.dotMxuInt8 || (lhsInBytes == 1 && rhsInBytes == 1);
  const int64_t kUnit =
      target.int8Rate >= 2 && int8 ? std::max<int64_t>(128, 2 * target.mxuSize) : 128;
  // The busiest MXU's column tiles per K chunk over all N blocks (items are
  // dealt round-robin: dotBlockCost). Blocks wider than kBalancedDotCols are
  // taken only where they lower it below the best narrower choice: what else
  // the model credits them with (longer HBM runs past a few KiB) did not hold
  // (Llama-3-8B's 14336-wide bf16 FFN, 7 tiles per MXU in 3584-column blocks
  // already: +0.7% in one block).
  const int64_t mxu = std::max<int64_t>(target.mxuSize, 8);
  const int64_t mxus = std::max<int64_t>(target.mxuCount, 1);
  const int64_t reps =
      std::max<int64_t>(target.dotBatchBlock, 1) * std::max<int64_t>(target.dotRhsCount, 1);
  auto busiest = [&](int64_t bn) { return cdiv(n, bn) * cdiv(reps * cdiv(bn, mxu), mxus); };
  for (bool wide : {false, true}) {
    if (wide && (!std::isfinite(bestCost) || n <= kBalancedDotCols)) break;
    const int64_t narrowBusiest = wide ? busiest(best.bn) : 0;
    for (int64_t bm : dotRowCandidates(m))
      for (int64_t bn : dotCandidates(n, 128, kMaxDotCols)) {
        if (wide ? bn <= kBalancedDotCols || busiest(bn) >= narrowBusiest : bn > kBalancedDotCols)
          continue;
        for (int64_t bk :
             dotCandidates(k, kUnit, target.maxDotDepth > 0 ? target.maxDotDepth : kMaxDotDepth)) {
          double cost =
              dotBlockCost(batch, m, n, k, bm, bn, bk, lhsInBytes, rhsInBytes, outBytes, target);
          if (cost < bestCost * 0.999) {
            bestCost = cost;
            best.bm = bm;
            best.bn = bn;
            best.bk = bk;
          }
        }
      }
  }
  if (!std::isfinite(bestCost)) {  // nothing fits: the smallest legal blocks
    best.bm = candidates(m, 8, 8, false).back();
    best.bn = candidates(n, 128, 128, false).back();
    best.bk = candidates(k, 128, 128, false).back();
    bestCost = 0;
  }
  // DMA-bound steps that load a new RHS block each: a third buffer when it
  // fits, so the next block's copy is in flight before the current one lands.
  // Only clearly DMA-bound ones: the second copy of the prologue shares HBM
  // with the first, which then lands later (the int8 decode projections, 5%
  // apart, measured 2.7% slower on v5e with 3 buffers).
  constexpr double kDeepDmaMargin = 1.2;
  DotStep st;
  if (std::isfinite(dotBlockCost(batch, m, n, k, best.bm, best.bn, best.bk, lhsInBytes, rhsInBytes,
                                 outBytes, target, &st)) &&
      st.steps >= 3 && st.rhsChangesEveryStep && st.dmaCycles > kDeepDmaMargin * st.mxuCycles) {
    const int64_t bm = std::min(best.bm, m), bn = std::min(best.bn, n), bk = std::min(best.bk, k);
    const bool accumulator = cdiv(k, best.bk) > 1 || target.dotEpilogue;
    const int64_t rhsCount = std::max<int64_t>(target.dotRhsCount, 1);
    if (dotVmemBytes(bm, bn, bk, accumulator, lhsInBytes, rhsInBytes, rhsCount) +
            rhsCount * tiledBytes(bk, bn) + 2 * target.dotExtraBlocks * tiledBytes(bm, bn) <=
        target.dotVmemBudget())
      best.rhsBuffers = 3;
  }
  best.estimatedCycles = bestCost;
  best.why = fmt::format("bm={} bn={} bk={} for [{}] {}x{}x{}{}: about {:.0f} cycles{}", best.bm,
                         best.bn, best.bk, batch, m, n, k,
                         target.dotRhsCount > 1
                             ? fmt::format(" ({} sibling dots sharing the LHS)", target.dotRhsCount)
                             : "",
                         bestCost, best.rhsBuffers > 2 ? "; 3 RHS buffers (DMA-bound steps)" : "");
  return best;
}

}  // namespace tpusim::kernels::tiling
