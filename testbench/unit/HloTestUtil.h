// What the HLO-level unit tests (fusion, lowering, data movement) share:
// parsing with the error in the test's output, and the chip presets folder.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/eval/Evaluator.h"

namespace tpusim::testing {

// HLO text -> module; the test fails with the parser's error.
inline std::unique_ptr<hlo::HloModule> parseHlo(const std::string& text) {
  std::string err;
  auto m = hlo::parseHloModule(text, &err, "test.hlo");
  INFO(err);
  REQUIRE(m);
  return m;
}

// The one module of an .hlo file; the test fails with the parser's error.
inline std::unique_ptr<hlo::HloModule> parseHloFileModule(const std::string& path) {
  hlo::ParseResult r = hlo::parseHloFile(path);
  INFO(r.error);
  REQUIRE(r.ok());
  REQUIRE(r.modules.size() == 1);
  return std::move(r.modules[0]);
}

// sim/chips of the source tree: $TPUSIM_SOURCE_DIR (set by ctest), else the
// directory CMake compiled in, else the working directory.
inline std::string presetsDir() {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
#ifdef TPUSIM_TEST_SOURCE_DIR
  const char* fallback = TPUSIM_TEST_SOURCE_DIR;
#else
  const char* fallback = ".";
#endif
  return std::string(src ? src : fallback) + "/sim/chips";
}

// The value of every array-shaped entry instruction, with the parameters
// seeded by `seed` (the evaluator's random literals): the entry's root becomes
// a tuple of all of them, so the module is changed.
inline std::map<const hlo::HloInstruction*, hlo::eval::Literal> evaluateEveryValue(
    hlo::HloModule& m, uint64_t seed) {
  hlo::HloComputation* entry = m.entry();
  std::vector<hlo::HloInstruction*> seen;
  std::vector<hlo::Shape> shapes;
  for (hlo::HloInstruction* i : entry->postOrder())
    if (i->shape().isArray()) {
      seen.push_back(i);
      shapes.push_back(i->shape());
    }
  entry->setRoot(entry->addInstruction(hlo::HloInstruction::create(
      hlo::HloOpcode::Tuple, "observe.all", hlo::Shape::tuple(shapes), seen)));
  std::vector<hlo::eval::Literal> args;
  std::vector<hlo::HloInstruction*> params = entry->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    args.push_back(hlo::eval::randomLiteral(
        params[i]->shape(), hlo::eval::parameterSeed(seed, 0, static_cast<int64_t>(i))));
  hlo::eval::Literal all = hlo::eval::evaluate(m, args);
  std::map<const hlo::HloInstruction*, hlo::eval::Literal> out;
  for (size_t i = 0; i < seen.size(); ++i) out[seen[i]] = all.elements()[i];
  return out;
}

}  // namespace tpusim::testing
