// Fusions already in the input (XLA dumps for GPU or CPU carry their own
// `fusion` instructions) were cut for another back end. Before tpuc runs its
// pipeline, each one is replaced by the instructions of its fused computation
// (as the inliner does for `call`), so this back end's fusion pass and the
// data-movement lowering decide afresh. Values do not change.
#pragma once

#include <cstdint>

#include "compiler/hlo/HloModule.h"

namespace tpusim::lower {

// Inlines every fusion instruction of the module; returns how many.
int64_t unfuseInputFusions(hlo::HloModule& module);

}  // namespace tpusim::lower
