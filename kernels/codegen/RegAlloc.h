// Register allocation after scheduling: linear scan over live intervals in
// issue cycles (a register is reused only after the old value's last read and
// after its write has landed, so allocation adds no hazard). Values used in a
// loop and outside it, or carried around its back edge, live across the whole
// loop. Running out of registers throws RegisterPressureError with a spill
// candidate; the driver spills it (Spill.h), reschedules and allocates again.
// An MXU register pair (MInstr::pairHi, N = 256) gets an aligned pair of
// vregs (2r, 2r + 1) for the union of its halves' intervals and is never spilled.
#pragma once

#include <stdexcept>
#include <utility>
#include <vector>

#include "isa/Bundle.h"
#include "kernels/codegen/MachineIR.h"
#include "kernels/codegen/Scheduler.h"

namespace tpusim::kernels::codegen {

class CodegenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Running out of registers of one class (the message names it and the count).
class RegisterPressureError : public CodegenError {
 public:
  RegisterPressureError(const std::string& msg, RegClass c, int spill = -1, int blk = -1)
      : CodegenError(msg), cls(c), spillCandidate(spill), block(blk) {}
  RegClass cls;
  int spillCandidate;  // a virtual register of `cls` live there that may be spilled, or -1
  int block;           // the block where the value that found no register is first named, or -1
};

// A loop: blocks [first, last] in layout order; the back edge goes from last to first.
struct LoopRange {
  int first = 0, last = 0;
};

// Rewrites every virtual register operand of `fn` into a physical one.
// Returns the number of registers used per class.
std::array<int, 3> allocateRegisters(MFunction& fn, const std::vector<BlockSchedule>& schedules,
                                     const std::vector<LoopRange>& loops, const TargetInfo& target);

// Lays out the scheduled, allocated blocks as bundles; branch targets become
// bundle indices, counted from `firstBundle` (where the code will sit in the
// final program). `blockStart` receives each block's first bundle relative to
// the returned vector.
std::vector<isa::Bundle> assembleBundles(const MFunction& fn,
                                         const std::vector<BlockSchedule>& schedules,
                                         const TargetInfo& target,
                                         std::vector<uint32_t>* blockStart = nullptr,
                                         uint32_t firstBundle = 0);

// The --dump-machine text of assembled bundles: each block's label and bundle
// range, then one bundle per line ("  12  sld s3, s0, 4 ; vld v1, s2, 0").
std::string printMachineCode(const MFunction& fn, const std::vector<isa::Bundle>& bundles,
                             const std::vector<uint32_t>& blockStart, uint32_t firstBundle);

}  // namespace tpusim::kernels::codegen
