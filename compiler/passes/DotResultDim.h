// Where an operand dim of a dot lands in the dot's result, shared by the
// passes that move work across a dot (DotScaleToOutput, DotThroughUpdate).
#pragma once

#include <algorithm>
#include <cstdint>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::passes {

// Operand `side`'s dim `d` in the result of `dot` (XLA's order: batch dims,
// the LHS's free dims, the RHS's free dims), or -1 for a contracted dim.
inline int64_t dotResultDim(const hlo::HloInstruction& dot, int side, int64_t d) {
  const hlo::DotDimensionNumbers& dn = dot.attrs().dot;
  auto has = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  const auto& batch = side == 0 ? dn.lhsBatch : dn.rhsBatch;
  if (has(side == 0 ? dn.lhsContracting : dn.rhsContracting, d)) return -1;
  auto b = std::find(batch.begin(), batch.end(), d);
  if (b != batch.end()) return b - batch.begin();
  auto freeBefore = [&](int s, int64_t limit) {
    const auto& bs = s == 0 ? dn.lhsBatch : dn.rhsBatch;
    const auto& cs = s == 0 ? dn.lhsContracting : dn.rhsContracting;
    int64_t n = 0;
    for (int64_t i = 0; i < limit; ++i)
      if (!has(bs, i) && !has(cs, i)) ++n;
    return n;
  };
  int64_t pos = static_cast<int64_t>(dn.lhsBatch.size()) + freeBefore(side, d);
  if (side == 1) pos += freeBefore(0, dot.operand(0)->shape().rank());
  return pos;
}

}  // namespace tpusim::passes
