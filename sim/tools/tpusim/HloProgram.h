// `tpusim IN.hlo`: compiles the module in process with the compiler driver
// (compiler/driver/CompileHlo.h, what tpuc runs) for exactly the chip being
// simulated (the preset with every --set applied), then tpusim runs the
// program as any other. The program's signature (isa/Program.h) says which
// input buffer holds which entry parameter and names the outputs.
#pragma once

#include <string>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/prof/BuildProfile.h"

namespace tpusim::sim {

bool isHloPath(const std::string& path);

// Compiles `hloPath`. On failure prints the compiler's messages on stderr,
// exactly as tpuc prints them, and throws std::runtime_error.
// With `profileFacts`, also records what the profiler needs from the compiler
// (HloProfileFacts.h).
isa::Program compileHlo(const std::string& hloPath, const target::ChipConfig& chip,
                        prof::ProfileInputs* profileFacts = nullptr);

}  // namespace tpusim::sim
