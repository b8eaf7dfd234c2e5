// dot-scale-to-output: a dequantization scale that does not vary along the
// contracted dimensions is applied to the dot's result instead of to every
// element of the quantized operand:
//
//   dot(x, convert(w) * broadcast(s))  ->  convert(dot(x, convert(w)) * broadcast'(s))
//
// where w is an integer array (int8 weights), s a float scale whose broadcast
// maps its dims only to batch or free (non-contracting) dims of that operand
// (per-output-channel, per-batch or per-tensor), and broadcast' maps them to
// the same dims of the result. The rule is exact in real arithmetic: each
// product x[k] * w[k, n] * s[n] shares s[n] across the sum over k. It fires
// only when it removes work (the multiply has more elements than the result,
// as in any matmul with more than one contracted element per output) and the
// multiply has no other user (else both forms would be computed).
//
// Rounding: the original rounds each scaled weight w*s to the multiply's type
// (bf16: a relative 2^-9 per term) before the MXU's f32 sum; the rewrite sums
// the exact converted integers in f32, multiplies the f32 sum by s once and
// rounds once to the dot's type. The new dot produces f32 so no intermediate
// rounding is added. The rewritten form is therefore at least as accurate;
// the two differ by at most the original's per-term rounding, 2^-9 x
// sum_k |x[k] w[k,n] s[n]| for bf16, well inside --check's bf16 tolerance
// (rtol 3e-2 of the output's rms).
#include <algorithm>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

bool isMxuFloat(PrimitiveType t) {
  return t == PrimitiveType::F32 || t == PrimitiveType::BF16 || t == PrimitiveType::F16;
}

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims) n *= d;
  return n;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Where operand dim `d` of dot side `side` lands in the dot's result (XLA's
// order: batch dims, the LHS's free dims, the RHS's free dims), or -1 for a
// contracted dim.
int64_t resultDim(const HloInstruction& dot, int side, int64_t d) {
  const hlo::DotDimensionNumbers& dn = dot.attrs().dot;
  const auto& batch = side == 0 ? dn.lhsBatch : dn.rhsBatch;
  const auto& contract = side == 0 ? dn.lhsContracting : dn.rhsContracting;
  if (contains(contract, d)) return -1;
  auto b = std::find(batch.begin(), batch.end(), d);
  if (b != batch.end()) return b - batch.begin();
  auto freeBefore = [&](int s, int64_t limit) {
    const auto& bs = s == 0 ? dn.lhsBatch : dn.rhsBatch;
    const auto& cs = s == 0 ? dn.lhsContracting : dn.rhsContracting;
    int64_t n = 0;
    for (int64_t i = 0; i < limit; ++i)
      if (!contains(bs, i) && !contains(cs, i)) ++n;
    return n;
  };
  int64_t pos = static_cast<int64_t>(dn.lhsBatch.size()) + freeBefore(side, d);
  if (side == 1) pos += freeBefore(0, dot.operand(0)->shape().rank());
  return pos;
}

// Rewrites `dot` if operand `side` is convert(integer) * broadcast(scale) with
// the scale on non-contracted dims; true if it did.
bool sinkScale(hlo::HloComputation* comp, HloInstruction* dot, int side) {
  HloInstruction* mul = dot->operand(side);
  if (mul->opcode() != HloOpcode::Multiply || mul->userCount() != 1 ||
      !isMxuFloat(mul->shape().type) || !isMxuFloat(dot->shape().type))
    return false;
  if (elements(mul->shape()) <= elements(dot->shape())) return false;
  for (int q = 0; q < 2; ++q) {
    HloInstruction* conv = mul->operand(1 - q);
    HloInstruction* bcast = mul->operand(q);
    if (conv->opcode() != HloOpcode::Convert ||
        !hlo::isIntegralType(conv->operand(0)->shape().type) ||
        bcast->opcode() != HloOpcode::Broadcast)
      continue;
    // The scale's dims in the result, which must stay in increasing order.
    std::vector<int64_t> outDims;
    bool ok = true;
    for (int64_t d : bcast->dimensions()) {
      int64_t r = resultDim(*dot, side, d);
      if (r < 0 || (!outDims.empty() && r <= outDims.back())) ok = false;
      outDims.push_back(r);
    }
    if (!ok) continue;
    const std::string& base = dot->name();
    std::vector<HloInstruction*> ops{dot->operand(0), dot->operand(1)};
    ops[static_cast<size_t>(side)] = conv;
    Shape f32 = Shape::array(PrimitiveType::F32, dot->shape().dims);
    f32.layout = dot->shape().layout;
    HloInstruction* sum = addNew(comp, HloOpcode::Dot, base + ".unscaled", f32, ops);
    sum->attrs() = dot->attrs();
    HloInstruction* scale = bcast->operand(0);
    if (scale->shape().type != PrimitiveType::F32) {
      Shape t = Shape::array(PrimitiveType::F32, scale->shape().dims);
      t.layout = scale->shape().layout;
      scale = addNew(comp, HloOpcode::Convert, base + ".scale", t, {scale});
    }
    HloInstruction* wide = addNew(comp, HloOpcode::Broadcast, base + ".scale", f32, {scale});
    wide->attrs().dimensions = outDims;
    wide->attrs().metadata = dot->attrs().metadata;
    HloInstruction* result = addNew(comp, HloOpcode::Multiply, base + ".scaled", f32, {sum, wide});
    result->attrs().metadata = dot->attrs().metadata;
    if (dot->shape().type != PrimitiveType::F32) {
      result = addNew(comp, HloOpcode::Convert, base + ".result", dot->shape(), {result});
      result->attrs().metadata = dot->attrs().metadata;
    }
    dot->replaceAllUsesWith(result);
    comp->removeInstruction(dot);
    return true;
  }
  return false;
}

class DotScaleToOutputPass : public HloPass {
 public:
  std::string_view name() const override { return "dot-scale-to-output"; }
  bool run(hlo::HloModule& module) override {
    // A sunk scale replaces the dot, so the other side is not tried.
    return rewriteEach(module, HloOpcode::Dot, [](hlo::HloComputation* comp, HloInstruction* dot) {
      return sinkScale(comp, dot, 0) || sinkScale(comp, dot, 1);
    });
  }
};

}  // namespace

std::unique_ptr<HloPass> createDotScaleToOutputPass() {
  return std::make_unique<DotScaleToOutputPass>();
}

}  // namespace tpusim::passes
