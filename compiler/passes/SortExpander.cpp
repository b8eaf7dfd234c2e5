// sort-expander: a sort along one dimension as a bitonic sorting network of
// element-wise compare-exchanges the VPU runs (XLA's TPU back end also sorts
// small arrays with a network). The sort dimension is moved last and padded to
// a power of two N; every stage views the arrays as [rest, blocks, 2, half],
// takes the two halves (the second one reversed in the first stage of each
// merge, so every stage sorts ascending), and keeps or swaps each pair by the
// comparator, for all operands at once: log2(N) (log2(N) + 1) / 2 stages.
// An iota rides along: it breaks ties (so the result is the stable sort the
// reference evaluator computes) and marks the padding (indices >= n sort last).
// Comparators: compare(parameter 2k, parameter 2k + 1) with LT or GT (ascending
// or descending by operand k), as JAX emits them; TOTALORDER float keys compare
// as their sign-folded bits. Up to kMaxSortSize elements along the dimension;
// a larger sort, or another comparator, stays and the kernel lowering names it.
#include <fmt/format.h>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::ComparisonDirection;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

constexpr int64_t kMaxSortSize = 1024;

struct Comparator {
  int64_t keyOperand = 0;
  bool descending = false;
  bool totalOrder = false;
};

bool readComparator(const HloInstruction& sort, Comparator* out) {
  const HloComputation* cmp = sort.toApply();
  const HloInstruction* root = cmp ? cmp->root() : nullptr;
  if (!root || root->opcode() != HloOpcode::Compare || !root->attrs().direction) return false;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::Parameter || b->opcode() != HloOpcode::Parameter) return false;
  int64_t pa = a->attrs().parameterNumber, pb = b->attrs().parameterNumber;
  ComparisonDirection d = *root->attrs().direction;
  if (d != ComparisonDirection::LT && d != ComparisonDirection::GT) return false;
  if (pa / 2 != pb / 2 || pa == pb) return false;
  out->keyOperand = pa / 2;
  // compare(p2k, p2k+1) LT is ascending; swapping the parameters flips it.
  out->descending = (d == ComparisonDirection::GT) != (pa > pb);
  auto type = root->identAttr("type");
  out->totalOrder = type && *type == "TOTALORDER";
  return out->keyOperand < sort.operandCount();
}

class Network {
 public:
  Network(HloComputation* comp, const std::string& base) : comp_(comp), base_(base) {}

  HloInstruction* op(HloOpcode code, Shape s, std::vector<HloInstruction*> operands) {
    return addNew(comp_, code, base_, std::move(s), std::move(operands));
  }
  HloInstruction* reshape(HloInstruction* v, std::vector<int64_t> dims) {
    if (v->shape().dims == dims) return v;
    return op(HloOpcode::Reshape, Shape::array(v->shape().type, std::move(dims)), {v});
  }
  HloInstruction* cmp(HloInstruction* a, HloInstruction* b, ComparisonDirection d) {
    HloInstruction* c =
        op(HloOpcode::Compare, Shape::array(PrimitiveType::Pred, a->shape().dims), {a, b});
    c->attrs().direction = d;
    return c;
  }
  HloInstruction* logic(HloOpcode code, HloInstruction* a, HloInstruction* b) {
    return op(code, a->shape(), {a, b});
  }
  HloInstruction* splat(PrimitiveType t, double v, const std::vector<int64_t>& dims) {
    HloInstruction* c = op(HloOpcode::Constant, Shape::scalar(t), {});
    c->attrs().literal = hlo::Literal::scalar(t, v);
    HloInstruction* b = op(HloOpcode::Broadcast, Shape::array(t, dims), {c});
    b->attrs().dimensions = std::vector<int64_t>{};
    return b;
  }
  // Half h (0 or 1) of v viewed as [rows, blocks, 2, half], as [rows, blocks, half].
  HloInstruction* half(HloInstruction* v, int64_t rows, int64_t blocks, int64_t width, int h) {
    HloInstruction* grid = reshape(v, {rows, blocks, 2, width});
    HloInstruction* s =
        op(HloOpcode::Slice, Shape::array(v->shape().type, {rows, blocks, 1, width}), {grid});
    s->attrs().slice =
        std::vector<hlo::SliceDim>{{0, rows, 1}, {0, blocks, 1}, {h, h + 1, 1}, {0, width, 1}};
    return reshape(s, {rows, blocks, width});
  }
  HloInstruction* reverseLast(HloInstruction* v) {
    HloInstruction* r = op(HloOpcode::Reverse, v->shape(), {v});
    r->attrs().dimensions = std::vector<int64_t>{v->shape().rank() - 1};
    return r;
  }
  HloInstruction* join(HloInstruction* lo, HloInstruction* hi, int64_t rows, int64_t blocks,
                       int64_t width) {
    HloInstruction* a = reshape(lo, {rows, blocks, 1, width});
    HloInstruction* b = reshape(hi, {rows, blocks, 1, width});
    HloInstruction* c = op(HloOpcode::Concatenate,
                           Shape::array(lo->shape().type, {rows, blocks, 2, width}), {a, b});
    c->attrs().dimensions = std::vector<int64_t>{2};
    return reshape(c, {rows, blocks * 2 * width});
  }

 private:
  HloComputation* comp_;
  std::string base_;
};

// The s32 whose signed order is the total order of f32 bits (sign-folded).
HloInstruction* totalOrderKey(Network& n, HloInstruction* x) {
  const std::vector<int64_t>& dims = x->shape().dims;
  HloInstruction* f = x->shape().type == PrimitiveType::F32
                          ? x
                          : n.op(HloOpcode::Convert, Shape::array(PrimitiveType::F32, dims), {x});
  HloInstruction* bits =
      n.op(HloOpcode::BitcastConvert, Shape::array(PrimitiveType::S32, dims), {f});
  HloInstruction* sign =
      n.logic(HloOpcode::ShiftRightArithmetic, bits, n.splat(PrimitiveType::S32, 31, dims));
  HloInstruction* fold =
      n.logic(HloOpcode::And, sign, n.splat(PrimitiveType::S32, 0x7fffffff, dims));
  return n.logic(HloOpcode::Xor, bits, fold);
}

bool expand(HloComputation* comp, HloInstruction* sort) {
  Comparator c;
  if (sort->dimensions().size() != 1 || !readComparator(*sort, &c)) return false;
  const int64_t dim = sort->dimensions()[0];
  const std::vector<int64_t> dims = sort->operand(0)->shape().dims;
  const int64_t rank = int64_t(dims.size());
  if (dim < 0 || dim >= rank) return false;
  const int64_t n = dims[size_t(dim)];
  if (n > kMaxSortSize) return false;
  for (const HloInstruction* o : sort->operands())
    if (!o->shape().isArray() || o->shape().dims != dims) return false;
  const PrimitiveType keyType = sort->operand(c.keyOperand)->shape().type;
  if (keyType == PrimitiveType::F64 || keyType == PrimitiveType::Pred) return false;
  int64_t wide = 1;
  while (wide < n) wide *= 2;
  int64_t rows = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) rows *= dims[size_t(d)];

  Network net(comp, sort->name());
  // The sort dimension last, as [rows, n], padded to [rows, wide].
  std::vector<int64_t> perm, moved;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  for (int64_t p : perm) moved.push_back(dims[size_t(p)]);
  auto prepare = [&](HloInstruction* v) {
    if (dim != rank - 1) {
      HloInstruction* t = net.op(HloOpcode::Transpose, Shape::array(v->shape().type, moved), {v});
      t->attrs().dimensions = perm;
      v = t;
    }
    v = net.reshape(v, {rows, n});
    if (wide != n) {
      HloInstruction* zero = net.op(HloOpcode::Constant, Shape::scalar(v->shape().type), {});
      zero->attrs().literal = hlo::Literal::scalar(v->shape().type, 0);
      HloInstruction* p =
          net.op(HloOpcode::Pad, Shape::array(v->shape().type, {rows, wide}), {v, zero});
      p->attrs().padding = std::vector<hlo::PaddingDim>{{0, 0, 0}, {0, wide - n, 0}};
      v = p;
    }
    return v;
  };
  std::vector<HloInstruction*> vals;
  for (HloInstruction* o : sort->operands()) vals.push_back(prepare(o));
  const size_t payload = vals.size();
  HloInstruction* index =
      net.op(HloOpcode::Iota, Shape::array(PrimitiveType::S32, {rows, wide}), {});
  hlo::AttrValue one;
  one.kind = hlo::AttrValue::Kind::Int;
  one.i = 1;
  index->setGeneric("iota_dimension", one);
  vals.push_back(index);
  HloInstruction* key = vals[size_t(c.keyOperand)];
  if (c.totalOrder && hlo::isFloatingType(keyType)) key = totalOrderKey(net, key);
  vals.push_back(key);
  const size_t indexAt = payload, keyAt = payload + 1;

  auto stage = [&](int64_t width, bool flip) {
    const int64_t blocks = wide / (2 * width);
    std::vector<int64_t> pairDims{rows, blocks, width};
    std::vector<HloInstruction*> lo, hi;
    for (HloInstruction* v : vals) {
      lo.push_back(net.half(v, rows, blocks, width, 0));
      HloInstruction* h = net.half(v, rows, blocks, width, 1);
      hi.push_back(flip ? net.reverseLast(h) : h);
    }
    // swap: hi goes first: a valid hi before an invalid lo, else by key, then index.
    using D = ComparisonDirection;
    const D before = c.descending ? D::GT : D::LT;
    const D after = c.descending ? D::LT : D::GT;
    HloInstruction* limit = net.splat(PrimitiveType::S32, double(n), pairDims);
    HloInstruction* loValid = net.cmp(lo[indexAt], limit, D::LT);
    HloInstruction* hiValid = net.cmp(hi[indexAt], limit, D::LT);
    HloInstruction* hiFirst = net.cmp(hi[keyAt], lo[keyAt], before);
    HloInstruction* loFirst = net.cmp(hi[keyAt], lo[keyAt], after);
    HloInstruction* tie =
        net.logic(HloOpcode::And, net.op(HloOpcode::Not, loFirst->shape(), {loFirst}),
                  net.cmp(hi[indexAt], lo[indexAt], D::LT));
    HloInstruction* byKey = net.logic(HloOpcode::Or, hiFirst, tie);
    HloInstruction* swap =
        net.logic(HloOpcode::And, hiValid,
                  net.logic(HloOpcode::Or, net.op(HloOpcode::Not, loValid->shape(), {loValid}),
                            net.logic(HloOpcode::And, loValid, byKey)));
    for (size_t k = 0; k < vals.size(); ++k) {
      HloInstruction* first = net.op(HloOpcode::Select, lo[k]->shape(), {swap, hi[k], lo[k]});
      HloInstruction* second = net.op(HloOpcode::Select, lo[k]->shape(), {swap, lo[k], hi[k]});
      if (flip) second = net.reverseLast(second);
      vals[k] = net.join(first, second, rows, blocks, width);
    }
  };
  for (int64_t merge = 2; merge <= wide; merge *= 2) {
    stage(merge / 2, true);
    for (int64_t width = merge / 4; width >= 1; width /= 2) stage(width, false);
  }

  std::vector<int64_t> inverse(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < rank; ++i) inverse[size_t(perm[size_t(i)])] = i;
  std::vector<HloInstruction*> outs;
  for (size_t k = 0; k < payload; ++k) {
    HloInstruction* v = vals[k];
    if (wide != n) {
      HloInstruction* s = net.op(HloOpcode::Slice, Shape::array(v->shape().type, {rows, n}), {v});
      s->attrs().slice = std::vector<hlo::SliceDim>{{0, rows, 1}, {0, n, 1}};
      v = s;
    }
    v = net.reshape(v, moved);
    if (dim != rank - 1) {
      HloInstruction* t = net.op(HloOpcode::Transpose, Shape::array(v->shape().type, dims), {v});
      t->attrs().dimensions = inverse;
      v = t;
    }
    outs.push_back(v);
  }
  HloInstruction* result =
      sort->shape().isTuple() ? net.op(HloOpcode::Tuple, sort->shape(), outs) : outs[0];
  sort->replaceAllUsesWith(result);
  comp->removeInstruction(sort);
  return true;
}

class SortExpanderPass : public HloPass {
 public:
  std::string_view name() const override { return "sort-expander"; }

  bool run(hlo::HloModule& module) override { return rewriteEach(module, HloOpcode::Sort, expand); }
};

}  // namespace

std::unique_ptr<HloPass> createSortExpanderPass() { return std::make_unique<SortExpanderPass>(); }

}  // namespace tpusim::passes
