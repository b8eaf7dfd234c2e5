// Every pass by name: dce, cse, constant-folding, algsimp, dot-canonicalize, inline,
// spmd-collectives, int64-to-pairs, rng-bit-generator-expander, sort-expander,
// layout-assignment, fusion, multi-output-fusion, row-reduce-fusion, promote-to-f32,
// dot-precision-split, dot-scale-to-output, flash-attention.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/passes/HloPass.h"

namespace tpusim::passes {

// A new instance of the named pass, or nullptr for an unknown name.
std::unique_ptr<HloPass> createPass(std::string_view name);
// The names createPass knows, in a stable order.
std::vector<std::string> registeredPassNames();

// Factories of each pass (defined in the pass's own file).
std::unique_ptr<HloPass> createDcePass();
std::unique_ptr<HloPass> createCsePass();
std::unique_ptr<HloPass> createConstantFoldingPass();
std::unique_ptr<HloPass> createAlgebraicSimplifierPass();
std::unique_ptr<HloPass> createDotCanonicalizerPass();
std::unique_ptr<HloPass> createDotPrecisionSplitPass();
// dot-scale-to-output (DotScaleToOutput.cpp): a dequantization scale moved to the dot's result.
std::unique_ptr<HloPass> createDotScaleToOutputPass();
std::unique_ptr<HloPass> createDotThroughUpdatePass();
std::unique_ptr<HloPass> createUpdateToSelectPass();
// flash-attention (FlashAttentionRewrite.cpp): materialized causal attention ->
// tpu.flash_attention.
std::unique_ptr<HloPass> createFlashAttentionPass();
// attention-backward (AttentionBackwardRewrite.cpp): the materialized gradient of
// softmax attention -> custom-call tpu.attention_backward (dq, dk, dv).
std::unique_ptr<HloPass> createAttentionBackwardPass();
std::unique_ptr<HloPass> createCallInlinerPass();
// layout-assignment and fusion (fusion reads the chip from passOptions(), PassOptions.h).
std::unique_ptr<HloPass> createLayoutAssignmentPass();
std::unique_ptr<HloPass> createFusionPass();
// multi-output-fusion (MultiOutputFusion.cpp): sibling reductions of one input in one fusion.
std::unique_ptr<HloPass> createMultiOutputFusionPass();
// row-reduce-fusion (RowReduceFusion.cpp): a row reduction into the fusion that reads it back
// along its rows.
std::unique_ptr<HloPass> createRowReduceFusionPass();
// promote-to-f32 (PromoteToF32.cpp): bf16 computation in f32, for reference checks.
std::unique_ptr<HloPass> createPromoteToF32Pass();
std::unique_ptr<HloPass> createInt64ToPairsPass();
// rng-bit-generator-expander (RngBitGeneratorExpander.cpp): Philox as u32 arithmetic.
std::unique_ptr<HloPass> createRngBitGeneratorExpanderPass();
// sort-expander (SortExpander.cpp): small sorts as a bitonic network on the VPU.
std::unique_ptr<HloPass> createSortExpanderPass();
// spmd-collectives (SpmdCollectives.cpp): collectives -> the SPMD primitives the back end lowers.
std::unique_ptr<HloPass> createSpmdCollectivesPass();

}  // namespace tpusim::passes
