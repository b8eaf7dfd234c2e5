// The fusion pass's VMEM estimate: the working set a kernel for a fused
// computation would keep in VMEM, with the blocks a tiler would pick.
//
// Blocks (the part of an array one grid step touches):
//   kLoop   the output's two most minor dims in blocks of up to 512 rows x 1024
//           lanes (rounded up to (8,128) tiles; other dims 1), halved (rows
//           first, then lanes, down to 8x128) until one f32 block is at most
//           VMEM/32, so an ordinary fusion never fills VMEM by itself;
//   kInput  the same over the reduce's input, except that a reduction over the
//           most minor dim keeps the whole reduced row in the block (the XLU
//           reduces a row across lanes in one pass), which is what can exceed
//           VMEM for long rows;
//   kOutput for a dot [M,K]x[K,N]: bm x bk LHS, bk x bn RHS and a bm x bn f32
//           accumulator with bm, bn, bk up to max(128, 4 x MXU size) (rounded to
//           8 / 128 / 128), halved until LHS + RHS + accumulator fit VMEM/8;
//           values feeding the dot take its LHS or RHS block, the epilogue bm x bn;
//           sibling dots (SiblingDots.h) add an RHS block and an accumulator each.
// A value smaller than its block (a broadcast operand, a reduced result) counts
// its own padded size instead.
// Working set = 2 x every input block (double-buffered HBM->VMEM copies)
//             + 2 x the output block + the accumulator
//             + one block per fused intermediate that computes something (views,
//               broadcasts, constants and iotas are free: they fold into loads).
#pragma once

#include <cstdint>
#include <string>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/TargetDescription.h"

namespace tpusim::passes {

struct VmemEstimate {
  int64_t bytes = 0;
  int64_t inputBytes = 0, outputBytes = 0, intermediateBytes = 0, accumulatorBytes = 0;
  std::string block;  // the block shape used, e.g. "512x1024" or "bm=512 bn=512 bk=512"
};

// A dot's problem size and the blocks the estimate uses (kOutput above).
struct DotBlocks {
  int64_t m = 1, n = 1, k = 1, batch = 1;  // free LHS, free RHS, contracting, batch elements
  int64_t bm = 8, bn = 128, bk = 128;
  // How many times each operand block is read: LHS once per N block, RHS once per M block.
  int64_t lhsReuse() const { return (n + bn - 1) / bn; }
  int64_t rhsReuse() const { return (m + bm - 1) / bm; }
};
DotBlocks dotBlocks(const hlo::HloInstruction& dot, const lower::TargetDescription& target);

// Recomputing in a dot's operand prologue against a round trip through HBM:
// `copies` extra evaluations of `producer` (recompute weight `weight`, in VALU
// ops per element: FusionRules.h) cost weight x copies x elements (padded to whole
// (8, 128) tiles: a decode row of one token costs 8 rows) / (VALU slots x 1024
// lanes) cycles; kept as its own kernel, its result is written to HBM and
// read back (read only, if other users keep it in HBM anyway), bytes over the
// chip's HBM bytes per cycle. True when recomputing is the cheaper of the two
// (e.g. SwiGLU's sigmoid in the down projection's LHS: ~500 VALU cycles against
// ~3800 HBM cycles on v5e). The VALU work overlaps the MXU; the round trip
// is a kernel of its own.
bool recomputeBeatsHbmRoundTrip(const hlo::HloInstruction& producer, int64_t weight, int64_t copies,
                                bool resultStaysInHbm, const lower::TargetDescription& target);

// A convert to bf16 of an f32 dot operand, fused as the dot's prologue, is
// made per grid step into a VMEM copy of the operand block (a load, a convert
// and a store per vreg: bound by the store slots), `copies` times in all (the
// steps that read the block: a weight block once per M block, even when the
// pipeline keeps the f32 block itself); kept as its own kernel, it converts
// once, writes the bf16 array and the dot reads that instead of the f32 one.
// True when the prologue is the cheaper (the copies are few, or small: decode,
// small M); the kernel of its own is priced at least 1000 cycles.
// The mixed-precision training step's f32 master weights: 64 copies of a
// 1024 x 2048 weight (~2,300 cycles each on v6e) against ~9,000 cycles.
bool prologueConvertBeatsHbmRoundTrip(const hlo::HloInstruction& convert, int64_t copies,
                                      const lower::TargetDescription& target);

VmemEstimate estimateFusionVmem(const hlo::HloComputation& body,
                                const lower::TargetDescription& target);

}  // namespace tpusim::passes
