// The order the back end lowers a computation's instructions in (and
// assigns their buffers over): its post order, with every async permute's
// start (custom-call "tpusim$permute-start") moved up to just after its
// operand and its done ("tpusim$permute-done") down to just before its first
// user, so the independent work of the post order lands between them and
// overlaps the transfer (compiler/lower/collectives/CollectiveLowering.h).
#pragma once

#include <vector>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::lower {

std::vector<hlo::HloInstruction*> loweringOrder(const hlo::HloComputation& comp);

}  // namespace tpusim::lower
