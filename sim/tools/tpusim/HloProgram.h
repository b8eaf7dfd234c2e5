// `tpusim IN.hlo`: compiles the module with the `tpuc` next to tpusim into a
// temporary .tpuprog for exactly the chip being simulated (the preset with
// every --set applied, written as JSON), then tpusim runs it as any program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/target/ChipConfig.h"
#include "sim/tools/tpusim/Subprocess.h"

namespace tpusim::sim {

// One line of tpuc's --io-map: an input buffer and the entry parameter it
// holds, or an output buffer.
struct IoMapEntry {
  bool input = false;
  std::string name;
  int64_t parameter = -1;  // inputs
  bool tupleLeaf = false;  // an input that is one leaf of a tuple parameter
};

struct CompiledHlo {
  std::string programPath;
  std::vector<IoMapEntry> io;
};

bool isHloPath(const std::string& path);

// Runs tpuc; throws std::runtime_error when it is missing or fails (its own
// error messages are on stderr already).
CompiledHlo compileHlo(const std::string& hloPath, const target::ChipConfig& chip,
                       const TempDir& dir);

}  // namespace tpusim::sim
