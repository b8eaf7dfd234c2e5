// Helpers for core tests: assemble a program written in the test, load a
// preset, run it through sim::Simulation.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "isa/Assembler.h"
#include "isa/target/ChipLoader.h"
#include "sim/chip/Simulation.h"

namespace tpusim::testing {

inline isa::Program assembleOrFail(const std::string& text) {
  isa::Program p;
  std::vector<isa::Diagnostic> diags;
  bool ok = isa::assemble(text, "test.s", &p, &diags);
  std::string all;
  for (const auto& d : diags) all += isa::formatDiagnostic(d);
  INFO(all);
  REQUIRE(ok);
  return p;
}

inline target::ChipConfig preset(const std::string& name) { return target::loadChip(name); }

struct RunSpec {
  bool functional = true;
  bool strict = false;
  bool stepping = false;
  int64_t maxCycles = int64_t(1) << 40;
  sim::DmaFactory dma;
};

inline sim::SimResult runProgram(const target::ChipConfig& chip, const isa::Program& program,
                                 const RunSpec& spec = {},
                                 std::map<std::string, npy::Array> inputs = {}) {
  sim::SimOptions o;
  o.functional = spec.functional;
  o.strict = spec.strict;
  o.referenceStepping = spec.stepping;
  o.maxCycles = spec.maxCycles;
  o.dmaFactory = spec.dma;
  sim::Simulation s(chip, program, o);
  for (auto& [name, array] : inputs) s.setInput(name, array, name);
  return s.run();
}

inline int64_t stall(const sim::SimResult& r, sim::StallCause c, int core = 0) {
  return r.cores.at(core).stalls[int(c)];
}
inline int64_t lat(const target::ChipConfig& chip, isa::LatencyClass c) {
  return chip.latency.of(c);
}

}  // namespace tpusim::testing
