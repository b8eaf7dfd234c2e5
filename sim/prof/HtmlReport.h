// report.html: the profile as one self-contained page (inline CSS, inline
// SVG charts, a little inline JavaScript to sort and expand the op table;
// nothing fetched from the network): overview, op profile, roofline chart,
// per-layer breakdown, memory viewer, links to the trace and the JSON.
#pragma once

#include <string>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

std::string htmlReport(const Profile& p);

}  // namespace tpusim::prof
