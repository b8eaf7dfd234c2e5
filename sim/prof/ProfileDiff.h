// tpu-prof diff A B: two profiles compared op by op (folded across layers,
// grouped by category): cycles before and after, the change in %, bound-by
// changes, and a summary of the step's difference and what it comes from.
// What architects read across chip configurations and CI across commits.
#pragma once

#include <string>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

struct DiffOptions {
  size_t rows = 25;  // folded ops listed, largest change first (0: all that changed)
};

// True in `*changed` when any op's cycles or the step differ.
std::string diffText(const Profile& before, const Profile& after, const DiffOptions& options,
                     bool* changed = nullptr);

}  // namespace tpusim::prof
