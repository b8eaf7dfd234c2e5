// A few plain-language findings computed from a profile: where the step
// goes, what bounds it, and where time is wasted under the roofline.
#pragma once

#include <string>
#include <vector>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

std::vector<std::string> findingsOf(const Profile& p);

}  // namespace tpusim::prof
