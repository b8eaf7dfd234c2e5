// While loops and conditionals, run by the scalar unit between kernels.
//
// while(init): the loop-carried tuple lives in the while instruction's own HBM
// buffers (one per leaf), which the body and condition read in place as their
// parameter. The loop is
//     copy init -> state                 (leaves already in place are skipped)
//   head:
//     condition(state) -> pred           (kernels; the pred lands in HBM)
//     DMA pred -> SMEM; sld; br.z exit
//     body(state) -> root                (kernels, in the instruction's scratch region)
//     copy root -> state; jmp head       (a leaf passed through unchanged is not copied;
//                                         a leaf moved to another position goes through
//                                         a temporary, so swaps are right)
//   exit:
// A counted loop (state element k an s32 starting at a constant, condition
// `k < N` or `k <= N` for a constant N, body `k + 1`: jax.lax.fori_loop and
// scan) needs no condition at run time: a trip counter in SMEM is set, and after
// each body `sld; saddi -1; sst; br.nz head`. It is exact in timing mode too.
// conditional(index or pred, operands...): the index (s32) or pred is DMA'd to
// SMEM and loaded; `scmp.eq` + `br.nz` per branch (an index out of range runs the
// last branch, as XLA does; a pred true runs true_computation); each branch
// reads its operand in place, and its root is copied into the conditional's
// buffers before jumping to the end.
//
// The condition, body and branches run in the same scratch region, one after
// the other, so none of their temporaries outlives its computation; what must
// (the loop state, the result) is in the instruction's own buffers.
//
// In timing mode the simulator's DMA moves no data, so a pred or index DMA'd to
// SMEM reads as 0: a while that is not counted runs its condition once and no
// body iteration, a conditional runs its false / first branch. Functional mode
// is exact.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/lower/module/ModuleLowerer.h"

namespace tpusim::lower {

void lowerWhile(ModuleLowerer& lowerer, const hlo::HloInstruction& loop, const Leaves& init,
                const Leaves& state, uint64_t scratch, int depth);

void lowerConditional(ModuleLowerer& lowerer, const hlo::HloInstruction& conditional,
                      const std::vector<Leaves>& operands, const Leaves& result, uint64_t scratch,
                      int depth);

}  // namespace tpusim::lower
