// The rotary embedding's half-split form, as JAX and PyTorch write it,
//   concat(lo * A - hi * B, hi * A + lo * B)   (lo, hi: the two halves of x's
//                                               last dimension)
// becomes the rotate-half form
//   x * concat(A, A) + concat(hi, lo) * concat(-B, B).
// A lane kernel then moves x once per tile (concat(hi, lo) is x rotated by
// half the lanes) instead of moving both products' halves and the tables, and
// when A and B are broadcasts (cos / sin rows shared by the heads and layers)
// the doubled tables are built once, before the broadcast, where CSE shares
// them. Bit for bit: lo * A + hi * -B rounds as lo * A - hi * B (negation is
// exact and round-to-nearest is symmetric), the other half is the same sum.
#include "compiler/passes/RotateHalf.h"

#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// Is `s` x[..., start:start + width] with every other dimension whole?
bool isLastDimSlice(const HloInstruction* s, const HloInstruction* x, int64_t start,
                    int64_t width) {
  if (s->opcode() != HloOpcode::Slice || s->operand(0) != x || !s->attrs().slice) return false;
  const auto& dims = *s->attrs().slice;
  const hlo::Shape& in = x->shape();
  if (static_cast<int64_t>(dims.size()) != in.rank()) return false;
  for (int64_t d = 0; d < in.rank(); ++d) {
    const hlo::SliceDim& sd = dims[static_cast<size_t>(d)];
    bool last = d + 1 == in.rank();
    int64_t from = last ? start : 0, to = last ? start + width : in.dims[static_cast<size_t>(d)];
    if (sd.stride != 1 || sd.start != from || sd.limit != to) return false;
  }
  return true;
}

// The same value: one instruction, or broadcasts of one operand alike.
bool sameValue(const HloInstruction* a, const HloInstruction* b) {
  if (a == b) return true;
  return a->opcode() == HloOpcode::Broadcast && b->opcode() == HloOpcode::Broadcast &&
         a->operand(0) == b->operand(0) && a->dimensions() == b->dimensions() &&
         a->shape().compatible(b->shape());
}

// The halves of one array and the factors of `m` = half * factor (either order).
struct Product {
  const HloInstruction* half = nullptr;
  HloInstruction* factor = nullptr;
};

std::vector<Product> productsOf(const HloInstruction* m) {
  if (m->opcode() != HloOpcode::Multiply) return {};
  return {{m->operand(0), m->operand(1)}, {m->operand(1), m->operand(0)}};
}

struct Match {
  HloInstruction* x = nullptr;  // the whole array
  HloInstruction *lo = nullptr, *hi = nullptr;
  HloInstruction *a = nullptr, *b = nullptr;  // the cos and sin factors
};

// sub = lo * a - hi * b and add = hi * a + lo * b (add's terms in either order).
std::optional<Match> match(const HloInstruction* sub, const HloInstruction* add, int64_t h) {
  if (sub->opcode() != HloOpcode::Subtract || add->opcode() != HloOpcode::Add) return {};
  for (const Product& p : productsOf(sub->operand(0))) {
    const HloInstruction* lo = p.half;
    if (lo->opcode() != HloOpcode::Slice) continue;
    HloInstruction* x = lo->operand(0);
    if (x->shape().rank() == 0 || x->shape().dims.back() != 2 * h || !isLastDimSlice(lo, x, 0, h))
      continue;
    for (const Product& q : productsOf(sub->operand(1))) {
      if (!isLastDimSlice(q.half, x, h, h)) continue;
      for (int k = 0; k < 2; ++k) {
        const HloInstruction* hiA = add->operand(k);
        const HloInstruction* loB = add->operand(1 - k);
        bool hiOk = false, loOk = false;
        for (const Product& r : productsOf(hiA))
          hiOk |= isLastDimSlice(r.half, x, h, h) && sameValue(r.factor, p.factor);
        for (const Product& r : productsOf(loB))
          loOk |= isLastDimSlice(r.half, x, 0, h) && sameValue(r.factor, q.factor);
        if (hiOk && loOk)
          return Match{x, const_cast<HloInstruction*>(lo), const_cast<HloInstruction*>(q.half),
                       p.factor, q.factor};
      }
    }
  }
  return {};
}

class Builder {
 public:
  Builder(hlo::HloComputation* comp, const HloInstruction* like) : comp_(comp), like_(like) {}

  HloInstruction* add(HloOpcode op, const std::string& base, hlo::Shape shape,
                      std::vector<HloInstruction*> operands, const HloInstruction* like = nullptr) {
    HloInstruction* i = addNew(comp_, op, base, std::move(shape), std::move(operands));
    i->attrs().metadata = (like ? like : like_)->attrs().metadata;
    return i;
  }

  // concat(l, r) along the last dimension.
  HloInstruction* concat(HloInstruction* l, HloInstruction* r, const std::string& base,
                         const HloInstruction* like = nullptr) {
    hlo::Shape s = l->shape();
    s.dims.back() += r->shape().dims.back();
    HloInstruction* c = add(HloOpcode::Concatenate, base, s, {l, r}, like);
    c->attrs().dimensions = std::vector<int64_t>{s.rank() - 1};
    return c;
  }

  // concat(neg ? -f : f, f): of a broadcast's operand when the broadcast
  // keeps its last dimension last, so the table is built at its own size.
  HloInstruction* table(HloInstruction* f, bool neg, const hlo::Shape& full,
                        const std::string& base) {
    if (f->opcode() == HloOpcode::Broadcast) {
      HloInstruction* t = f->operand(0);
      const std::vector<int64_t>& dims = f->dimensions();
      if (t->shape().rank() > 0 && !dims.empty() && dims.back() == full.rank() - 1 &&
          t->shape().dims.back() == f->shape().dims.back()) {
        // Named and attributed after the table (the model's cos / sin), not a layer.
        HloInstruction* c = signedPair(t, neg, t->name() + ".doubled", t);
        hlo::Shape s = full.withType(f->shape().type);
        HloInstruction* b = add(HloOpcode::Broadcast, base, s, {c});
        b->attrs().dimensions = dims;
        return b;
      }
    }
    return signedPair(f, neg, base, nullptr);
  }

 private:
  // concat(neg ? -v : v, v), as halves of concat(v, v): algsimp turns a
  // concat of one unary op's result into the op of the concat (sin computed
  // once per lane tile), and the negation reads the lower half of that.
  HloInstruction* signedPair(HloInstruction* v, bool neg, const std::string& base,
                             const HloInstruction* like) {
    HloInstruction* d = concat(v, v, base, like);
    if (!neg) return d;
    int64_t h = v->shape().dims.back();
    HloInstruction* lo = half(d, 0, h, like);
    HloInstruction* n = add(HloOpcode::Negate, v->name() + ".neg", v->shape(), {lo}, like);
    return concat(n, half(d, h, h, like), base + ".signed", like);
  }

  HloInstruction* half(HloInstruction* d, int64_t start, int64_t h, const HloInstruction* like) {
    hlo::Shape s = d->shape();
    s.dims.back() = h;
    HloInstruction* sl = add(HloOpcode::Slice, d->name() + ".half", s, {d}, like);
    std::vector<hlo::SliceDim> dims;
    for (int64_t k = 0; k < s.rank(); ++k)
      dims.push_back(k + 1 == s.rank() ? hlo::SliceDim{start, start + h, 1}
                                       : hlo::SliceDim{0, s.dims[static_cast<size_t>(k)], 1});
    sl->attrs().slice = dims;
    return sl;
  }

  hlo::HloComputation* comp_;
  const HloInstruction* like_;
};

}  // namespace

HloInstruction* hoistRepeatedUnary(hlo::HloComputation* comp, HloInstruction* concat) {
  if (concat->opcode() != HloOpcode::Concatenate || concat->operandCount() < 2) return nullptr;
  HloInstruction* f = concat->operand(0);
  for (const HloInstruction* o : concat->operands())
    if (o != f) return nullptr;
  if (f->operandCount() != 1 || !hlo::isElementwiseUnary(f->opcode()) ||
      !f->operand(0)->shape().isArray())
    return nullptr;
  HloInstruction* u = f->operand(0);
  auto c = concat->cloneWithOperands(
      comp->parent() ? comp->parent()->uniqueInstructionName(u->name() + ".repeated")
                     : u->name() + ".repeated",
      std::vector<HloInstruction*>(concat->operands().size(), u));
  c->setShape(concat->shape().withType(u->shape().type));
  HloInstruction* cu = comp->addInstruction(std::move(c));
  auto r = f->cloneWithOperands(comp->parent()
                                    ? comp->parent()->uniqueInstructionName(f->name() + ".repeated")
                                    : f->name() + ".repeated",
                                {cu});
  r->setShape(concat->shape());
  return comp->addInstruction(std::move(r));
}

HloInstruction* rewriteRotateHalf(hlo::HloComputation* comp, HloInstruction* concat) {
  const hlo::Shape& s = concat->shape();
  if (concat->opcode() != HloOpcode::Concatenate || concat->operandCount() != 2 || !s.isArray() ||
      s.rank() == 0 || !hlo::isFloatingType(s.type) ||
      concat->dimensions() != std::vector<int64_t>{s.rank() - 1} || s.dims.back() % 2 != 0)
    return nullptr;
  int64_t h = s.dims.back() / 2;
  if (concat->operand(0)->shape().dims.back() != h) return nullptr;
  std::optional<Match> m = match(concat->operand(0), concat->operand(1), h);
  if (!m || !m->x->shape().sameDims(s) || m->x->shape().type != s.type) return nullptr;
  Builder b(comp, concat);
  const std::string& n = concat->name();
  HloInstruction* cos = b.table(m->a, false, s, n + ".cos");
  HloInstruction* sin = b.table(m->b, true, s, n + ".sin");
  HloInstruction* rot = b.concat(m->hi, m->lo, n + ".rotated");
  // Tables first: every site then reads its operands in one order (the
  // tables, shared, come before x in any walk), so the layers' kernels match.
  HloInstruction* xc = b.add(HloOpcode::Multiply, n + ".xcos", s, {cos, m->x});
  HloInstruction* rs = b.add(HloOpcode::Multiply, n + ".rotsin", s, {sin, rot});
  return b.add(HloOpcode::Add, n + ".rope", s, {xc, rs});
}

}  // namespace tpusim::passes
