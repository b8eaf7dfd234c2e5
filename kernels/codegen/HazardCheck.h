// An independent check of generated code against the timing rules of
// isa/README.md: given the bundles of one straight-line block issuing on
// consecutive cycles, reports every place where the machine would stall
// (operand not ready, write still in flight, MXU port busy or result not
// ready, XLU or transcendental unit busy), every slot-count violation for the
// preset, two writes of one register in a bundle, and results still in flight
// when the block ends. This is what `tpusim --strict` would flag, checked at
// compile time; VMEM bank conflicts depend on register values and are not
// checked here.
#pragma once

#include <string>
#include <vector>

#include "isa/Bundle.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::kernels::codegen {

// `mxuCarry` (MBlock::mxuCarry): MXU work of an earlier block may be in
// flight on entry (any MXU latched and mm'd into any slot in the cycle before)
// and results may stay in the slots at the end.
// `mxuEntry` (MBlock::mxuEntry): only the entry half of mxuCarry.
std::vector<std::string> checkBlockTiming(const std::vector<isa::Bundle>& bundles,
                                          const TargetInfo& target, bool mxuCarry = false,
                                          bool mxuEntry = false);
// A loop body whose iterations hand MXU results on to the next (MBlock::mxuLoop):
// two iterations back to back, entered drained; results may stay in the slots.
std::vector<std::string> checkLoopBlockTiming(const std::vector<isa::Bundle>& bundles,
                                              const TargetInfo& target);

}  // namespace tpusim::kernels::codegen
