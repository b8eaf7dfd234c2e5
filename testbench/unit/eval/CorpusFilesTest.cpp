// Every module of the external HLO corpus (HloCorpus.h) whose ops the evaluator supports evaluates
// on seeded random inputs without error; the others are skipped with the reason.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "testbench/unit/HloCorpus.h"

using namespace tpusim::hlo;
using namespace tpusim::hlo::eval;

TEST_CASE("corpus HLO files evaluate on random inputs", "[eval][corpus]") {
  std::vector<std::string> files = tpusim::testing::requireHloCorpus();
  int evaluated = 0;
  for (const std::string& file : files) {
    ParseResult parsed = parseHloFile(file);
    INFO(file);
    REQUIRE(parsed.ok());
    for (const auto& module : parsed.modules) {
      std::vector<std::string> missing = unsupportedInstructions(*module);
      if (!missing.empty()) {
        WARN(
            fmt::format("skipped {} ({}): unsupported {}{}", file, module->name(), missing[0],
                        missing.size() > 1 ? fmt::format(" and {} more", missing.size() - 1) : ""));
        continue;
      }
      EvalOptions options;
      int64_t replicas = replicaCountFor(*module, options);
      std::vector<std::vector<eval::Literal>> args(static_cast<size_t>(replicas));
      std::vector<HloInstruction*> params = module->entry()->parameters();
      for (int64_t r = 0; r < replicas; ++r)
        for (size_t i = 0; i < params.size(); ++i)
          args[static_cast<size_t>(r)].push_back(
              randomLiteral(params[i]->shape(), parameterSeed(7, r, static_cast<int64_t>(i))));
      std::vector<eval::Literal> results;
      try {
        results = evaluateReplicated(*module, args, options);
      } catch (const EvalError& e) {
        FAIL(fmt::format("{} ({}): {}", file, module->name(), e.what()));
      }
      CHECK(static_cast<int64_t>(results.size()) == replicas);
      ++evaluated;
    }
  }
  CHECK(evaluated >= 10);
}
