#include "sim/tools/tpusim/HloProgram.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "compiler/driver/CompileHlo.h"
#include "isa/ProgramFile.h"
#include "sim/tools/tpusim/HloProfileFacts.h"

namespace tpusim::sim {

bool isHloPath(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".hlo") == 0;
}

isa::Program compileHlo(const std::string& hloPath, const target::ChipConfig& chip,
                        prof::ProfileInputs* profileFacts) {
  driver::CompileResult r = driver::compileHloFile(hloPath, chip);
  if (!r.ok()) {
    fmt::print(stderr, "{}\n", r.error);
    throw std::runtime_error(fmt::format("{}: compiling failed (errors above)", hloPath));
  }
  for (const std::string& note : r.notes) fmt::print(stderr, "{}\n", note);
  if (profileFacts) addHloProfileFacts(r, profileFacts);
  // Through the bytes tpuc would have written: the program tpusim runs is
  // exactly the one a .tpuprog holds, and one the reader rejects is an error.
  std::vector<uint8_t> bytes;
  std::string error;
  isa::Program program;
  auto invalid = [&] {
    return std::runtime_error(
        fmt::format("{}: the compiled program is invalid: {}", hloPath, error));
  };
  // (Not read back by the writer: parseProgram below checks the same.)
  if (!isa::serializeProgram(r.lowered.program, &bytes, &error, /*readBack=*/false))
    throw invalid();
  // The bytes hold the code now: free the compiled copy (8x their size) first.
  std::vector<isa::Bundle>().swap(r.lowered.program.code);
  std::vector<isa::SharedBody>().swap(r.lowered.program.bodies);
  std::vector<isa::BodyInstance>().swap(r.lowered.program.instances);
  if (!isa::parseProgram(bytes.data(), bytes.size(), hloPath, &program, &error)) throw invalid();
  return program;
}

}  // namespace tpusim::sim
