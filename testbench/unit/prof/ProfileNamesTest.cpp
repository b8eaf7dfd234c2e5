// op_name cleanup, folding across layers and XProf's categories.
#include <catch2/catch.hpp>

#include "sim/prof/OpCategory.h"
#include "sim/prof/OpNames.h"

using namespace tpusim::prof;

TEST_CASE("op names lose their jit scopes and parameters and fold across layers", "[prof]") {
  CHECK(
      cleanOpName("jit(f)/jit(main)/layers_3/ffn/dot_general[dimension_numbers=(((1,), (0,)))]") ==
      "layers_3/ffn/dot_general");
  CHECK(cleanOpName("") == "");
  FoldedName f = foldLayers("layers_12/attention/mul");
  CHECK(f.folded == "layers_*/attention/mul");
  CHECK(f.layer == 12);
  f = foldLayers("model/layers_2/blocks/layers_5/add");
  CHECK(f.folded == "model/layers_*/blocks/layers_*/add");
  CHECK(f.layer == 2);
  // Not a layer scope: no digits, or more after them, or not a whole scope.
  CHECK(foldLayers("layers_x/add").layer == -1);
  CHECK(foldLayers("layers_3a/add").folded == "layers_3a/add");
  CHECK(foldLayers("mylayers_3/add").folded == "mylayers_3/add");
  CHECK(foldLayers("fusion.12").folded == "fusion.12");
}

TEST_CASE("XProf categories from opcodes and fusion members", "[prof]") {
  CHECK(categoryOf({"fusion", {"dot", "add"}}) == Category::MatmulFusion);
  CHECK(categoryOf({"fusion", {"multiply", "reduce"}}) == Category::Reduction);
  CHECK(categoryOf({"fusion", {"multiply", "exponential"}}) == Category::LoopFusion);
  CHECK(categoryOf({"fusion", {"transpose", "copy"}}) == Category::DataFormatting);
  CHECK(categoryOf({"fusion", {"dynamic-update-slice", "add"}}) == Category::DynamicSlice);
  CHECK(categoryOf({"copy", {}}) == Category::DataFormatting);
  CHECK(categoryOf({"while", {}}) == Category::ControlFlow);
  CHECK(categoryOf({"all-reduce", {}}) == Category::Collective);
  CHECK(categoryOf({"custom-call", {}}) == Category::LibraryKernel);
  CHECK(categoryOfName("dot.3", true) == Category::MatmulFusion);
  CHECK(categoryOfName("transpose.1", false) == Category::DataFormatting);
  CHECK(categoryOfName("fusion.7", false) == Category::LoopFusion);
  CHECK(categoryOfName("fusion.multi_output", false) == Category::LoopFusion);
  CHECK(categoryOfName("fusion.multi_output.2", true) == Category::MatmulFusion);
  CHECK(categoryOfName("flash_attention", true) == Category::MatmulFusion);
  CHECK(categoryOfName("rms_norm", false) == Category::LibraryKernel);
  CHECK(categoryOfName("(no op)", false) == Category::Other);
}
