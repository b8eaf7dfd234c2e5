// Everything tpu-prof does after parsing its command line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tpusim::prof {

struct TpuProfArgs {
  std::vector<std::string> positional;  // DIR | profile.json, or: diff A B
  size_t rows = 10;                     // op rows per category; diff: changed ops listed
  bool layers = false;                  // expand folded ops into their instances
  bool overviewOnly = false;
  std::string html;  // also write report.html (from the profile alone) here
};

// Returns the exit code: 0 ok (diff: also when the profiles differ), 1 error.
int runTpuProf(const TpuProfArgs& args);

}  // namespace tpusim::prof
