// Fusion lowering of the fusions the tpuc-like pipeline makes of the model
// traces: every compute instruction of the entry lowers, and its kernel in
// interpret mode matches the reference evaluator.
#include "testbench/unit/HloCorpus.h"
#include "testbench/unit/compiler/LoweringHarness.h"

#include <filesystem>

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

namespace {

// Lowers (without running) every compute instruction after the pipeline;
// anything but success or CannotLower fails the test. Returns the refusals.
std::vector<std::string> lowerEvery(hlo::HloModule& m, int* lowered) {
  std::vector<std::string> refused;
  *lowered = 0;
  for (hlo::HloComputation* c : std::vector<hlo::HloComputation*>{m.entry()})
    for (hlo::HloInstruction* i : c->postOrder()) {
      if (!lower::isComputeInstruction(*i)) continue;
      try {
        lower::lowerToKernel(*i, v5e());
        ++*lowered;
      } catch (const lower::CannotLower& e) {
        refused.push_back(e.what());
      }
    }
  return refused;
}

}  // namespace

TEST_CASE("every fusion of the committed traces lowers", "[lowering][traces]") {
  for (const char* name :
       {"llama_tiny_prefill.hlo", "llama_tiny_decode.hlo", "llama2_7b_layer_prefill_2048.hlo",
        "llama2_7b_layer_decode_2048.hlo", "llama2_7b_layer_decode_2048_int8.hlo",
        "llama3_8b_layer_prefill_2048.hlo", "llama3_8b_layer_decode_2048.hlo"}) {
    INFO(name);
    auto m = parseFile(trace(name));
    runPasses(*m, kPipeline);
    int lowered = 0;
    std::vector<std::string> refused = lowerEvery(*m, &lowered);
    for (const auto& r : refused) UNSCOPED_INFO(r);
    CHECK(refused.empty());
    CHECK(lowered > 5);
  }
}

TEST_CASE("every corpus HLO file lowers or says clearly what it cannot lower",
          "[lowering][corpus]") {
  int files = 0, lowered = 0, refusedCount = 0;
  for (const std::string& path : tpusim::testing::requireHloCorpus()) {
    hlo::ParseResult r = hlo::parseHloFile(path);
    if (!r.ok() || r.modules.size() != 1) continue;
    ++files;
    INFO(path);
    hlo::HloModule& m = *r.modules[0];
    runPasses(m, kPipeline);
    int n = 0;
    std::vector<std::string> refused = lowerEvery(m, &n);  // throws anything else
    lowered += n;
    refusedCount += static_cast<int>(refused.size());
    for (const auto& msg : refused) {
      CHECK(msg.rfind("cannot lower %", 0) == 0);
      if (std::getenv("TPUSIM_PRINT_REFUSALS")) fmt::print("{}\n", msg);
    }
  }
  CHECK(files > 10);
  CHECK(lowered > 0);
  WARN(fmt::format("HLO corpus: {} files, {} kernels lowered, {} instructions refused", files,
                   lowered, refusedCount));
}
