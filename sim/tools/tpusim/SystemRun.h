// tpusim --topology: the run of a multi-chip system (sim/system), kept apart
// from the single-chip driver. Inputs: --input NAME=x.npy for every device,
// --input NAME@D=x.npy for device D; outputs: NAME.dD.npy per device.
#pragma once

#include <functional>
#include <string>

#include "isa/Program.h"
#include "isa/target/ChipConfig.h"
#include "sim/chip/Simulation.h"
#include "sim/prof/BuildProfile.h"
#include "sim/tools/tpusim/TpusimDriver.h"

namespace tpusim::sim {

// Returns the exit code; throws std::runtime_error on a user error.
// `bufferName` maps an --input name (a buffer or an entry parameter) to its buffer.
// With --profile, `profileInputs` holds what the compiler knew (may be empty).
int runSystem(const TpusimArgs& a, const target::ChipConfig& chip, const isa::Program& program,
              const SimOptions& options,
              const std::function<std::string(const std::string&)>& bufferName,
              const prof::ProfileInputs& profileInputs);

}  // namespace tpusim::sim
