// The order the back end lowers a computation's instructions in (and
// assigns their buffers over): its post order; with async collective pairs
// (custom-calls "tpusim$permute-start" / "-done", "tpusim$all-gather-start"
// / "-done"), a list schedule of it that issues every start as soon as its
// operand is ready and every done only when no other work is, so the
// independent work lands between them and overlaps the transfer
// (compiler/lower/collectives/CollectiveLowering.h).
//
// With several pairs (an async ring's steps) and a chip, the work is spread
// over their windows: a done whose transfer the work scheduled since its
// start covers (estimates: bytes over one link plus a hop, against the work's
// HBM bytes over the HBM bandwidth) goes before further work, so the next
// step starts and the rest of the work overlaps it. Buffer assignment and
// lowering must pass the same chip.
//
// A dynamic-update-slice comes after the other readers of the array it
// updates (those that do not depend on it), so that buffer assignment can
// update the array in place: a dot that reads a cache before the update
// (passes/DotThroughUpdate.cpp) then runs first and the update writes the
// cache's buffer instead of a copy.
#pragma once

#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

std::vector<hlo::HloInstruction*> loweringOrder(const hlo::HloComputation& comp,
                                                const target::ChipConfig* chip = nullptr);

}  // namespace tpusim::lower
