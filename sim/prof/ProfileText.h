// The profile as text: the overview (what tpusim --profile prints and
// tpu-prof shows first) and the op profile grouped by category, folded
// across layers.
#pragma once

#include <string>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

std::string overviewText(const Profile& p);

struct OpTableOptions {
  size_t rowsPerCategory = 10;  // folded rows shown per category (0: all)
  bool expandLayers = false;    // each folded row's instances per layer under it
};
std::string opTableText(const Profile& p, const OpTableOptions& options = {});

// Helpers shared by the text and the diff.
std::string humanCount(double v);  // "1.23 G", "45.6 k"
std::string humanBytes(double bytes);
std::string humanRate(double v, const char* unit);  // "24.9 TFLOP/s", "0 FLOP/s"

}  // namespace tpusim::prof
