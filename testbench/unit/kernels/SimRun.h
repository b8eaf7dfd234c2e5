// Helpers for kernel tests that run compiled programs on the simulator
// library (functional mode, --strict, the real DMA + HBM model) and compare
// with interpret mode.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/dsl/HostArrayIo.h"
#include "sim/chip/Simulation.h"
#include "sim/config/ChipLoader.h"

namespace tpusim::testing {

inline std::string kernelChipsDir() {
  if (const char* src = std::getenv("TPUSIM_SOURCE_DIR")) return std::string(src) + "/sim/chips";
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/testbench/")) + "/sim/chips";
}

inline kernels::codegen::TargetInfo kernelTarget(const std::string& chip) {
  return kernels::codegen::loadTargetByName(chip, kernelChipsDir());
}

// Runs `program` functionally under --strict; inputs by buffer name.
inline sim::SimResult simulate(const std::string& chip, const isa::Program& program,
                               const std::map<std::string, kernels::dsl::HostArray>& inputs) {
  sim::SimOptions o;
  o.functional = true;
  o.strict = true;
  o.dmaFactory = sim::makeChipDma;
  sim::Simulation s(sim::loadChip(kernelChipsDir() + "/" + chip + ".json"), program, o);
  for (const auto& [name, a] : inputs) s.setInput(name, kernels::dsl::toNpy(a), name);
  sim::SimResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  REQUIRE_FALSE(r.fault);
  return r;
}

// The simulator's output `name` read back as a HostArray of `like`'s shape and dtype.
inline kernels::dsl::HostArray simOutput(const sim::SimResult& r, const std::string& name,
                                         const kernels::dsl::HostArray& like) {
  auto it = r.outputs.find(name);
  REQUIRE(it != r.outputs.end());
  return kernels::dsl::fromNpy(it->second, like.dtype, name);
}

// Number of elements whose bits differ (the first few are printed).
inline int64_t bitDifferences(const kernels::dsl::HostArray& want,
                              const kernels::dsl::HostArray& got) {
  REQUIRE(want.shape == got.shape);
  int64_t bad = 0;
  for (size_t i = 0; i < want.words.size(); ++i)
    if (want.words[i] != got.words[i] && ++bad <= 5)
      UNSCOPED_INFO("element " << i << ": want 0x" << std::hex << want.words[i] << " got 0x"
                               << got.words[i] << std::dec);
  return bad;
}

}  // namespace tpusim::testing
