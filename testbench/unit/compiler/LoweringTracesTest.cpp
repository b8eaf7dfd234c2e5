// Fusion lowering of the fusions the tpuc-like pipeline makes of the model
// traces: every compute instruction of the entry lowers, and its kernel in
// interpret mode matches the reference evaluator.
#include "testbench/unit/compiler/LoweringHarness.h"

using namespace lowertest;

namespace {

const char* kPipeline = "dce,cse,algsimp,dot-canonicalize,fusion";

std::string trace(const std::string& name) {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  return std::string(src ? src : ".") + "/traces/" + name;
}

void checkTrace(const std::string& name, int minChecked) {
  auto m = parseFile(trace(name));
  runPasses(*m, kPipeline);
  int checked = 0;
  std::vector<std::string> refused = checkModule(*m, 5, &checked);
  for (const auto& r : refused) UNSCOPED_INFO(r);
  CHECK(refused.empty());
  CHECK(checked >= minChecked);
}

}  // namespace

TEST_CASE("llama_micro_prefill fusions lower and match the evaluator", "[lowering][traces]") {
  checkTrace("llama_micro_prefill.hlo", 10);
}

TEST_CASE("llama_micro_decode fusions lower and match the evaluator", "[lowering][traces]") {
  checkTrace("llama_micro_decode.hlo", 10);
}

TEST_CASE("llama_micro_gqa_prefill fusions lower and match the evaluator", "[lowering][traces]") {
  checkTrace("llama_micro_gqa_prefill.hlo", 10);
}
