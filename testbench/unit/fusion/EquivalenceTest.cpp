// Layout assignment and fusion never change what a module computes: for the
// Llama decoder block, the micro model traces and every module of the
// external HLO corpus (HloCorpus.h), the passes' output
// verifies, prints and parses back to an equal module, and (where the evaluator
// supports the module) evaluates bit for bit to the original's results on
// seeded random inputs.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "compiler/hlo/HloEquality.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/passes/PassPipeline.h"
#include "testbench/unit/HloCorpus.h"
#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace fusiontest;
using namespace tpusim;

namespace {

// The project's own inputs: the Llama block and the micro model traces.
std::vector<std::string> ownFiles() {
  std::vector<std::string> files;
  if (const char* src = std::getenv("TPUSIM_SOURCE_DIR")) {
    files.push_back(std::string(src) + "/testbench/lit/hlo/Inputs/llama_decoder_block.hlo");
    // The micro model traces (small enough to evaluate quickly), when present.
    std::vector<std::string> traces;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::string(src) + "/traces", ec))
      if (e.path().extension() == ".hlo" &&
          e.path().filename().string().rfind("llama_micro_", 0) == 0)
        traces.push_back(e.path().string());
    std::sort(traces.begin(), traces.end());
    files.insert(files.end(), traces.begin(), traces.end());
  }
  return files;
}

struct Counts {
  int modules = 0, evaluated = 0, fusions = 0;
};

void checkPipeline(const hlo::HloModule& original, const std::string& passList,
                   const std::vector<hlo::eval::Literal>* expected,
                   const std::vector<std::vector<hlo::eval::Literal>>& args, Counts& counts) {
  INFO("passes: " << passList);
  auto module = original.clone();
  passes::PassPipeline pipeline;
  std::string err;
  REQUIRE(pipeline.addPasses(passList, &err));
  INFO(err);
  REQUIRE(pipeline.run(*module, &err));  // verifies after each pass
  for (const auto& c : module->computations())
    counts.fusions += static_cast<int>(countOpcode(*c, hlo::HloOpcode::Fusion));

  std::string text = hlo::printModule(*module);
  auto reparsed = hlo::parseHloModule(text, &err, "printed.hlo");
  INFO(err);
  REQUIRE(reparsed);
  std::string why;
  bool equal = hlo::modulesEqual(*module, *reparsed, &why);
  INFO("round trip: " << why);
  CHECK(equal);

  if (!expected) return;
  std::vector<hlo::eval::Literal> got;
  try {
    got = hlo::eval::evaluateReplicated(*module, args);
  } catch (const hlo::eval::EvalError& e) {
    FAIL(fmt::format("evaluating after {}: {}", passList, e.what()));
  }
  REQUIRE(got.size() == expected->size());
  for (size_t r = 0; r < got.size(); ++r) {
    INFO("replica " << r << ": expected " << (*expected)[r].toString(8) << ", got "
                    << got[r].toString(8));
    CHECK(got[r] == (*expected)[r]);
  }
}

Counts checkFiles(const std::vector<std::string>& files) {
  Counts counts;
  for (const std::string& file : files) {
    hlo::ParseResult parsed = hlo::parseHloFile(file);
    INFO(file);
    REQUIRE(parsed.ok());
    for (const auto& module : parsed.modules) {
      INFO("module " << module->name());
      ++counts.modules;
      bool supported = hlo::eval::unsupportedInstructions(*module).empty();
      auto args = randomArgs(*module, 11);
      std::vector<hlo::eval::Literal> expected;
      if (supported) {
        try {
          expected = hlo::eval::evaluateReplicated(*module, args);
          ++counts.evaluated;
        } catch (const hlo::eval::EvalError& e) {
          supported = false;  // e.g. a random index out of range: compare structure only
          WARN(fmt::format("{} ({}): not compared: {}", file, module->name(), e.what()));
        }
      }
      const std::vector<hlo::eval::Literal>* want = supported ? &expected : nullptr;
      checkPipeline(*module, "layout-assignment", want, args, counts);
      checkPipeline(*module, "fusion", want, args, counts);
      checkPipeline(*module, "layout-assignment,fusion", want, args, counts);
      checkPipeline(*module, "inline,layout-assignment,fusion,dce", want, args, counts);
    }
  }
  return counts;
}

}  // namespace

TEST_CASE("layout assignment and fusion preserve the values of the project's modules",
          "[fusion][equivalence]") {
  std::vector<std::string> files = ownFiles();
  REQUIRE(files.size() >= 2);  // TPUSIM_SOURCE_DIR is set by ctest
  Counts counts = checkFiles(files);
  CHECK(counts.modules == int(files.size()));
  CHECK(counts.evaluated == counts.modules);
  CHECK(counts.fusions >= 20);
}

TEST_CASE("layout assignment and fusion preserve every corpus module's values",
          "[fusion][equivalence][corpus]") {
  std::vector<std::string> files = ownFiles(), corpus = testing::requireHloCorpus();
  files.insert(files.end(), corpus.begin(), corpus.end());
  // Every file is checked; most of them also numerically.
  Counts counts = checkFiles(files);
  CHECK(counts.modules >= 20);
  CHECK(counts.evaluated >= 10);
  CHECK(counts.fusions >= 100);
}
