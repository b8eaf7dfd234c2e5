// Compiles an HLO module (or assembles a kernel) and runs it with the real
// DMA + HBM model, then builds its profile as tpusim --profile does.
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/driver/CompileHlo.h"
#include "isa/Assembler.h"
#include "isa/target/ChipLoader.h"
#include "sim/chip/Simulation.h"
#include "sim/prof/BuildProfile.h"
#include "sim/tools/tpusim/HloProfileFacts.h"

namespace tpusim::testing {

struct ProfiledRun {
  sim::SimResult run;
  prof::Profile profile;
  driver::CompileResult compiled;  // HLO runs only
};

inline sim::SimResult simulateProgram(const target::ChipConfig& chip, const isa::Program& program,
                                      bool functional) {
  sim::SimOptions o;
  o.functional = functional;
  o.dmaFactory = sim::makeChipDma;
  sim::Simulation s(chip, program, o);
  sim::SimResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  return r;
}

// `hlo` is the module's text.
inline ProfiledRun profileHlo(const std::string& hlo, const std::string& chipName = "v5e",
                              bool functional = false) {
  std::string path = "/tmp/tpusim_profile_test_" + std::to_string(::getpid()) + ".hlo";
  std::ofstream(path) << hlo;
  target::ChipConfig chip = target::loadChip(chipName);
  ProfiledRun out;
  out.compiled = driver::compileHloFile(path, chip);
  std::remove(path.c_str());
  INFO(out.compiled.error);
  REQUIRE(out.compiled.ok());
  prof::ProfileInputs in;
  in.program = "test.hlo";
  sim::addHloProfileFacts(out.compiled, &in);
  out.run = simulateProgram(chip, out.compiled.lowered.program, functional);
  out.profile = prof::buildProfile(out.run, out.compiled.lowered.program, chip, in);
  return out;
}

inline ProfiledRun profileAssembly(const std::string& text, const std::string& chipName = "v5e") {
  isa::Program program;
  std::vector<isa::Diagnostic> diags;
  bool ok = isa::assemble(text, "test.s", &program, &diags);
  for (const isa::Diagnostic& d : diags) INFO(isa::formatDiagnostic(d));
  REQUIRE(ok);
  target::ChipConfig chip = target::loadChip(chipName);
  ProfiledRun out;
  out.run = simulateProgram(chip, program, false);
  prof::ProfileInputs in;
  in.program = "test.s";
  out.profile = prof::buildProfile(out.run, program, chip, in);
  return out;
}

inline const prof::OpProfile& opNamed(const prof::Profile& p, const std::string& name) {
  for (const prof::OpProfile& op : p.ops)
    if (op.name == name) return op;
  FAIL("no op named " << name);
  return p.ops.front();
}

}  // namespace tpusim::testing
