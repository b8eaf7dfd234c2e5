// The tiling model lives in kernels/tiling (the library matmul's default blocks
// come from it too); fusion lowering uses it under its own namespace.
#pragma once

#include "kernels/tiling/Tiling.h"

namespace tpusim::lower {

using kernels::tiling::BlockUse;
using kernels::tiling::chooseDotBlocks;
using kernels::tiling::chooseLeadBlock;
using kernels::tiling::chooseLoopBlock;
using kernels::tiling::dividingBlock;
using kernels::tiling::dotBlockCost;
using kernels::tiling::DotBlocking;
using kernels::tiling::dotResultsFitMxu;
using kernels::tiling::dotVmemBytes;
using kernels::tiling::kStepOverheadCycles;
using kernels::tiling::LoopBlock;
using kernels::tiling::smallKernelSteps;
using kernels::tiling::TilingTarget;
using kernels::tiling::wholeRowsBlock;

}  // namespace tpusim::lower
