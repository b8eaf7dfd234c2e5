// dot-through-update: a dot whose operand is a large array updated by a small
// slab along the operand's free (non-contracting, non-batch) dims reads the
// array as it was and puts the slab's own products into its result:
//
//   dot(x, T(dynamic-update-slice(a, u, i)))
//     ->  dynamic-update-slice(dot(x, T(a)), dot(x, T(u')), i')
//
// with u' = dynamic-slice(dynamic-update-slice(a, u, i), i), u read back
// (see below), where T is a chain of transposes (possibly none) used only by the dot, u
// covers every contracting and batch dim of the operand whole, and i' puts
// the slab's start at the result dims of those free dims (0 elsewhere).
//
// Why. A decode step's attention reads its KV cache right after writing one
// row into it (in place): the score dot then depends on the update, so none of
// its cache blocks can be loaded before the update has run. Reading the old
// cache lets them be started earlier, and the update runs after the dot
// (the lowering order puts an in-place update after its operand's other
// readers, LoweringOrder.h). The cost is one small dot of the slab, read
// back from the updated array (the same values: the same clamped start): so
// it runs after the update, and u keeps the update as its only reader (a
// projection's epilogue that computes it, k's RoPE, stays fused).
//
// Exactness: each element of a dot's result is its own sum over the
// contracted dims; the slab's elements are computed from the same operands
// with the same contraction, so the result is the same bit for bit. (A slab
// along a contracted dim would split sums: not rewritten.)
#include <algorithm>
#include <cmath>
#include <memory>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

#include "compiler/passes/DotResultDim.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

// The slab must be this many times smaller than the array: a full-size
// update is no cheaper to multiply separately.
constexpr int64_t kMinArrayToSlab = 16;

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Largest batch whose inner products go through one matmul (its diagonal):
// one MXU tile of rows and columns.
constexpr int64_t kMaxDiagonalBatch = 128;

// `x` as a [batch, contracted] matrix: its batch dims, then its contracted
// dims in the order `contract` pairs them (every other dim is 1).
HloInstruction* asMatrix(hlo::HloComputation* comp, HloInstruction* x,
                         const std::vector<int64_t>& batch, const std::vector<int64_t>& contract,
                         int64_t b, int64_t k, const std::string& base) {
  std::vector<int64_t> perm = batch;
  perm.insert(perm.end(), contract.begin(), contract.end());
  for (int64_t d = 0; d < x->shape().rank(); ++d)
    if (!contains(perm, d)) perm.push_back(d);
  std::vector<int64_t> dims;
  for (int64_t d : perm) dims.push_back(x->shape().dims[static_cast<size_t>(d)]);
  HloInstruction* t =
      addNew(comp, HloOpcode::Transpose, base, Shape::array(x->shape().type, dims), {x});
  t->attrs().dimensions = perm;
  return addNew(comp, HloOpcode::Reshape, base, Shape::array(x->shape().type, {b, k}), {t});
}

// A batched dot whose entries are single inner products (every free dim 1)
// as the diagonal of one [B, K] x [K, B] matmul, taken by a select and a max
// over each row (max(x, -inf) = x): B weight columns in one tile instead of B
// tiles of one column each. Each diagonal element is the same sum over the
// same K products. Null if the dot is not of that form.
HloInstruction* innerProductsAsDiagonal(hlo::HloModule& module, hlo::HloComputation* comp,
                                        HloInstruction* lhs, HloInstruction* rhs,
                                        const hlo::DotDimensionNumbers& dn, const Shape& shape,
                                        const std::string& base) {
  if (dn.lhsBatch.empty() || !hlo::isFloatingType(shape.type)) return nullptr;
  int64_t b = 1, k = 1;
  for (int64_t d : dn.lhsBatch) b *= lhs->shape().dims[static_cast<size_t>(d)];
  for (int64_t d : dn.lhsContracting) k *= lhs->shape().dims[static_cast<size_t>(d)];
  if (b < 2 || b > kMaxDiagonalBatch || lhs->shape().elementCount() != b * k ||
      rhs->shape().elementCount() != b * k)
    return nullptr;
  HloInstruction* l = asMatrix(comp, lhs, dn.lhsBatch, dn.lhsContracting, b, k, base + ".rows");
  HloInstruction* r = asMatrix(comp, rhs, dn.rhsBatch, dn.rhsContracting, b, k, base + ".cols");
  const Shape square = Shape::array(shape.type, {b, b});
  HloInstruction* all = addNew(comp, HloOpcode::Dot, base + ".all", square, {l, r});
  all->attrs().dot.lhsContracting = {1};
  all->attrs().dot.rhsContracting = {1};
  const Shape index = Shape::array(hlo::PrimitiveType::S32, {b, b});
  HloInstruction* iotas[2];
  for (int d = 0; d < 2; ++d) {
    iotas[d] = addNew(comp, HloOpcode::Iota, base + ".iota", index, {});
    hlo::AttrValue v;
    v.kind = hlo::AttrValue::Kind::Int;
    v.i = d;
    iotas[d]->setGeneric("iota_dimension", v);
  }
  HloInstruction* onDiagonal =
      addNew(comp, HloOpcode::Compare, base + ".diagonal",
             Shape::array(hlo::PrimitiveType::Pred, {b, b}), {iotas[0], iotas[1]});
  onDiagonal->attrs().direction = hlo::ComparisonDirection::EQ;
  HloInstruction* lowest =
      addNew(comp, HloOpcode::Constant, base + ".lowest", Shape::scalar(shape.type), {});
  lowest->attrs().literal = hlo::Literal::scalar(shape.type, -HUGE_VAL);
  HloInstruction* fill = addNew(comp, HloOpcode::Broadcast, base + ".lowest", square, {lowest});
  fill->attrs().dimensions = std::vector<int64_t>{};
  HloInstruction* picked =
      addNew(comp, HloOpcode::Select, base + ".diagonal", square, {onDiagonal, all, fill});
  auto reducer = std::make_unique<hlo::HloComputation>(module.uniqueComputationName(base + ".max"));
  HloInstruction* a =
      addNew(reducer.get(), HloOpcode::Parameter, "a", Shape::scalar(shape.type), {});
  a->attrs().parameterNumber = 0;
  HloInstruction* c =
      addNew(reducer.get(), HloOpcode::Parameter, "b", Shape::scalar(shape.type), {});
  c->attrs().parameterNumber = 1;
  reducer->setRoot(
      addNew(reducer.get(), HloOpcode::Maximum, "m", Shape::scalar(shape.type), {a, c}));
  HloComputation* max = module.addComputationBefore(std::move(reducer), comp);
  HloInstruction* row = addNew(comp, HloOpcode::Reduce, base + ".diagonal",
                               Shape::array(shape.type, {b}), {picked, lowest});
  row->attrs().dimensions = std::vector<int64_t>{1};
  row->attrs().calls.push_back(hlo::CalledComputations{"to_apply", {max}, false});
  return addNew(comp, HloOpcode::Reshape, base, shape, {row});
}

bool rewriteSide(hlo::HloModule& module, hlo::HloComputation* comp, HloInstruction* dot, int side) {
  const hlo::DotDimensionNumbers& dn = dot->attrs().dot;
  const auto& batch = side == 0 ? dn.lhsBatch : dn.rhsBatch;
  const auto& contract = side == 0 ? dn.lhsContracting : dn.rhsContracting;
  // Walk down the transposes to the update; `perm[k]` is the update's dim
  // that the operand's dim k reads.
  std::vector<HloInstruction*> chain;  // from the dot's operand down
  HloInstruction* x = dot->operand(side);
  std::vector<int64_t> perm(static_cast<size_t>(x->shape().rank()));
  for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
  while (x->opcode() == HloOpcode::Transpose && x->userCount() == 1) {
    chain.push_back(x);
    const std::vector<int64_t>& dims = *x->attrs().dimensions;  // out k <- in dims[k]
    for (int64_t& p : perm) p = dims[static_cast<size_t>(p)];
    x = x->operand(0);
  }
  if (x->opcode() != HloOpcode::DynamicUpdateSlice) return false;
  HloInstruction* array = x->operand(0);
  HloInstruction* slab = x->operand(1);
  if (slab->shape().elementCount() * kMinArrayToSlab > array->shape().elementCount()) return false;
  // The slab covers every contracted and batch dim whole; it may be partial
  // only along free dims.
  const int64_t rank = dot->operand(side)->shape().rank();
  bool partialFree = false;
  for (int64_t k = 0; k < rank; ++k) {
    const size_t u = static_cast<size_t>(perm[static_cast<size_t>(k)]);
    const bool whole = slab->shape().dims[u] == array->shape().dims[u];
    if (contains(contract, k) || contains(batch, k)) {
      if (!whole) return false;
    } else if (!whole) {
      partialFree = true;
    }
  }
  if (!partialFree) return false;
  // Rebuild the transposes over the array and over the slab.
  auto transposed = [&](HloInstruction* base, const std::string& tag) {
    HloInstruction* cur = base;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const std::vector<int64_t>& dims = *(*it)->attrs().dimensions;
      std::vector<int64_t> outDims;
      for (int64_t d : dims) outDims.push_back(cur->shape().dims[static_cast<size_t>(d)]);
      Shape s = Shape::array(cur->shape().type, outDims);
      HloInstruction* t = addNew(comp, HloOpcode::Transpose, (*it)->name() + tag, s, {cur});
      t->attrs().dimensions = dims;
      t->attrs().metadata = (*it)->attrs().metadata;
      cur = t;
    }
    return cur;
  };
  std::vector<HloInstruction*> ops{dot->operand(0), dot->operand(1)};
  ops[static_cast<size_t>(side)] = transposed(array, ".before-update");
  HloInstruction* whole =
      addNew(comp, HloOpcode::Dot, dot->name() + ".before-update", dot->shape(), ops);
  whole->attrs() = dot->attrs();
  // The slab read back from the updated array: the slab's dot then comes
  // after the update (which comes after the dot of the old array), and the
  // slab's producer keeps the update as its only reader (a projection's
  // epilogue that makes the cache row stays fused).
  std::vector<HloInstruction*> dsOps{x};
  for (int64_t d = 0; d < array->shape().rank(); ++d) dsOps.push_back(x->operand(2 + d));
  HloInstruction* readBack =
      addNew(comp, HloOpcode::DynamicSlice, x->name() + ".slab", slab->shape(), dsOps);
  hlo::AttrValue sizes;
  sizes.kind = hlo::AttrValue::Kind::IntList;
  sizes.list = slab->shape().dims;
  readBack->setGeneric("dynamic_slice_sizes", sizes);
  ops[static_cast<size_t>(side)] = transposed(readBack, ".update");
  std::vector<int64_t> slabDims = dot->shape().dims;
  HloInstruction* zero = nullptr;
  std::vector<HloInstruction*> starts(slabDims.size(), nullptr);
  for (int64_t k = 0; k < rank; ++k) {
    if (contains(contract, k) || contains(batch, k)) continue;
    const size_t u = static_cast<size_t>(perm[static_cast<size_t>(k)]);
    const size_t r = static_cast<size_t>(dotResultDim(*dot, side, k));
    slabDims[r] = slab->shape().dims[u];
    starts[r] = x->operand(2 + static_cast<int64_t>(u));
  }
  const Shape slabShape = Shape::array(dot->shape().type, slabDims);
  HloInstruction* part =
      innerProductsAsDiagonal(module, comp, ops[0], ops[1], dn, slabShape, dot->name() + ".update");
  if (!part) {
    part = addNew(comp, HloOpcode::Dot, dot->name() + ".update", slabShape, ops);
    part->attrs() = dot->attrs();
  }
  const hlo::PrimitiveType indexType = x->operand(2)->shape().type;
  for (HloInstruction*& s : starts) {
    if (s) continue;
    if (!zero) {
      zero = addNew(comp, HloOpcode::Constant, dot->name() + ".zero", Shape::scalar(indexType), {});
      zero->attrs().literal = hlo::Literal::scalar(indexType, 0);
    }
    s = zero;
  }
  std::vector<HloInstruction*> updOps{whole, part};
  updOps.insert(updOps.end(), starts.begin(), starts.end());
  HloInstruction* result =
      addNew(comp, HloOpcode::DynamicUpdateSlice, dot->name() + ".updated", dot->shape(), updOps);
  result->attrs().metadata = dot->attrs().metadata;
  dot->replaceAllUsesWith(result);
  comp->removeInstruction(dot);
  for (HloInstruction* t : chain)
    if (t->userCount() == 0) comp->removeInstruction(t);
  return true;
}

class DotThroughUpdatePass : public HloPass {
 public:
  std::string_view name() const override { return "dot-through-update"; }
  bool run(hlo::HloModule& module) override {
    return rewriteEach(
        module, HloOpcode::Dot, [&module](hlo::HloComputation* comp, HloInstruction* dot) {
          return rewriteSide(module, comp, dot, 1) || rewriteSide(module, comp, dot, 0);
        });
  }
};

}  // namespace

std::unique_ptr<HloPass> createDotThroughUpdatePass() {
  return std::make_unique<DotThroughUpdatePass>();
}

}  // namespace tpusim::passes
