#include "kernels/codegen/StepMxuCycles.h"

#include <algorithm>

namespace tpusim::kernels::codegen {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Summed over the MXUs (not yet divided by their count); -1: not known.
int64_t blockCycles(const llo::Block& b, const TargetInfo& t) {
  int64_t total = 0;
  for (const auto& op : b.ops) {
    if (op->kind == llo::OpKind::Matmul) {
      if (op->ints.size() > 7 && op->ints[7] >= 1) return -1;  // latched
      const auto views = llo::opViews(*op);
      const int64_t M = op->ints[0], N = op->ints[1], K = op->ints[2], S = t.mxuSize;
      const bool transRhs = op->ints[4];
      // As LowerMatmul: s8 x s8 pushes two K chunks per tile past K = S.
      const bool s8 = views[1].ref->type.dtype == llo::DType::S8;
      const int64_t D = s8 && t.int8Rate >= 2 && K > S ? 2 * S : S;
      const int64_t tiles = ceilDiv(N, S) * ceilDiv(K, D);
      const int64_t push = transRhs ? 2 * S : S, rows = 8 * ceilDiv(M, 8);
      total += tiles * std::max(push, rows);
      continue;
    }
    if (op->kind == llo::OpKind::If) {
      int64_t longest = 0;
      for (const llo::Block& r : op->regions) {
        const int64_t c = blockCycles(r, t);
        if (c < 0) return -1;
        longest = std::max(longest, c);
      }
      total += longest;
      continue;
    }
    if (!op->regions.empty()) return -1;  // a loop: its trip count is not read here
  }
  return total;
}

}  // namespace

int64_t stepMxuCycles(const llo::Kernel& k, const TargetInfo& t) {
  const int64_t c = blockCycles(k.body->body, t);
  return c < 0 ? -1 : c / std::max(1, t.mxuCount);
}

}  // namespace tpusim::kernels::codegen
