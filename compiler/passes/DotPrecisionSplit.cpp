// dot-precision-split: an f32 dot at HIGH or HIGHEST precision becomes the
// multi-pass bf16 algorithm XLA uses on TPU (compiler/hlo/DotPrecision.h), so
// the MXU (bf16 multiplies, f32 accumulation) computes it to the precision
// asked for:
//   x = x0 + x1 + x2 (+ rest), x0 = bf16(x), x1 = bf16(x - x0), x2 = bf16(x - x0 - x1)
//   HIGH    (bf16_3x): a1*b0 + a0*b1 + a0*b0
//   HIGHEST (bf16_6x): a2*b0 + a1*b1 + a0*b2 + a1*b0 + a0*b1 + a0*b0
// each a bf16 x bf16 -> f32 dot with the original's dimensions, summed from the
// smallest terms up. DEFAULT dots (one pass: operands rounded to bf16) are the
// lowering's own and are left alone. The new dots carry no precision attribute.
#include <algorithm>

#include "compiler/hlo/DotPrecision.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

Shape withType(const Shape& s, PrimitiveType t) {
  Shape out = Shape::array(t, s.dims);
  out.layout = s.layout;
  return out;
}

// x's first `count` bf16 parts.
std::vector<HloInstruction*> bf16Parts(hlo::HloComputation* comp, HloInstruction* x, int count) {
  std::vector<HloInstruction*> parts;
  HloInstruction* rest = x;
  for (int i = 0; i < count; ++i) {
    HloInstruction* part = addNew(comp, HloOpcode::Convert, x->name() + ".bf16part",
                                  withType(x->shape(), PrimitiveType::BF16), {rest});
    parts.push_back(part);
    if (i + 1 == count) break;
    HloInstruction* back = addNew(comp, HloOpcode::Convert, part->name() + ".f32",
                                  withType(x->shape(), PrimitiveType::F32), {part});
    rest = addNew(comp, HloOpcode::Subtract, x->name() + ".rest", rest->shape(), {rest, back});
  }
  return parts;
}

bool split(hlo::HloComputation* comp, HloInstruction* dot) {
  const hlo::DotPasses passes = hlo::mxuDotPasses(*dot);
  if (passes == hlo::DotPasses::One) return false;
  const int count = passes == hlo::DotPasses::Three ? 2 : 3;
  std::vector<HloInstruction*> a = bf16Parts(comp, dot->operand(0), count);
  std::vector<HloInstruction*> b = bf16Parts(comp, dot->operand(1), count);
  // Terms of combined order <= count - 1, highest order (smallest) first.
  std::vector<std::pair<int, int>> terms;
  for (int order = count - 1; order >= 0; --order)
    for (int i = order; i >= 0; --i) terms.push_back({i, order - i});
  const Shape f32 = withType(dot->shape(), PrimitiveType::F32);
  HloInstruction* sum = nullptr;
  for (auto [i, j] : terms) {
    HloInstruction* d = addNew(comp, HloOpcode::Dot, dot->name() + ".pass", f32,
                               {a[static_cast<size_t>(i)], b[static_cast<size_t>(j)]});
    d->attrs().dot = dot->attrs().dot;
    d->attrs().metadata = dot->attrs().metadata;
    sum = sum ? addNew(comp, HloOpcode::Add, dot->name() + ".sum", f32, {sum, d}) : d;
  }
  if (sum->shape() != dot->shape())
    sum = addNew(comp, HloOpcode::Convert, dot->name() + ".result", dot->shape(), {sum});
  dot->replaceAllUsesWith(sum);
  comp->removeInstruction(dot);
  return true;
}

class DotPrecisionSplitPass : public HloPass {
 public:
  std::string_view name() const override { return "dot-precision-split"; }
  bool run(hlo::HloModule& module) override { return rewriteEach(module, HloOpcode::Dot, split); }
};

}  // namespace

std::unique_ptr<HloPass> createDotPrecisionSplitPass() {
  return std::make_unique<DotPrecisionSplitPass>();
}

}  // namespace tpusim::passes
