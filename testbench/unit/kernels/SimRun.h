// Helpers for kernel tests that run compiled programs on the simulator
// library (functional mode, --strict, the real DMA + HBM model) and compare
// with interpret mode.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "isa/target/ChipLoader.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/TargetInfo.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/dsl/Interpret.h"
#include "sim/chip/Simulation.h"

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
  sim::Simulation s(target::loadChip(kernelChipsDir() + "/" + chip + ".json"), program, o);
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

// Compiles `k` for `chip`, runs it on the simulator with inputs seeded by
// `seed` and checks that every output equals interpret mode bit for bit
// (interpret mode accumulating like the chip's MXU size). Returns the compiled
// kernel and interpret mode's outputs. `options` may place the HBM arrays.
struct SimCheck {
  kernels::codegen::CompiledKernel compiled;
  std::vector<kernels::dsl::HostArray> want;
};
inline SimCheck checkSimAgainstInterpret(const kernels::llo::Kernel& k, const std::string& chip,
                                         uint64_t seed,
                                         const kernels::codegen::CompileOptions& options = {}) {
  std::mt19937_64 rng(seed);
  std::vector<kernels::dsl::HostArray> ins;
  std::map<std::string, kernels::dsl::HostArray> named;
  for (const kernels::llo::ArrayOperand& a : k.inputs) {
    ins.push_back(kernels::dsl::randomArray(a.shape, a.dtype, rng));
    named[a.name] = ins.back();
  }
  kernels::codegen::TargetInfo target = kernelTarget(chip);
  kernels::dsl::InterpretOptions io;
  io.mxuSize = target.mxuSize;
  SimCheck out;
  out.want = kernels::dsl::interpret(k, ins, io).outputs;
  out.compiled = kernels::codegen::compileKernel(k, target, options);
  sim::SimResult r = simulate(chip, out.compiled.program, named);
  for (size_t i = 0; i < k.outputs.size(); ++i)
    CHECK(bitDifferences(out.want[i], simOutput(r, k.outputs[i].name, out.want[i])) == 0);
  return out;
}

}  // namespace tpusim::testing
