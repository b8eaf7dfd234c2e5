// What a profile derives from its ops (used when building one and when
// reading profile.json back), and the chip's peaks from its preset.
#pragma once

#include "isa/target/ChipConfig.h"
#include "sim/prof/Profile.h"

namespace tpusim::prof {

ChipPeaks chipPeaks(const target::ChipConfig& chip);

// Derives every op and recomputes the folded ops, categories and layers from p.ops.
void summarize(Profile& p);

}  // namespace tpusim::prof
