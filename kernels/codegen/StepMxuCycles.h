// How long a grid step's matmuls keep the MXUs busy, as the grid pipeline
// decides whether a step waits for its block before it starts the next one
// (Compile.cpp): a step whose MXUs outlast its copies finds its block in and
// starts on it at once; one bound by its copies keeps the next copy queued
// behind the current one.
#pragma once

#include <cstdint>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

// The MXU cycles of one grid step's matmuls over the MXUs, each weight tile
// (S x S, 2S deep for packed int8) taking the longer of its pushes (S cycles;
// 2S transposed) and its LHS rows (8 cycles per 8 rows), or -1 when not known
// from the body (a loop, a latched matmul). An `if` counts its longer branch.
int64_t stepMxuCycles(const llo::Kernel& k, const TargetInfo& t);

}  // namespace tpusim::kernels::codegen
