// Helpers of the fusion/layout/buffer tests: parse, run passes with an explicit
// chip, evaluate on seeded random inputs.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/passes/Fusion.h"
#include "compiler/passes/PassRegistry.h"
#include "testbench/unit/HloTestUtil.h"

namespace fusiontest {

using namespace tpusim;

inline std::unique_ptr<hlo::HloModule> parse(const std::string& text) {
  return testing::parseHlo(text);
}

inline void requireVerifies(const hlo::HloModule& m) {
  hlo::VerifierResult v = hlo::verifyModule(m);
  INFO(v.message());
  REQUIRE(v.ok());
}

inline lower::TargetDescription chip(const std::string& name) { return lower::loadTarget(name); }

// Runs the fusion pass for `target` and returns its decisions.
inline passes::FusionResult fuse(hlo::HloModule& m, const lower::TargetDescription& target,
                                 int64_t maxDuplication = 3, double vmemFraction = 1.0) {
  passes::FusionResult result;
  passes::FusionConfig config;
  config.target = target;
  config.maxDuplication = maxDuplication;
  config.vmemFraction = vmemFraction;
  auto pass = passes::createFusionPass(config, &result);
  pass->run(m);
  requireVerifies(m);
  return result;
}

inline void layout(hlo::HloModule& m) {
  passes::createLayoutAssignmentPass()->run(m);
  requireVerifies(m);
}

// Seeded random arguments for every replica of the entry computation.
inline std::vector<std::vector<hlo::eval::Literal>> randomArgs(const hlo::HloModule& m,
                                                               uint64_t seed) {
  int64_t replicas = hlo::eval::replicaCountFor(m, {});
  std::vector<std::vector<hlo::eval::Literal>> args(static_cast<size_t>(replicas));
  std::vector<hlo::HloInstruction*> params = m.entry()->parameters();
  for (int64_t r = 0; r < replicas; ++r)
    for (size_t i = 0; i < params.size(); ++i)
      args[static_cast<size_t>(r)].push_back(hlo::eval::randomLiteral(
          params[i]->shape(), hlo::eval::parameterSeed(seed, r, static_cast<int64_t>(i))));
  return args;
}

// Names of the fusion instructions of the entry, with their kind.
inline std::vector<std::string> entryFusions(const hlo::HloModule& m) {
  std::vector<std::string> out;
  for (hlo::HloInstruction* i : m.entry()->postOrder())
    if (i->opcode() == hlo::HloOpcode::Fusion)
      out.push_back(i->name() + ":" + i->identAttr("kind").value_or("?"));
  return out;
}

inline int64_t countOpcode(const hlo::HloComputation& c, hlo::HloOpcode op) {
  int64_t n = 0;
  for (const auto& i : c.instructions()) n += i->opcode() == op;
  return n;
}

}  // namespace fusiontest
