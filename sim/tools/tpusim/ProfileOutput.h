// tpusim --profile DIR: builds the run's profile (sim/prof) and writes
// DIR/profile.json, DIR/report.html and DIR/trace.json, then prints the
// overview and where the files are.
#pragma once

#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/chip/Simulation.h"
#include "sim/prof/BuildProfile.h"
#include "sim/trace/TraceRecorder.h"

namespace tpusim::sim {

// The directory must be new or empty (no mixing two runs' files), unless
// `force`, and none of the files it will hold may be one of `inputs` (no
// output overwrites an input); throws std::runtime_error naming it otherwise.
void prepareProfileDir(const std::string& dir, bool force, const std::vector<std::string>& inputs);

void writeProfile(const std::string& dir, const SimResult& run, const isa::Program& program,
                  const target::ChipConfig& chip, const TraceRecorder* trace,
                  const std::string& programName, prof::ProfileInputs inputs);

}  // namespace tpusim::sim
