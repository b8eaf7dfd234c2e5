#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<HloPass> (*create)();
};

const Entry kPasses[] = {
    {"dce", createDcePass},
    {"cse", createCsePass},
    {"constant-folding", createConstantFoldingPass},
    {"algsimp", createAlgebraicSimplifierPass},
    {"dot-canonicalize", createDotCanonicalizerPass},
    {"inline", createCallInlinerPass},
    {"layout-assignment", createLayoutAssignmentPass},
    {"fusion", createFusionPass},
    {"multi-output-fusion", createMultiOutputFusionPass},
    {"row-reduce-fusion", createRowReduceFusionPass},
    {"promote-to-f32", createPromoteToF32Pass},
    {"int64-to-pairs", createInt64ToPairsPass},
    {"rng-bit-generator-expander", createRngBitGeneratorExpanderPass},
    {"sort-expander", createSortExpanderPass},
    {"spmd-collectives", createSpmdCollectivesPass},
    {"dot-precision-split", createDotPrecisionSplitPass},
    {"dot-scale-to-output", createDotScaleToOutputPass},
    {"dot-through-update", createDotThroughUpdatePass},
    {"update-to-select", createUpdateToSelectPass},
    {"attention-backward", createAttentionBackwardPass},
    {"flash-attention", createFlashAttentionPass},
};

}  // namespace

std::unique_ptr<HloPass> createPass(std::string_view name) {
  for (const Entry& e : kPasses)
    if (name == e.name) return e.create();
  return nullptr;
}

std::vector<std::string> registeredPassNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPasses) names.push_back(e.name);
  return names;
}

}  // namespace tpusim::passes
