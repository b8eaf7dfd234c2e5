// Dot canonicalization: every dot becomes
//   reshape(dot(L, R)) with L = [B, M, K], R = [B, K, N],
//   lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1},
// where L is the lhs transposed to (batch, free, contracting) and reshaped,
// and R is the rhs transposed to (batch, contracting, free) and reshaped --
// or, when the rhs's contracting dims are already its most minor ones, R =
// [B, N, K] (rhs_contracting_dims={2}): the MXU loads such weights transposed,
// so only major dims move (a [seq, heads, dim] K cache becomes [heads, seq,
// dim] with whole rows of `dim` per DMA run, not an element-wise transpose).
// An LHS that contracts over its major dims (a weight gradient's x^T) is
// L = [B, K, M] instead (lhs_contracting_dims={1}), which the kernel
// transposes in VMEM.
// B, M, K or N is 1 where the original has no such dimensions. Identity
// transposes and reshapes are not emitted; dots already in this form are kept.
//
// First, a slice that is a dot's only user and cuts only the dot's LHS free
// dims becomes a slice of the LHS: slice(dot(x, w)) -> dot(slice(x), w), which
// is exact (each output element is the same sum). The training step's loss
// drops the last position's logits (f32[256,255,4096] of [256,256,4096]): a
// 1 GiB copy becomes a 128 MiB bf16 copy of the dot's input.
#include <algorithm>
#include <climits>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/passes/PassOptions.h"
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
         (d.lhsContracting == std::vector<int64_t>{2} ||
          d.lhsContracting == std::vector<int64_t>{1}) &&
         (d.rhsContracting == std::vector<int64_t>{1} ||
          d.rhsContracting == std::vector<int64_t>{2});
}

// Are `contracting` the last dims of a rank-`rank` array, in increasing order?
bool contractingMostMinor(int64_t rank, const std::vector<int64_t>& contracting) {
  for (size_t i = 0; i < contracting.size(); ++i)
    if (contracting[i] != rank - static_cast<int64_t>(contracting.size() - i)) return false;
  return true;
}

// Elements a transpose of `s` by `perm` moves through the transpose unit: all of
// them when the most minor non-unit dim changes place (an element-wise transpose),
// none when only major dims move (a strided DMA, or read in place).
int64_t minorTransposeElements(const Shape& s, const std::vector<int64_t>& perm) {
  int64_t minor = -1, placed = -1;
  for (int64_t d = 0; d < s.rank(); ++d)
    if (s.dims[static_cast<size_t>(d)] != 1) minor = d;
  for (int64_t d : perm)
    if (s.dims[static_cast<size_t>(d)] != 1) placed = d;
  return minor == placed ? 0 : s.elementCount();
}

// The arrangement of a dot operand as the RHS: [batch, free, contracting] (the MXU's
// transposed weight load) when the contracting dims are the most minor, else
// [batch, contracting, free].
std::vector<int64_t> rhsPerm(const Shape& s, const std::vector<int64_t>& batch,
                             const std::vector<int64_t>& contracting,
                             const std::vector<int64_t>& free, bool* transposed) {
  *transposed = contractingMostMinor(s.rank(), contracting);
  std::vector<int64_t> perm = batch;
  const auto& first = *transposed ? free : contracting;
  const auto& second = *transposed ? contracting : free;
  perm.insert(perm.end(), first.begin(), first.end());
  perm.insert(perm.end(), second.begin(), second.end());
  return perm;
}

// Does another dot transpose `x` the way `dot` would (the same batch and
// contracting dims of x), or an earlier canonicalization's transpose by
// `perm` already do? One transpose through HBM then serves them all (cse
// merges them), where each kernel would transpose its own copy.
bool transposeShared(const HloInstruction* dot, const HloInstruction* x,
                     const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting,
                     const std::vector<int64_t>& perm) {
  for (const HloInstruction* u : x->users()) {
    if (u == dot) continue;
    if (u->opcode() == HloOpcode::Transpose && u->dimensions() == perm) return true;
    if (u->opcode() != HloOpcode::Dot || u->operandCount() != 2) continue;
    const auto& d = u->attrs().dot;
    if ((u->operand(0) == x && d.lhsBatch == batch && d.lhsContracting == contracting) ||
        (u->operand(1) == x && d.rhsBatch == batch && d.rhsContracting == contracting))
      return true;
  }
  return false;
}

// The MXU of the chip the passes compile for: size, and whether it has packed
// int8 (0 when the chip does not load).
struct MxuOfTarget {
  int64_t size = 0;
  bool packedInt8 = false;
  int64_t count = 0;
  double hbmBytesPerCycle = 0;
};
MxuOfTarget mxuOfTarget() {
  try {
    const PassOptions& o = passOptions();
    lower::TargetDescription t =
        o.chipConfig ? lower::describeTarget(*o.chipConfig) : lower::loadTarget(o.chip);
    return {t.mxuSize, t.int8Rate == 2, t.mxuCount,
            t.clockHz > 0 ? t.hbmBytesPerSecond / t.clockHz : 0.0};
  } catch (const lower::TargetError&) {
    return {};
  }
}

// A transpose fragment of 16-bit elements whose matrix is whole MXU tiles goes
// through the MXU's packed int8 mode (compiler/lower/dma/DmaMxuTranspose.h), 8x
// the transpose unit's rate: the dot then reads that copy rather than
// transposing its LHS in the kernel on the transpose unit.
bool fragmentTransposesOnMxu(const MxuOfTarget& mxu, const Shape& s, int64_t rows, int64_t cols) {
  return mxu.packedInt8 && mxu.size % 128 == 0 && hlo::bitWidth(s.type) == 16 &&
         rows % (2 * mxu.size) == 0 && cols % mxu.size == 0;
}

// Weights [N, K] the MXU would load transposed, transposed once through HBM
// instead (a fragment on the MXU, exact: the dot then reads [K, N] and makes the
// same sums). A transposed weight push waits N cycles after its MXU's last latch
// (isa/README.md, "MXU"), so each N x N tile loaded transposed holds the
// weight port 2N cycles, not N: with a tile serving 2N LHS rows (N / 4 result
// slots of 8 rows) that port, not the LHS stream, bounds the MXU. Each pass
// over the M rows loads every tile once more and pays N cycles a tile over the
// MXUs; the fragment moves the weights twice through HBM, counted twice over
// (its write-back runs below the HBM peak).
bool transposeWeightsOnce(const MxuOfTarget& mxu, const Shape& s, int64_t m, int64_t n, int64_t k) {
  if (!passOptions().transposeWeightsOnce || !fragmentTransposesOnMxu(mxu, s, n, k) ||
      mxu.count < 1 || mxu.hbmBytesPerCycle <= 0)
    return false;
  const double elements = double(n) * double(k);
  const double passes = double(m) / double(2 * mxu.size);
  const double saved = passes * elements / double(mxu.size * mxu.count);
  const double cost =
      2.0 * 2.0 * elements * double(hlo::bitWidth(s.type) / 8) / mxu.hbmBytesPerCycle;
  return saved > cost;
}

bool canonicalize(hlo::HloComputation* comp, HloInstruction* dot, const MxuOfTarget& mxu) {
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
  bool rhsTransposed = false;
  std::vector<int64_t> rperm = rhsPerm(rs, d.rhsBatch, d.rhsContracting, rfree, &rhsTransposed);

  // The same product with the operands swapped, out^T = R^T L^T: R as the LHS
  // [B, N, K], L as the RHS, and the [B, N, M] result transposed back. When
  // both operands contract over their major dims (a weight gradient x^T dy
  // over batch and sequence), one of them goes through the transpose unit
  // either way: the swap moves the smaller one, plus the (small) result.
  std::vector<int64_t> sperm = d.rhsBatch;
  sperm.insert(sperm.end(), rfree.begin(), rfree.end());
  sperm.insert(sperm.end(), d.rhsContracting.begin(), d.rhsContracting.end());
  bool swappedRhsTransposed = false;
  std::vector<int64_t> tperm =
      rhsPerm(ls, d.lhsBatch, d.lhsContracting, lfree, &swappedRhsTransposed);
  const int64_t direct = minorTransposeElements(ls, lperm) + minorTransposeElements(rs, rperm);
  const int64_t swapped =
      minorTransposeElements(rs, sperm) + minorTransposeElements(ls, tperm) +
      minorTransposeElements(Shape::array(dot->shape().type, {b, n, m}), {0, 2, 1});
  const bool swap = swapped < direct;

  // An LHS whose contracting dims are its major ones (after the batch) is
  // given to the kernel as [B, K, M] (lhs_contracting_dims={1}): the dot's
  // kernel transposes it block by block on the transpose unit, beside the
  // MXU work, instead of a transpose through HBM before the dot; unless
  // other dots need the same transpose (x^T of the q, k and v weight
  // gradients), which one transpose fragment then serves.
  const HloInstruction* lsrc = swap ? rhs : lhs;
  const std::vector<int64_t>& lb = swap ? d.rhsBatch : d.lhsBatch;
  const std::vector<int64_t>& lk = swap ? d.rhsContracting : d.lhsContracting;
  const std::vector<int64_t> lf = swap ? rfree : lfree;
  std::vector<int64_t> kperm = lb;
  kperm.insert(kperm.end(), lk.begin(), lk.end());
  kperm.insert(kperm.end(), lf.begin(), lf.end());
  const bool lhsTransposed = minorTransposeElements(lsrc->shape(), swap ? sperm : lperm) > 0 &&
                             minorTransposeElements(lsrc->shape(), kperm) == 0 &&
                             !transposeShared(dot, lsrc, lb, lk, swap ? sperm : lperm) &&
                             !fragmentTransposesOnMxu(mxu, lsrc->shape(), k, swap ? n : m);
  const int64_t lm = swap ? n : m;
  HloInstruction* l;
  HloInstruction* r;
  if (lhsTransposed) {
    l = arrange(comp, const_cast<HloInstruction*>(lsrc), kperm, {b, k, lm});
    r = swap ? arrange(comp, lhs, tperm,
                       swappedRhsTransposed ? std::vector<int64_t>{b, m, k}
                                            : std::vector<int64_t>{b, k, m})
             : arrange(
                   comp, rhs, rperm,
                   rhsTransposed ? std::vector<int64_t>{b, n, k} : std::vector<int64_t>{b, k, n});
  } else if (swap) {
    l = arrange(comp, rhs, sperm, {b, n, k});
    r = arrange(
        comp, lhs, tperm,
        swappedRhsTransposed ? std::vector<int64_t>{b, m, k} : std::vector<int64_t>{b, k, m});
  } else {
    l = arrange(comp, lhs, lperm, {b, m, k});
    const bool once = rhsTransposed && b == 1 && transposeWeightsOnce(mxu, rs, m, n, k);
    if (once) {
      rperm = d.rhsBatch;
      rperm.insert(rperm.end(), d.rhsContracting.begin(), d.rhsContracting.end());
      rperm.insert(rperm.end(), rfree.begin(), rfree.end());
      rhsTransposed = false;
    }
    r = arrange(comp, rhs, rperm,
                rhsTransposed ? std::vector<int64_t>{b, n, k} : std::vector<int64_t>{b, k, n});
    // Made as soon as the weights are (the training step's converted weights:
    // at its start), not between the kernels before the dot, whose
    // cross-kernel prefetch and schedules the fragment would change (the
    // attention backward before its q / k / v input gradients' dots: +0.9 M
    // cycles in the 1-layer step).
    if (once)
      for (HloInstruction* x = r; x != rhs; x = x->operand(0)) comp->placeAfter(x, rhs);
  }
  const bool transposedLoad = swap ? swappedRhsTransposed : rhsTransposed;
  HloInstruction* nd = addNew(comp, HloOpcode::Dot, dot->name() + ".canonical",
                              Shape::array(dot->shape().type, swap ? std::vector<int64_t>{b, n, m}
                                                                   : std::vector<int64_t>{b, m, n}),
                              {l, r});
  nd->attrs().dot.lhsBatch = {0};
  nd->attrs().dot.lhsContracting = {lhsTransposed ? 1 : 2};
  nd->attrs().dot.rhsBatch = {0};
  nd->attrs().dot.rhsContracting = {transposedLoad ? 2 : 1};
  nd->attrs().metadata = dot->attrs().metadata;
  nd->attrs().generic = dot->attrs().generic;  // precision_config etc.
  HloInstruction* result = nd;
  if (swap) {
    result = addNew(comp, HloOpcode::Transpose, dot->name() + ".swapped",
                    Shape::array(dot->shape().type, {b, m, n}), {nd});
    result->attrs().dimensions = {0, 2, 1};
    result->attrs().metadata = dot->attrs().metadata;
  }
  if (dot->shape().dims != result->shape().dims) {
    Shape out = Shape::array(dot->shape().type, dot->shape().dims);
    out.layout = dot->shape().layout;
    result = addNew(comp, HloOpcode::Reshape, dot->name() + ".reshape", out, {result});
  }
  dot->replaceAllUsesWith(result);
  comp->removeInstruction(dot);
  return true;
}

// slice(dot(x, w)) -> dot(slice(x), w) where the slice keeps the batch and
// RHS free dims whole (the dot's output is [batch..., LHS free..., RHS free...]).
bool sliceBeforeDot(hlo::HloComputation* comp, HloInstruction* slice) {
  HloInstruction* dot = slice->operandCount() == 1 ? slice->operand(0) : nullptr;
  if (!dot || dot->opcode() != HloOpcode::Dot || dot->userCount() != 1 ||
      dot->operandCount() != 2 || !slice->attrs().slice || !dot->shape().isArray() ||
      (comp->root() == dot))
    return false;
  HloInstruction* lhs = dot->operand(0);
  const Shape& ls = lhs->shape();
  const auto& d = dot->attrs().dot;
  auto lfree = freeDims(ls, d.lhsBatch, d.lhsContracting);
  const auto& cut = *slice->attrs().slice;
  const size_t nb = d.lhsBatch.size();
  if (cut.size() != dot->shape().dims.size()) return false;
  std::vector<hlo::SliceDim> lcut;
  for (int64_t i = 0; i < ls.rank(); ++i) lcut.push_back({0, ls.dims[i], 1});
  bool cutsSomething = false;
  for (size_t i = 0; i < cut.size(); ++i) {
    const hlo::SliceDim& c = cut[i];
    bool whole = c.start == 0 && c.limit == dot->shape().dims[i] && c.stride == 1;
    if (i >= nb && i < nb + lfree.size()) {
      lcut[lfree[i - nb]] = c;
      cutsSomething |= !whole;
    } else if (!whole) {
      return false;
    }
  }
  if (!cutsSomething) return false;
  std::vector<int64_t> sliced = ls.dims;
  for (size_t i = 0; i < lfree.size(); ++i) sliced[lfree[i]] = slice->shape().dims[nb + i];
  HloInstruction* ns =
      addNew(comp, HloOpcode::Slice, lhs->name() + ".slice", Shape::array(ls.type, sliced), {lhs});
  ns->attrs().slice = lcut;
  ns->attrs().metadata = slice->attrs().metadata;
  auto nd = dot->cloneWithOperands(dot->name() + ".sliced", {ns, dot->operand(1)});
  nd->setShape(slice->shape());
  HloInstruction* added = comp->addInstruction(std::move(nd));
  slice->replaceAllUsesWith(added);
  if (comp->root() == slice) comp->setRoot(added);
  return true;
}

class DotCanonicalizerPass : public HloPass {
 public:
  std::string_view name() const override { return "dot-canonicalize"; }
  bool run(hlo::HloModule& module) override {
    bool sliced = rewriteEach(module, HloOpcode::Slice, sliceBeforeDot);
    if (sliced)
      for (const auto& comp : module.computations()) comp->removeDeadInstructions();
    const MxuOfTarget mxu = mxuOfTarget();
    return rewriteEach(module, HloOpcode::Dot,
                       [&](hlo::HloComputation* comp, HloInstruction* dot) {
                         return canonicalize(comp, dot, mxu);
                       }) ||
           sliced;
  }
};

}  // namespace

std::unique_ptr<HloPass> createDotCanonicalizerPass() {
  return std::make_unique<DotCanonicalizerPass>();
}

}  // namespace tpusim::passes
