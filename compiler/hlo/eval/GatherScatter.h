// gather and scatter with XLA's full dimension numbers (including the
// operand/indices batching dims). Gather clamps each start index so the slice
// stays inside the operand; scatter skips an update window that would not fit
// entirely inside the operand, and applies updates in row-major order of the
// updates with the combiner computation.
#pragma once

#include <vector>

#include "compiler/hlo/eval/Literal.h"
#include "compiler/hlo/eval/Reduce.h"

namespace tpusim::hlo::eval {

struct GatherDims {
  std::vector<int64_t> offsetDims, collapsedSliceDims, startIndexMap, operandBatchingDims,
      startIndicesBatchingDims, sliceSizes;
  int64_t indexVectorDim = 0;
};

Literal gatherLit(const Literal& operand, const Literal& indices, const GatherDims& dims,
                  const std::vector<int64_t>& outDims);

struct ScatterDims {
  std::vector<int64_t> updateWindowDims, insertedWindowDims, scatterDimsToOperandDims,
      inputBatchingDims, scatterIndicesBatchingDims;
  int64_t indexVectorDim = 0;
};

// Variadic: operands and updates pair up; the combiner gets (old..., update...).
std::vector<Literal> scatterLit(const std::vector<const Literal*>& operands, const Literal& indices,
                                const std::vector<const Literal*>& updates, const ScatterDims& dims,
                                const Reducer& combiner);

}  // namespace tpusim::hlo::eval
