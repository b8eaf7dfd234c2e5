// Spilling a virtual register when the allocator runs out: "spill everywhere"
// on the unscheduled machine code. Every write of the register is followed by
// a store to its own spill slot (8 VMEM rows for a vreg, one SMEM word for a
// scalar) and every read is preceded by a load into a fresh short-lived
// register, so the long interval becomes short ones around its uses. The
// driver then schedules and allocates again (Compile.cpp).
#pragma once

#include "kernels/codegen/MachineIR.h"
#include "kernels/codegen/MemoryPlan.h"

namespace tpusim::kernels::codegen {

// Marks registers that may never be spilled (written by a branch: a store
// cannot follow the last instruction of a block).
void markUnspillable(MFunction& fn);

// Rewrites `fn` so `vreg` of `cls` (Scalar or Vector) lives in memory.
// Returns the number of loads and stores inserted.
int spillRegister(MFunction& fn, RegClass cls, int vreg, MemoryPlan& mem);

}  // namespace tpusim::kernels::codegen
