#include "compiler/passes/AttentionPattern.h"

#include <algorithm>
#include <optional>

#include "compiler/hlo/DotPrecision.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes::attention {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

namespace {

// The dimension an s32 index array counts along: iota(dim) of a rank-2 shape,
// or a broadcast of a 1-D iota; -1 otherwise.
int64_t indexDim(const HloInstruction* i) {
  if (!hlo::isIntegralType(i->shape().type) || i->shape().rank() != 2) return -1;
  if (is(i, HloOpcode::Iota)) return i->intAttr("iota_dimension").value_or(-1);
  if (is(i, HloOpcode::Broadcast) && is(i->operand(0), HloOpcode::Iota) &&
      i->operand(0)->shape().rank() == 1 && i->dimensions().size() == 1)
    return i->dimensions()[0];
  return -1;
}

}  // namespace

std::vector<int64_t> iotaVec(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

// The users of `i` are exactly `users` (as a set).
bool usedOnlyBy(const HloInstruction* i, std::vector<const HloInstruction*> users) {
  if (i->userCount() != static_cast<int64_t>(users.size())) return false;
  for (const HloInstruction* u : i->users())
    if (std::find(users.begin(), users.end(), u) == users.end()) return false;
  return true;
}

// reduce(x, init) over the last dim with a region `op` of its two parameters.
bool isRowReduce(const HloInstruction* r, HloOpcode op, double init) {
  if (!is(r, HloOpcode::Reduce) || r->operandCount() != 2) return false;
  const HloInstruction* x = r->operand(0);
  if (r->dimensions() != std::vector<int64_t>{x->shape().rank() - 1}) return false;
  auto v = splatValue(r->operand(1));
  if (!v || !(*v == init)) return false;
  const hlo::HloComputation* f = r->toApply();
  const HloInstruction* root = f ? f->root() : nullptr;
  return root && root->opcode() == op && root->operandCount() == 2 &&
         is(root->operand(0), HloOpcode::Parameter) && is(root->operand(1), HloOpcode::Parameter) &&
         root->operand(0) != root->operand(1);
}

// broadcast(row value) back over the last dim of `full`.
const HloInstruction* rowBroadcastOf(const HloInstruction* b, const Shape& full) {
  if (!is(b, HloOpcode::Broadcast) || !b->shape().sameDims(full)) return nullptr;
  if (b->dimensions() != iotaVec(0, full.rank() - 1)) return nullptr;
  return b->operand(0);
}

// pred[Sq, Sk] that is true where row >= col.
bool isCausalPredicate(const HloInstruction* c) {
  if (!is(c, HloOpcode::Compare) || !c->attrs().direction) return false;
  int64_t a = indexDim(c->operand(0)), b = indexDim(c->operand(1));
  auto dir = *c->attrs().direction;
  using D = hlo::ComparisonDirection;
  return (a == 0 && b == 1 && dir == D::GE) || (a == 1 && b == 0 && dir == D::LE);
}

bool isDefaultPrecision(const HloInstruction& dot) {
  return hlo::mxuDotPasses(dot) == hlo::DotPasses::One;
}

bool isMxuFloat(PrimitiveType t) { return t == PrimitiveType::BF16 || t == PrimitiveType::F32; }

bool isBatchedDot(const HloInstruction* d, int64_t nb, int64_t lhsContract, int64_t rhsContract) {
  if (!is(d, HloOpcode::Dot)) return false;
  const auto& dn = d->attrs().dot;
  if (lhsContract < 0) lhsContract = d->operand(0)->shape().rank() - 1;
  return dn.lhsBatch == iotaVec(0, nb) && dn.rhsBatch == iotaVec(0, nb) &&
         dn.lhsContracting == std::vector<int64_t>{lhsContract} &&
         dn.rhsContracting == std::vector<int64_t>{rhsContract} && isDefaultPrecision(*d);
}

HloInstruction* asBf16(hlo::HloComputation* comp, HloInstruction* x, const std::string& base) {
  if (x->shape().type == PrimitiveType::BF16) return x;
  HloInstruction* c = addNew(comp, HloOpcode::Convert, base,
                             Shape::array(PrimitiveType::BF16, x->shape().dims), {x});
  c->attrs().metadata = x->attrs().metadata;
  return c;
}

HloInstruction* headsMajorSource(HloInstruction* t) {
  if (t->opcode() != HloOpcode::Transpose || t->shape().rank() != 4 ||
      t->dimensions() != std::vector<int64_t>{0, 2, 1, 3} ||
      t->operand(0)->shape().type != PrimitiveType::BF16)
    return nullptr;
  return t->operand(0);
}

std::optional<double> causalSelectFill(const HloInstruction* sel, int64_t r) {
  if (!is(sel, HloOpcode::Select)) return std::nullopt;
  const HloInstruction* pred = sel->operand(0);
  if (!is(pred, HloOpcode::Broadcast) || pred->dimensions() != std::vector<int64_t>{r - 2, r - 1} ||
      !isCausalPredicate(pred->operand(0)))
    return std::nullopt;
  return splatValue(sel->operand(2));
}

}  // namespace tpusim::passes::attention
