// The order the back end lowers a computation's instructions in (and
// assigns their buffers over): its post order; with async collective pairs
// (custom-calls "tpusim$permute-start" / "-done", "tpusim$all-gather-start"
// / "-done"), a list schedule of it that issues every start as soon as its
// operand is ready and every done only when no other work is, so the
// independent work lands between them and overlaps the transfer
// (compiler/lower/collectives/CollectiveLowering.h).
#pragma once

#include <vector>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::lower {

std::vector<hlo::HloInstruction*> loweringOrder(const hlo::HloComputation& comp);

}  // namespace tpusim::lower
