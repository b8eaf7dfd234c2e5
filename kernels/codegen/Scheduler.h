// List scheduling of one basic block into bundles. Respects the preset's slot
// counts, every latency class, the MXU port rules of isa/README.md (weight
// port 8 cycles per wpush, LHS port 8 cycles per mm, latch needs both ports
// free, a pop waits t + 7 + 2N after its mm), the occupancy of the XLUs and of
// the transcendental unit, memory ordering per region, VMEM bank conflicts of
// the loads in one bundle, and DMA/sync barriers. Generated code therefore
// never stalls on a hazard the compiler could see. Each block drains before
// it ends (every result written before the next block issues), so blocks can
// be scheduled independently.
#pragma once

#include <vector>

#include "kernels/codegen/MachineIR.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::kernels::codegen {

struct BlockSchedule {
  std::vector<int> cycle;  // issue cycle of each instruction, relative to the block
  int length = 0;          // bundles the block occupies (a branch sits in the last one)
  int lookahead = 0;       // the list scheduler's lookahead that made it (0: the default)
};

// lookahead: how far past the oldest unscheduled instruction the list
// scheduler looks (instructions; 0: the default, 1024), as
// dsl::CompilerParams::schedule_lookahead sets it per kernel.
BlockSchedule scheduleBlock(const MBlock& block, const TargetInfo& target, int lookahead = 0);

// Every distinct schedule tried for the block (the overlap windows and
// reserves, the kernel's lookahead and the default), shortest first, ties in
// the order tried: the first is scheduleBlock's. Where the register allocator
// cannot hold one even after spilling, the driver takes the next of the same
// lookahead (Compile.cpp; a shorter lookahead is the kernel's own retry).
std::vector<BlockSchedule> scheduleBlockVariants(const MBlock& block, const TargetInfo& target,
                                                 int lookahead = 0);

// Latency of an instruction's register result (0 if it writes none).
int resultLatency(const MInstr& mi, const TargetInfo& target);

}  // namespace tpusim::kernels::codegen
