// dot-scale-to-output: a dequantization scale that does not vary along the
// contracted dimensions is applied to the dot's result instead of to every
// element of the quantized operand:
//
//   dot(x, convert(w) * broadcast(s))  ->  convert(dot(x, convert(w)) * broadcast'(s))
//
// where w is an integer array (int8 weights), s a float scale whose broadcast
// maps its dims only to batch or free (non-contracting) dims of that operand
// (per-output-channel, per-batch or per-tensor), and broadcast' maps them to
// the same dims of the result. It fires only when it removes work (the
// multiply has more elements than the result) and the multiply has no other
// user (else both forms would be computed).
//
// Exactness. The rule is exact in real arithmetic but not in floating point:
// the HLO rounds every scaled weight c(w)*s[n] to the multiply's type (bf16:
// 2^-9 relative) and the MXU sums x[k]*(w s) in f32 in k order; the rewrite
// sums x[k]*w in f32, multiplies once by s and rounds once. The two are equal
// bit for bit when s[n] is a power of two (or zero) and every converted
// integer is exact in the multiply's type (at most its significand's bits:
// s8/u8 in bf16, f16 or f32): then each scaled weight is exact, and scaling
// by 2^e commutes with every f32 rounding of the sum and with the final one,
// as long as no product or partial sum overflows or becomes subnormal (the
// caveat of any power-of-two rescaling). Any other scale can change the
// result's last bits (docs/compiler.md, "int8 weights"). So by default it fires only
// for constant power-of-two scales; PassOptions::reassociateDequantScales
// (tpuc/tpusim --reassociate-dequant-scales) makes it fire for any scale,
// floats treated as reals like XLA's opt-in algebraic options. Without it the
// int8 dot kernels apply a run-time scale to each widened weight vreg in
// registers (kernel IR matmul "scaled rhs"), which is the HLO's rounding.
#include <algorithm>
#include <cmath>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

#include "compiler/passes/DotResultDim.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

// Significand bits of a float type (the integers it holds exactly).
int significandBits(PrimitiveType t) {
  return t == PrimitiveType::F32 ? 24 : t == PrimitiveType::F16 ? 11 : 8;
}

// Value bits of an integer type's magnitude (s8: |w| <= 128 = 2^7 needs 8).
int integerBits(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::S8:
    case PrimitiveType::U8:
      return 8;
    case PrimitiveType::S16:
    case PrimitiveType::U16:
      return 16;
    default:
      return 64;
  }
}

// Every element of a constant scale (through converts between float types)
// zero or a power of two, so that moving it across the sum changes no bit.
bool powerOfTwoConstant(const HloInstruction* s) {
  while (s->opcode() == HloOpcode::Convert && hlo::isFloatingType(s->operand(0)->shape().type))
    s = s->operand(0);
  const hlo::Literal* lit = s->opcode() == HloOpcode::Constant ? s->literal() : nullptr;
  if (!lit || lit->elided || lit->size() == 0) return false;
  for (int64_t i = 0; i < lit->size(); ++i) {
    double v = std::fabs(lit->getDouble(i));
    int e = 0;
    if (v != 0 && (!std::isfinite(v) || std::frexp(v, &e) != 0.5)) return false;
  }
  return true;
}

bool isMxuFloat(PrimitiveType t) {
  return t == PrimitiveType::F32 || t == PrimitiveType::BF16 || t == PrimitiveType::F16;
}

// Rewrites `dot` if operand `side` is convert(integer) * broadcast(scale) with
// the scale on non-contracted dims; true if it did.
bool sinkScale(hlo::HloComputation* comp, HloInstruction* dot, int side, bool reassociate) {
  HloInstruction* mul = dot->operand(side);
  if (mul->opcode() != HloOpcode::Multiply || mul->userCount() != 1 ||
      !isMxuFloat(mul->shape().type) || !isMxuFloat(dot->shape().type))
    return false;
  if (mul->shape().elementCount() <= dot->shape().elementCount()) return false;
  for (int q = 0; q < 2; ++q) {
    HloInstruction* conv = mul->operand(1 - q);
    HloInstruction* bcast = mul->operand(q);
    if (conv->opcode() != HloOpcode::Convert ||
        !hlo::isIntegralType(conv->operand(0)->shape().type) ||
        bcast->opcode() != HloOpcode::Broadcast)
      continue;
    // Exact (above): a constant power-of-two scale on integers the multiply's
    // type holds exactly; anything else only when floats may be reals.
    bool exact = powerOfTwoConstant(bcast->operand(0)) &&
                 integerBits(conv->operand(0)->shape().type) <= significandBits(mul->shape().type);
    if (!exact && !reassociate) continue;
    // The scale's dims in the result, which must stay in increasing order.
    std::vector<int64_t> outDims;
    bool ok = true;
    for (int64_t d : bcast->dimensions()) {
      int64_t r = dotResultDim(*dot, side, d);
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
    const bool reassociate = passOptions().reassociateDequantScales;
    return rewriteEach(
        module, HloOpcode::Dot, [reassociate](hlo::HloComputation* comp, HloInstruction* dot) {
          return sinkScale(comp, dot, 0, reassociate) || sinkScale(comp, dot, 1, reassociate);
        });
  }
};

}  // namespace

std::unique_ptr<HloPass> createDotScaleToOutputPass() {
  return std::make_unique<DotScaleToOutputPass>();
}

}  // namespace tpusim::passes
