// Runs cases: each case is one child tpusim process (SystemC allows one
// simulation per process) writing its stats JSON into a private work
// directory; up to `jobs` run at once. A library-kernel case is compiled here
// first (kernels/lib + kernels/codegen, for the preset with the case's
// overrides), into the work directory.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/tools/tpusim-batch/CaseResult.h"
#include "sim/tools/tpusim-batch/Manifest.h"

namespace tpusim::batch {

struct RunOptions {
  int jobs = 1;
  std::string tpusim;       // the tpusim binary
  bool quiet = false;       // no progress line
  std::string progressTag;  // prefix of progress lines ("rank 1: "), may be empty
};

// The tpusim next to this executable (/proc/self/exe), or "" when there is none.
std::string tpusimBesideSelf();

// Results in the order of `cases`. Never throws for a case that fails: its
// result says so (status "error" and the message).
std::vector<CaseResult> runCases(const std::vector<const Case*>& cases, const RunOptions& options);

// The tpusim command line of a case (program = the file tpusim runs).
std::vector<std::string> tpusimCommand(const Case& c, const std::string& tpusim,
                                       const std::string& program, const std::string& statsPath,
                                       const std::vector<std::string>& inputs = {});

}  // namespace tpusim::batch
