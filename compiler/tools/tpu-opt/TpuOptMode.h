// Extension point of tpu-opt: alternative modes that consume the parsed (and
// optimized) modules instead of printing them, e.g. `--evaluate`.
//
// To add one, create <Name>Mode.cpp in this folder (CMake picks up every
// *Mode.cpp) that defines its own llvm::cl options and registers itself:
//
//   static tpuopt::ModeRegistration reg({"evaluate",
//       [] { return Evaluate.getValue(); },              // requested?
//       [](tpuopt::ModeInput& in) { ... return 0; }});   // exit code
//
// main() runs the first registered mode whose `requested()` is true after the
// passes ran; it prints nothing itself then.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpuopt {

struct ModeInput {
  std::string inputPath;                                          // the IN.hlo argument
  std::vector<std::unique_ptr<tpusim::hlo::HloModule>>* modules;  // verified, after passes
};

struct Mode {
  std::string name;
  std::function<bool()> requested;
  std::function<int(ModeInput&)> run;  // the tool's exit code
};

struct ModeRegistration {
  explicit ModeRegistration(Mode mode);
};

const std::vector<Mode>& registeredModes();

}  // namespace tpuopt
