// The tiling model: block shapes and grids for the kernels tpuc's fusion
// lowering builds (lowerToKernel) and the default blocks of the library matmul
// (kernels/lib/Matmul.h), from the machine's MXU size and count, VMEM size and
// HBM bandwidth. It sits below both, so the compiler and the library agree.
//
// Element-wise and reduction kernels (HBM-bound): a block moves enough bytes
// per grid step that the step's DMA time (bytes / HBM bytes per cycle) hides
// the per-step overhead of the grid loop (kStepOverheadCycles) several times
// over, without exceeding the VMEM budget; lanes first (whole rows up to
// 1024 lanes; a reduced row whole), then rows. A small kernel still runs a few
// steps (smallKernelSteps): its first input block and last write-back overlap
// nothing, so one step would expose all of its DMA.
// Dots: every candidate (bm, bn, bk) of legal blocks (at most 16384 MXU pushes
// and a depth of 4096, what the code generator schedules in seconds) that fits
// VMEM (all but a sixteenth: a dot needs no temporaries) is priced as grid
// steps x (max(MXU cycles, DMA cycles) + per-result-tile cycles + MXU fill and
// drain + step overhead), DMA counting the copies the pipeline skips (an
// unchanged LHS block with one K block), plus the exposed prologue (the first
// step's input blocks) and drain (the last output block's write-back); K
// steps whose results stay in the MXU result slots (dotResultsFitMxu) pay
// the result tiles, fill and drain once per output block. The cheapest
// wins: larger blocks
// re-read less from HBM and amortize the fill and drain, until VMEM or the caps
// stop them.
// Sibling dots (one LHS block, an RHS block per dot: TilingTarget::dotRhsCount)
// are priced as one step doing every dot's MXU work and weight DMA, with one
// fill and drain and one output block.
// Blocks divide the array or equal it whenever such a block exists (the code
// generator's edge blocks are new); a reduced or contracted dim must be
// divided exactly, or is masked (dots, as kernels/lib/Matmul.cpp does).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/tiling/HbmRuns.h"

namespace tpusim::kernels::tiling {

// Process-wide (tools set it once at start-up, tpuc --hbm-run-model): dot
// blocks priced with the preset's HBM run model (HbmRuns.h) instead of the
// interleave-line rule. Off by default: the model matches the simulator's
// strided reads, but the tile choices it makes were slower on the tiny
// prefill (docs/performance.md, "hbmbg").
bool& hbmRunPricing();

struct TilingTarget {
  int64_t vmemBytes = int64_t(16) << 20;
  int64_t mxuSize = 128, mxuCount = 4;
  int64_t accSlots = 16;  // MXU result slots of 8 rows: the rows one weight tile serves
  int64_t int8Rate = 1;   // 2: packed int8, an s8 x s8 weight tile is 2N deep
  // The dot runs s8 x s8 on the MXU though an operand is read wider from HBM
  // (an LHS quantized in the dot's prologue): its weight tiles are 2N deep too.
  bool dotMxuInt8 = false;
  double hbmBytesPerCycle = 512;  // HBM peak bandwidth / core clock
  int64_t maxDotDepth = 0;        // a dot's largest K block (0: the tiler's own limit)
  // Batch entries a dot's grid step takes (unrolled, sharing the MXUs; the
  // batch must be a multiple); vmemBytes is then one entry's share.
  int64_t dotBatchBlock = 1;
  // The RHS is [N, K] (pushed with the MXU's transposed weight load, which
  // waits N cycles after the previous latch).
  bool dotRhsTransposed = false;
  // The LHS is [K, M]: each step's LHS block goes through the transpose unit
  // (one 128 x 128 block per transposeBlockCycles) into a VMEM temporary, and
  // its results do not stay in the MXU across K steps.
  bool dotLhsTransposed = false;
  int64_t transposeBlockCycles = 256;
  // > 0: the contiguous bytes of each run an operand's block DMA reads (an
  // operand read in place through strides), instead of its block row.
  int64_t dotLhsRunBytes = 0, dotRhsRunBytes = 0;
  // Consecutive HBM bytes the address mapping spreads over every channel,
  // pseudo-channel and bank group (target::HbmConfig::interleaveBytes).
  int64_t hbmInterleaveBytes = 4096;
  // The preset's HBM run efficiency (HbmRuns.h), set by from() when
  // hbmRunPricing() is on; null: the interleave-line rule (runEfficiency in
  // Tiling.cpp).
  std::shared_ptr<const HbmRunModel> hbmRuns;
  double dmaVmemBytesPerCycle = 0;  // the DMA's VMEM port (0: not a limit)
  // The dot's result goes through a VMEM accumulator even with one K block
  // (an epilogue reads it); false: only when K is split (a plain dot writes
  // its output block in place, as the library matmul does).
  bool dotEpilogue = true;
  // Sibling dots sharing the LHS block (the gate and up projections of a
  // SwiGLU FFN, compiler/passes/SiblingDots.h): each adds an RHS block, an
  // accumulator, its MXU work and its result tiles per step; the LHS block,
  // the output block and the step's MXU fill and drain are shared.
  int64_t dotRhsCount = 1;
  // Blocks of the output block's shape beyond the one output, each double
  // buffered: a dot kernel's further outputs and its epilogue's inputs (a
  // multi-output epilogue, compiler/passes/DotEpilogueOutputs.h).
  int64_t dotExtraBlocks = 0;
  // The kernel's first blocks load under the kernel before it (cross-kernel
  // prefetch: none of its inputs is written by that kernel): a small kernel
  // then keeps at most two steps (smallKernelSteps).
  bool firstBlocksPrefetched = false;
  // VMEM one kernel's blocks may take (the rest is headroom for the code
  // generator's temporaries and spills).
  int64_t vmemBudget() const { return vmemBytes / 2; }
  // The dot's operands are read straight from kernel inputs (at most cast to
  // bf16) and its epilogue at most converts the result, so its body makes no
  // VMEM blocks or temporaries beyond the ones dotVmemBytes counts: its
  // blocks may take all but a sixteenth of VMEM (at least 1 MiB; the library
  // matmul runs with 1 MiB to spare). Otherwise (fused operand computations,
  // epilogue inputs) half, as for other kernels.
  bool dotOperandsAreInputs = false;
  int64_t dotVmemBudget() const {
    return dotOperandsAreInputs ? vmemBytes - std::max<int64_t>(vmemBytes / 16, int64_t(1) << 20)
                                : vmemBudget();
  }
  // From the code generator's view of the chip (TargetInfo::defaults(), built
  // without a preset, has 512 bytes per cycle).
  static TilingTarget from(const kernels::codegen::TargetInfo& t);
};

// Fixed cycles a grid step costs beyond its DMA / compute (waits, index maps,
// DMA issue): measured on the v5e preset for small kernels (docs/kernels.md).
constexpr int64_t kStepOverheadCycles = 100;

// The largest block <= limit that divides n and is a multiple of `unit`, or n
// itself when n <= limit; 0 when there is none.
int64_t dividingBlock(int64_t n, int64_t unit, int64_t limit);

// One kernel array of a row x column block space, for the VMEM estimate:
// does its block span the rows / columns of the block (else it is 1 there)?
struct BlockUse {
  bool rows = true, cols = true;
  int buffers = 2;  // pipelined arrays are double-buffered; temporaries 1
  int hbmBytesPerElement = 4;
  bool lead = false;  // spans the leading axis chooseLeadBlock blocks
};

struct LoopBlock {
  int64_t rows = 1, cols = 1;
  std::string why;  // one line: the block and what bounded it
};

// A block of an R x C space. `exactRows` / `exactCols`: the dim is reduced, so
// the block must divide it or equal it (padding would enter the result).
// Never fails: falls back to the smallest legal block.
// `planes`: how many such planes the kernel walks (its leading axes).
// `wholeCols`: the block spans the columns (a row reduced inside the kernel).
LoopBlock chooseLoopBlock(int64_t rows, int64_t cols, bool exactRows, bool exactCols,
                          const std::vector<BlockUse>& uses, const TilingTarget& target,
                          int64_t planes = 1, bool wholeCols = false);

// `b` (a block of an R x C space) widened to whole rows of `cols` lanes at the
// same rows, for a kernel that walks `b.cols` lanes at a time inside it (the
// same sums in the same order): a block row is then one HBM run, not a
// window of each row (HBM rows opened once, not once per lane block: an
// element-wise [2040, 4096] f32 -> bf16 kernel 80,857 -> 63,085 cycles on
// v6e). b itself where it spans the rows already, the rows are wider than
// 4096 lanes or not whole lane blocks, or the wider block overflows VMEM.
LoopBlock wholeRowsBlock(const LoopBlock& b, int64_t rows, int64_t cols,
                         const std::vector<BlockUse>& uses, const TilingTarget& target);

// Grid steps for a kernel that moves `bytes` in all: about sqrt(DMA cycles /
// kStepOverheadCycles), 1 to 8, which balances the exposed first and last
// blocks (DMA cycles / steps) against the steps' overhead. Large kernels are
// bounded by the bytes per step instead (many more steps). With its first
// blocks prefetched (TilingTarget::firstBlocksPrefetched) at most two: the
// first step's blocks load beside the kernel before it, the second's under the
// first step, and only the last step's work and write-back are exposed (the
// tiny prefill's RoPE kernels after the v projection's MXU work, 4 -> 2 steps:
// 3.5-4.0k -> 2.6-3.0k cycles each).
int64_t smallKernelSteps(double bytes, const TilingTarget& target);

// When `plane` (a block of the rows x cols plane) is the whole plane and still
// moves too few bytes per step (a rotary embedding's [heads, head_dim]), the
// block of the innermost leading axis (of size `leadSize`): that many planes
// per grid step, walked by a loop in the kernel. A divisor of leadSize (1: no
// change), within the VMEM budget; appends the decision to plane.why.
int64_t chooseLeadBlock(int64_t leadSize, LoopBlock& plane, const std::vector<BlockUse>& uses,
                        const TilingTarget& target);

struct DotBlocking {
  int64_t bm = 8, bn = 128, bk = 128;
  // Pipeline buffers of the RHS blocks: 3 when the steps are DMA-bound and
  // the RHS block changes every step (a K loop of weights): with 2 the next
  // block's DMA starts only once the current one has arrived, and HBM idles
  // between them; with 3 two copies are in flight.
  int rhsBuffers = 2;
  double estimatedCycles = 0;  // the model's total for the whole dot
  std::string why;
};

// What one step of a dot costs in the model (dotBlockCost).
struct DotStep {
  double steps = 0, mxuCycles = 0, dmaCycles = 0;
  bool rhsChangesEveryStep = false;
};

// Whether `batch` dots of bm x bn blocks per grid step can keep their results
// in the MXU result slots across the K steps (DotOptions::resident): each
// (row group, column tile) item needs its own window of slots, dealt
// round-robin to the MXUs, all within one MXU's accSlots.
bool dotResultsFitMxu(int64_t batch, int64_t bm, int64_t bn, const TilingTarget& target);

// VMEM bytes of a dot's blocks: double-buffered operand and output blocks (one
// 32-bit word per element, as the code generator lays them out: bf16 is not
// packed in VMEM), the accumulator when there is one and the bf16 copies of
// f32 (4-byte) operands. A partial last K block takes no copies: it is read
// clipped to its valid part.
// `rhsCount` sibling dots (TilingTarget::dotRhsCount) share the LHS and
// output blocks and have an RHS block and an accumulator each.
int64_t dotVmemBytes(int64_t bm, int64_t bn, int64_t bk, bool accumulator, int lhsInBytes,
                     int rhsInBytes, int64_t rhsCount = 1);

// The model's cycles for a dot with blocks (bm, bn, bk), or infinity when the
// blocks break a cap (VMEM, MXU pushes per step): grid steps x (max(MXU
// cycles, DMA cycles) + per-result-tile cycles + MXU fill and drain + step
// overhead), steps that load a new LHS block priced apart, plus the exposed
// prologue (the first step's input blocks) and drain (the last write-back).
double dotBlockCost(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t bm, int64_t bn,
                    int64_t bk, int lhsInBytes, int rhsInBytes, int outBytes,
                    const TilingTarget& target, DotStep* step = nullptr);

// [batch, m, k] x [batch, k, n]; lhsInBytes / rhsInBytes: HBM bytes per element
// of each operand as its kernel reads it (2 for bf16, 1 for s8 weights however
// they are converted in the kernel, 4 for f32 cast in the kernel); outBytes for
// the result.
DotBlocking chooseDotBlocks(int64_t batch, int64_t m, int64_t n, int64_t k, int lhsInBytes,
                            int rhsInBytes, int outBytes, const TilingTarget& target);

}  // namespace tpusim::kernels::tiling
