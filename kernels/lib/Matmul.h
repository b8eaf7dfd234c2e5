// Tiled matmul: out[M,N] = x[M,K] @ y[K,N], bf16 x bf16 -> f32 or s8 x s8 -> s32,
// for any M, N, K (edge blocks are clipped; a partial last K block is read
// clipped to its valid part, so padding never reaches the sum). Grid (M/bm, N/bn, K/bk), K
// innermost and "arbitrary", accumulating in an f32/s32 VMEM scratch (with one K block the dot
// writes the output block directly; with `resident` blocks the K steps accumulate in the MXU result
// slots and the last writes the output block). The VMEM limit is what the blocks need (at least 16
// MiB). Default blocks come from the tiling model tpuc uses for its dots (chooseMatmulBlocks).
#pragma once

#include "kernels/codegen/TargetInfo.h"
#include "kernels/dsl/PallasCall.h"

namespace tpusim::kernels::lib {

struct MatmulBlocks {
  int64_t bm = 128, bn = 128, bk = 128;
  // With several K blocks: accumulate in the MXU result slots across the K
  // steps and write the output block in place at the last (no VMEM
  // accumulator, no MXU drain per step). Only when the blocks' results fit
  // the slots (matmulResultsFitMxu); chooseMatmulBlocks sets it.
  bool resident = false;
};

// Whether bm x bn blocks keep their results in the MXU across the K steps on
// `target` (kernels/tiling/Tiling.h, dotResultsFitMxu).
bool matmulResultsFitMxu(int64_t bm, int64_t bn, const codegen::TargetInfo& target);

// The blocks tpuc's tiling model (kernels/tiling/Tiling.h, chooseDotBlocks)
// picks for this matmul on `target`: a plain dot of kernel inputs whose output
// block is written in place when K is one block. `why` (optional) gets the
// model's one-line reason.
MatmulBlocks chooseMatmulBlocks(int64_t m, int64_t n, int64_t k, llo::DType inType,
                                const codegen::TargetInfo& target, std::string* why = nullptr);

// Throws dsl::Error for an unsupported dtype or block sizes breaking the (8,128) rule.
dsl::PallasCall matmulCall(int64_t m, int64_t n, int64_t k, llo::DType inType,
                           MatmulBlocks blocks = {});

// Plain C++ reference in double precision (bf16 / s8 inputs given as their values).
std::vector<double> matmulReference(const std::vector<double>& x, const std::vector<double>& y,
                                    int64_t m, int64_t n, int64_t k);

}  // namespace tpusim::kernels::lib
