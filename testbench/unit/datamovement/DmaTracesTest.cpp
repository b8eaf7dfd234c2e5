// Every data-movement instruction the lowering pipeline leaves at the top
// level of the committed Llama traces (embedding gathers, KV-cache
// dynamic-update-slices, the slices / concatenates / transposes of rotary
// embeddings), lowered alone at its own addresses and run on the simulator
// with the evaluated values of its operands, equals the evaluator bit for bit.
#include "compiler/passes/PassPipeline.h"
#include "testbench/unit/datamovement/DmaHarness.h"

using namespace dmatest;

namespace {

// The module lowering's default pipeline (compiler/driver/ModuleLoweringPipeline.h).
const char* kLoweringPasses =
    "inline,dot-precision-split,dot-canonicalize,algsimp,constant-folding,cse,dce,fusion,dce";

int checkTrace(const std::string& file) {
  hlo::ParseResult parsed =
      hlo::parseHloFile(std::string(TPUSIM_TEST_SOURCE_DIR) + "/traces/" + file);
  INFO(parsed.error);
  REQUIRE(parsed.ok());
  hlo::HloModule& m = *parsed.modules.at(0);
  passes::PassPipeline pipeline;
  std::string error;
  REQUIRE(pipeline.addPasses(kLoweringPasses, &error));
  REQUIRE(pipeline.run(m, &error));
  std::vector<hlo::HloInstruction*> seen = m.entry()->postOrder();
  std::map<const hlo::HloInstruction*, Literal> value = testing::evaluateEveryValue(m, 3);
  int checked = 0;
  for (hlo::HloInstruction* i : seen) {
    if (!value.count(i) || !lower::isDataMovement(*i)) continue;
    bool arrays = true;
    for (const hlo::HloInstruction* o : i->operands()) arrays = arrays && value.count(o);
    if (!arrays) continue;
    INFO(file << ": " << i->toString());
    runInstruction(
        *i, [&](const hlo::HloInstruction* o) { return value.at(o); }, value.at(i), RunOptions{});
    ++checked;
  }
  return checked;
}

}  // namespace

TEST_CASE("data movement of the traces equals the evaluator", "[dma][traces]") {
  CHECK(checkTrace("llama_micro_prefill.hlo") > 0);
  CHECK(checkTrace("llama_micro_decode.hlo") > 0);
  CHECK(checkTrace("llama_micro_gqa_prefill.hlo") > 5);
  CHECK(checkTrace("llama_tiny_decode.hlo") > 16);
}
