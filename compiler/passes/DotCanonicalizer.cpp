// Dot canonicalization: every dot becomes
//   reshape(dot(L, R)) with L = [B, M, K], R = [B, K, N],
//   lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1},
// where L is the lhs transposed to (batch, free, contracting) and reshaped,
// and R is the rhs transposed to (batch, contracting, free) and reshaped --
// or, when the rhs's contracting dims are already its most minor ones, R =
// [B, N, K] (rhs_contracting_dims={2}): the MXU loads such weights transposed,
// so only major dims move (a [seq, heads, dim] K cache becomes [heads, seq,
// dim] with whole rows of `dim` per DMA run, not an element-wise transpose).
// B, M, K or N is 1 where the original has no such dimensions. Identity
// transposes and reshapes are not emitted; dots already in this form are kept.
#include <algorithm>
#include <climits>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

int64_t product(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s.dims[d];
  return p;
}

std::vector<int64_t> freeDims(const Shape& s, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end())
      out.push_back(i);
  return out;
}

// x transposed by `perm` (if not identity) and reshaped to `dims` (if different).
HloInstruction* arrange(hlo::HloComputation* comp, HloInstruction* x,
                        const std::vector<int64_t>& perm, const std::vector<int64_t>& dims) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  if (!identity) {
    std::vector<int64_t> tdims;
    for (int64_t p : perm) tdims.push_back(x->shape().dims[p]);
    x = addNew(comp, HloOpcode::Transpose, x->name() + ".transpose",
               Shape::array(x->shape().type, tdims), {x});
    x->attrs().dimensions = perm;
  }
  if (x->shape().dims != dims)
    x = addNew(comp, HloOpcode::Reshape, x->name() + ".reshape",
               Shape::array(x->shape().type, dims), {x});
  return x;
}

bool isCanonical(const HloInstruction& dot) {
  const auto& d = dot.attrs().dot;
  return dot.operand(0)->shape().rank() == 3 && dot.operand(1)->shape().rank() == 3 &&
         d.lhsBatch == std::vector<int64_t>{0} && d.rhsBatch == std::vector<int64_t>{0} &&
         d.lhsContracting == std::vector<int64_t>{2} &&
         (d.rhsContracting == std::vector<int64_t>{1} ||
          d.rhsContracting == std::vector<int64_t>{2});
}

// Are `contracting` the last dims of a rank-`rank` array, in increasing order?
bool contractingMostMinor(int64_t rank, const std::vector<int64_t>& contracting) {
  for (size_t i = 0; i < contracting.size(); ++i)
    if (contracting[i] != rank - static_cast<int64_t>(contracting.size() - i)) return false;
  return true;
}

bool canonicalize(hlo::HloComputation* comp, HloInstruction* dot) {
  if (dot->operandCount() != 2 || isCanonical(*dot)) return false;
  HloInstruction* lhs = dot->operand(0);
  HloInstruction* rhs = dot->operand(1);
  const Shape& ls = lhs->shape();
  const Shape& rs = rhs->shape();
  if (!ls.isArray() || !rs.isArray() || !dot->shape().isArray()) return false;
  if (ls.elementCount() == INT64_MAX || rs.elementCount() == INT64_MAX) return false;
  const auto& d = dot->attrs().dot;
  auto lfree = freeDims(ls, d.lhsBatch, d.lhsContracting);
  auto rfree = freeDims(rs, d.rhsBatch, d.rhsContracting);
  int64_t b = product(ls, d.lhsBatch), m = product(ls, lfree), k = product(ls, d.lhsContracting),
          n = product(rs, rfree);

  std::vector<int64_t> lperm = d.lhsBatch;
  lperm.insert(lperm.end(), lfree.begin(), lfree.end());
  lperm.insert(lperm.end(), d.lhsContracting.begin(), d.lhsContracting.end());
  const bool rhsTransposed = contractingMostMinor(rs.rank(), d.rhsContracting);
  std::vector<int64_t> rperm = d.rhsBatch;
  if (rhsTransposed) {
    rperm.insert(rperm.end(), rfree.begin(), rfree.end());
    rperm.insert(rperm.end(), d.rhsContracting.begin(), d.rhsContracting.end());
  } else {
    rperm.insert(rperm.end(), d.rhsContracting.begin(), d.rhsContracting.end());
    rperm.insert(rperm.end(), rfree.begin(), rfree.end());
  }

  HloInstruction* l = arrange(comp, lhs, lperm, {b, m, k});
  HloInstruction* r =
      arrange(comp, rhs, rperm,
              rhsTransposed ? std::vector<int64_t>{b, n, k} : std::vector<int64_t>{b, k, n});
  HloInstruction* nd = addNew(comp, HloOpcode::Dot, dot->name() + ".canonical",
                              Shape::array(dot->shape().type, {b, m, n}), {l, r});
  nd->attrs().dot.lhsBatch = {0};
  nd->attrs().dot.lhsContracting = {2};
  nd->attrs().dot.rhsBatch = {0};
  nd->attrs().dot.rhsContracting = {rhsTransposed ? 2 : 1};
  nd->attrs().metadata = dot->attrs().metadata;
  nd->attrs().generic = dot->attrs().generic;  // precision_config etc.
  HloInstruction* result = nd;
  if (dot->shape().dims != nd->shape().dims) {
    Shape out = Shape::array(dot->shape().type, dot->shape().dims);
    out.layout = dot->shape().layout;
    result = addNew(comp, HloOpcode::Reshape, dot->name() + ".reshape", out, {nd});
  }
  dot->replaceAllUsesWith(result);
  comp->removeInstruction(dot);
  return true;
}

class DotCanonicalizerPass : public HloPass {
 public:
  std::string_view name() const override { return "dot-canonicalize"; }
  bool run(hlo::HloModule& module) override {
    return rewriteEach(module, HloOpcode::Dot, canonicalize);
  }
};

}  // namespace

std::unique_ptr<HloPass> createDotCanonicalizerPass() {
  return std::make_unique<DotCanonicalizerPass>();
}

}  // namespace tpusim::passes
