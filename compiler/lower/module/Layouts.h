// HBM arrays are dense row-major in their logical shape here (ModuleLowering.h),
// and every HLO op but a bitcast means the same values whatever the layouts
// say. So before lowering, tpuc drops the layouts of the input (a TPU dump's
// {1,0:T(8,128)}, a copy into {0,1}, ...): a copy then only copies, and the
// kernel and DMA lowerings, which take default layouts only, accept the
// module. A bitcast whose operand or result has a non-default minor_to_major
// reinterprets bytes in a way that depends on them; then nothing is changed
// (the lowering reports that bitcast).
#pragma once

#include <cstdint>

#include "compiler/hlo/HloModule.h"

namespace tpusim::lower {

// Returns how many shapes lost a layout (0 when a bitcast depends on them).
int64_t dropLayouts(hlo::HloModule& module);

}  // namespace tpusim::lower
