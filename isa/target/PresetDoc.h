// Generates docs/presets.md: every field with its unit, limits, doc and
// default, the value in each preset, derived peaks, and every value's source.
#pragma once

#include <string>
#include <vector>

#include "isa/target/ChipConfig.h"

namespace tpusim::target {

// The command that regenerates the committed document (named by the staleness check).
constexpr const char* kPresetDocCommand = "build/bin/tpusim-config --doc > docs/presets.md";

std::string presetsMarkdown(const std::vector<ChipConfig>& presets);

}  // namespace tpusim::target
