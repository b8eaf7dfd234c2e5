// update-to-select: a dynamic-update-slice of a small intermediate array by
// a slab one element thick along some dims (whole along the others) becomes
// an element-wise select, which fuses into the array's producer or readers:
//
//   dynamic-update-slice(a, u, i...)
//     ->  select(and_d(iota_d == clamp(0, i_d, n_d - 1)), broadcast(u'), a)
//
// over the dims d where u is 1 and a is longer (u' is u without them). An
// unfused update is a kernel of its own that copies the array (it is not
// updated in place: `a` is a temporary) for one row; `dot-through-update`
// makes one of each decode step's score dot.
//
// It fires only where that pays: `a` a temporary read by nothing else, at
// most kMaxBytes (a select over the whole array is cheap beside its
// readers' work), and the update not an output (an output keeps its
// in-place write). The same elements: the select takes u at the clamped
// start (dynamic-update-slice's clamp for a slab of 1) and a elsewhere.
#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

constexpr int64_t kMaxBytes = int64_t(4) << 20;

int64_t bytes(const Shape& s) {
  int64_t n = (hlo::bitWidth(s.type) + 7) / 8;
  for (int64_t d : s.dims) n *= d;
  return n;
}

bool rewrite(hlo::HloComputation* comp, HloInstruction* dus) {
  HloInstruction* a = dus->operand(0);
  HloInstruction* u = dus->operand(1);
  if (!dus->shape().isArray() || bytes(dus->shape()) > kMaxBytes) return false;
  if (a->opcode() == HloOpcode::Parameter || a->opcode() == HloOpcode::Constant ||
      a->userCount() != 1 || dus == comp->root())
    return false;
  for (const HloInstruction* user : dus->users())
    if (user->opcode() == HloOpcode::Tuple || user->opcode() == HloOpcode::DynamicUpdateSlice)
      return false;
  const std::vector<int64_t>& n = a->shape().dims;
  std::vector<int64_t> keptDims, keptSizes, thin;
  for (size_t d = 0; d < n.size(); ++d) {
    const int64_t ud = u->shape().dims[d];
    if (ud == n[d]) {
      keptDims.push_back(static_cast<int64_t>(d));
      keptSizes.push_back(ud);
    } else if (ud == 1) {
      thin.push_back(static_cast<int64_t>(d));
    } else {
      return false;  // a partial slab more than one element thick
    }
  }
  if (thin.empty()) return false;
  const std::string& base = dus->name();
  const PrimitiveType it = dus->operand(2)->shape().type;
  auto scalar = [&](int64_t v) {
    HloInstruction* c = addNew(comp, HloOpcode::Constant, base + ".bound", Shape::scalar(it), {});
    c->attrs().literal = hlo::Literal::scalar(it, double(v));
    return c;
  };
  HloInstruction* mask = nullptr;
  const Shape predShape = Shape::array(PrimitiveType::Pred, n);
  for (int64_t d : thin) {
    HloInstruction* start = dus->operand(2 + d);
    HloInstruction* at = addNew(comp, HloOpcode::Clamp, base + ".start", Shape::scalar(it),
                                {scalar(0), start, scalar(n[static_cast<size_t>(d)] - 1)});
    HloInstruction* iota = addNew(comp, HloOpcode::Iota, base + ".iota", Shape::array(it, n), {});
    hlo::AttrValue dim;
    dim.kind = hlo::AttrValue::Kind::Int;
    dim.i = d;
    iota->setGeneric("iota_dimension", dim);
    HloInstruction* wide =
        addNew(comp, HloOpcode::Broadcast, base + ".start", Shape::array(it, n), {at});
    wide->attrs().dimensions = std::vector<int64_t>{};
    HloInstruction* eq = addNew(comp, HloOpcode::Compare, base + ".at", predShape, {iota, wide});
    eq->attrs().direction = hlo::ComparisonDirection::EQ;
    mask = mask ? addNew(comp, HloOpcode::And, base + ".at", predShape, {mask, eq}) : eq;
  }
  HloInstruction* slab = u;
  if (keptSizes.size() != n.size())
    slab = addNew(comp, HloOpcode::Reshape, base + ".slab",
                  Shape::array(u->shape().type, keptSizes), {u});
  HloInstruction* spread =
      addNew(comp, HloOpcode::Broadcast, base + ".slab", Shape::array(u->shape().type, n), {slab});
  spread->attrs().dimensions = keptDims;
  HloInstruction* sel = addNew(comp, HloOpcode::Select, base, dus->shape(), {mask, spread, a});
  sel->attrs().metadata = dus->attrs().metadata;
  dus->replaceAllUsesWith(sel);
  comp->removeInstruction(dus);
  return true;
}

class UpdateToSelectPass : public HloPass {
 public:
  std::string_view name() const override { return "update-to-select"; }
  bool run(hlo::HloModule& module) override {
    return rewriteEach(module, HloOpcode::DynamicUpdateSlice, rewrite);
  }
};

}  // namespace

std::unique_ptr<HloPass> createUpdateToSelectPass() {
  return std::make_unique<UpdateToSelectPass>();
}

}  // namespace tpusim::passes
