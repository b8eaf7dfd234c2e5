// Text inside HTML or XML (the profiler's report.html, tpusim-batch's JUnit
// XML): the five markup characters become entities, and the control
// characters XML 1.0 forbids (all below 0x20 but tab, newline and carriage
// return) are dropped.
#pragma once

#include <string>

namespace tpusim::support {

std::string escapeMarkup(const std::string& text);

}  // namespace tpusim::support
