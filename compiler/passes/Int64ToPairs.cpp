// int64-to-pairs: 64-bit integer arithmetic as arithmetic on pairs of u32
// words, the way XLA's TPU back end emulates s64 and u64 (the VPU has 32-bit
// lanes). Memory keeps 64-bit arrays as they are (each element its low word
// then its high word, .npy's little-endian bytes), so:
//   - a 64-bit value an op needs is split: bitcast-convert to u32[..., 2] (the
//     same bytes), then the low and the high word slices;
//   - an op this pass rewrites computes the low and high words of its result
//     from its operands' words with u32 / s32 ops (add with carry, 16-bit
//     partial products for the high word of a product, ...), and the pair is
//     joined back (concatenate + bitcast-convert) for users it does not
//     rewrite; a rewritten user takes the words directly;
//   - ops it does not know (sorts, float math on integers, ...) keep their
//     64-bit type and reach the kernel lowering, which names them.
// Rewritten: add, subtract, multiply, divide, remainder, power, negate, abs,
// sign, popcnt, count-leading-zeros, and, or, xor, not, shifts, maximum,
// minimum, clamp, select, compare, broadcast, reshape, iota, dot, reduce by
// add / maximum / minimum, and converts from and to 64-bit types. Overflow
// wraps (two's complement), shift amounts of 64 or more (or negative) shift
// every bit out, float -> integer converts truncate toward zero and saturate
// (NaN -> 0), division by zero gives all ones (x for remainder) and
// INT64_MIN / -1 wraps, as XLA defines them.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

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

bool is64(PrimitiveType t) { return t == PrimitiveType::S64 || t == PrimitiveType::U64; }
bool is64(const Shape& s) { return s.isArray() && is64(s.type); }

struct Pair {
  HloInstruction* lo = nullptr;
  HloInstruction* hi = nullptr;
};

// Scalar reducer computations (add of u32, max of s32) the word reductions
// apply, made once per module.
class Reducers {
 public:
  Reducers(hlo::HloModule& module, HloComputation* before) : module_(module), before_(before) {}
  HloComputation* get(HloOpcode op, PrimitiveType t) {
    auto key = std::make_pair(op, t);
    auto it = made_.find(key);
    if (it != made_.end()) return it->second;
    auto c = std::make_unique<HloComputation>(module_.uniqueComputationName(
        fmt::format("{}_{}.pairs", hlo::opcodeName(op), hlo::primitiveTypeName(t))));
    HloInstruction* a = addNew(c.get(), HloOpcode::Parameter, "a", Shape::scalar(t), {});
    a->attrs().parameterNumber = 0;
    HloInstruction* b = addNew(c.get(), HloOpcode::Parameter, "b", Shape::scalar(t), {});
    b->attrs().parameterNumber = 1;
    c->setRoot(addNew(c.get(), op, "r", Shape::scalar(t), {a, b}));
    return made_[key] = module_.addComputationBefore(std::move(c), before_);
  }

 private:
  hlo::HloModule& module_;
  HloComputation* before_;
  std::map<std::pair<HloOpcode, PrimitiveType>, HloComputation*> made_;
};

class Rewriter {
 public:
  Rewriter(HloComputation* comp, Reducers* reducers) : comp_(comp), reducers_(reducers) {}

  // Rewrites `inst` if it is an op this pass knows on 64-bit values; true if it did.
  bool rewrite(HloInstruction* inst);

 private:
  HloComputation* comp_;
  Reducers* reducers_;
  std::map<HloInstruction*, Pair> pairs_;
  std::vector<int64_t> dims_;  // the dims of the instruction being rewritten
  std::string base_;

  Shape u32() const { return Shape::array(PrimitiveType::U32, dims_); }
  Shape s32() const { return Shape::array(PrimitiveType::S32, dims_); }
  Shape pred() const { return Shape::array(PrimitiveType::Pred, dims_); }
  Shape f32() const { return Shape::array(PrimitiveType::F32, dims_); }

  HloInstruction* op(HloOpcode code, const Shape& s, std::vector<HloInstruction*> operands) {
    return addNew(comp_, code, base_, s, std::move(operands));
  }
  HloInstruction* bin(HloOpcode code, HloInstruction* a, HloInstruction* b) {
    return op(code, a->shape(), {a, b});
  }
  HloInstruction* un(HloOpcode code, HloInstruction* a) { return op(code, a->shape(), {a}); }
  HloInstruction* cmp(HloInstruction* a, HloInstruction* b, ComparisonDirection d) {
    HloInstruction* c = op(HloOpcode::Compare, pred(), {a, b});
    c->attrs().direction = d;
    return c;
  }
  HloInstruction* select(HloInstruction* p, HloInstruction* a, HloInstruction* b) {
    return op(HloOpcode::Select, a->shape(), {p, a, b});
  }
  HloInstruction* convert(HloInstruction* a, const Shape& to) {
    return op(HloOpcode::Convert, to, {a});
  }
  // A constant of type t broadcast to the current dims.
  HloInstruction* splat(PrimitiveType t, double v) {
    HloInstruction* c = op(HloOpcode::Constant, Shape::scalar(t), {});
    c->attrs().literal = hlo::Literal::scalar(t, v);
    if (dims_.empty()) return c;
    HloInstruction* b = op(HloOpcode::Broadcast, Shape::array(t, dims_), {c});
    b->attrs().dimensions = std::vector<int64_t>{};
    return b;
  }
  HloInstruction* u(double v) { return splat(PrimitiveType::U32, v); }

  Pair pairOf(HloInstruction* v);
  Pair splitConstant(HloInstruction* v);
  HloInstruction* join(const Pair& p, const Shape& shape);
  Pair add(Pair a, Pair b);
  Pair negate(Pair a);
  Pair multiply(Pair a, Pair b);
  HloInstruction* mulHigh(HloInstruction* a, HloInstruction* b);
  HloInstruction* compare(Pair a, Pair b, ComparisonDirection d, bool isSigned);
  Pair select(HloInstruction* p, Pair a, Pair b) {
    return {select(p, a.lo, b.lo), select(p, a.hi, b.hi)};
  }
  Pair shift(Pair a, Pair n, HloOpcode kind);
  HloInstruction* isNegative(Pair a) {
    return cmp(convert(a.hi, s32()), splat(PrimitiveType::S32, 0), ComparisonDirection::LT);
  }
  HloInstruction* isZero(Pair a) {
    return cmp(bin(HloOpcode::Or, a.lo, a.hi), u(0), ComparisonDirection::EQ);
  }
  Pair magnitude(Pair a) { return select(isNegative(a), negate(a), a); }
  Pair divideUnsigned(Pair n, Pair d, Pair* remainder);
  Pair divide(Pair a, Pair b, bool isSigned);
  Pair remainder(Pair a, Pair b, bool isSigned);
  Pair power(Pair base, Pair exponent, bool isSigned);
  Pair popcount(Pair a);
  Pair countLeadingZeros(Pair a);
  bool dotPair(HloInstruction* inst, Pair* out);
  // `body` (word arithmetic from the argument pairs to the result pairs) built
  // in a new multi-output loop fusion: a long chain (a divide is ~1200 ops)
  // stays one kernel instead of being cut by the fusion pass's size limit into
  // hundreds of kernels.
  std::vector<Pair> inFusion(
      const std::vector<Pair>& args, const std::string& what,
      const std::function<std::vector<Pair>(Rewriter&, std::vector<Pair>)>& body);
  // The sum over `reduced` of x (of dims_), wrapping mod 2^64; dims_ becomes outDims.
  bool sumPairs(Pair x, const std::vector<int64_t>& reduced, const std::vector<int64_t>& outDims,
                Pair* out);
  HloInstruction* transposed(HloInstruction* w, const std::vector<int64_t>& perm);
  Pair fromNarrow(HloInstruction* x);
  Pair fromFloat(HloInstruction* x, bool isSigned);
  HloInstruction* toNarrow(Pair a, const Shape& to, bool isSigned);
  bool computePair(HloInstruction* inst, Pair* out);
  bool reducePair(HloInstruction* inst, bool isSigned, Pair* out);
  // reduce(x) over `dims` with the scalar reducer `op` on type t (the result has dims_).
  HloInstruction* reduceWords(const std::vector<int64_t>& dims, HloInstruction* x, HloOpcode op,
                              PrimitiveType t, double init);
  HloInstruction* reduceWords(HloInstruction* inst, HloInstruction* x, HloOpcode op,
                              PrimitiveType t, double init) {
    return reduceWords(inst->dimensions(), x, op, t, init);
  }
};

HloInstruction* Rewriter::reduceWords(const std::vector<int64_t>& dims, HloInstruction* x,
                                      HloOpcode code, PrimitiveType t, double initValue) {
  HloInstruction* init = op(HloOpcode::Constant, Shape::scalar(t), {});
  init->attrs().literal = hlo::Literal::scalar(t, initValue);
  HloInstruction* r = op(HloOpcode::Reduce, Shape::array(t, dims_), {x, init});
  r->attrs().dimensions = dims;
  r->attrs().calls.push_back(hlo::CalledComputations{"to_apply", {reducers_->get(code, t)}, false});
  return r;
}

std::vector<Pair> Rewriter::inFusion(
    const std::vector<Pair>& args, const std::string& what,
    const std::function<std::vector<Pair>(Rewriter&, std::vector<Pair>)>& body) {
  hlo::HloModule& module = *comp_->parent();
  auto fused = std::make_unique<HloComputation>(module.uniqueComputationName("fused_" + what));
  Rewriter inner(fused.get(), reducers_);
  inner.dims_ = dims_;
  inner.base_ = base_;
  std::vector<HloInstruction*> operands;
  std::vector<Pair> params;
  auto parameter = [&](HloInstruction* outer) {
    HloInstruction* p = addNew(fused.get(), HloOpcode::Parameter,
                               fmt::format("param_{}", operands.size()), u32(), {});
    p->attrs().parameterNumber = int64_t(operands.size());
    operands.push_back(outer);
    return p;
  };
  for (const Pair& a : args) {
    HloInstruction* lo = parameter(a.lo);
    params.push_back({lo, parameter(a.hi)});
  }
  std::vector<Pair> results = body(inner, params);
  std::vector<HloInstruction*> roots;
  std::vector<Shape> shapes;
  for (const Pair& r : results) {
    roots.push_back(r.lo);
    roots.push_back(r.hi);
    shapes.push_back(u32());
    shapes.push_back(u32());
  }
  const Shape tupleShape = Shape::tuple(shapes);
  fused->setRoot(addNew(fused.get(), HloOpcode::Tuple, "tuple", tupleShape, roots));
  HloComputation* called = module.addComputationBefore(std::move(fused), comp_);
  HloInstruction* fusion = op(HloOpcode::Fusion, tupleShape, operands);
  fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {called}, false});
  hlo::AttrValue kind;
  kind.kind = hlo::AttrValue::Kind::Ident;
  kind.s = "kLoop";
  fusion->setGeneric("kind", kind);
  std::vector<Pair> out;
  auto element = [&](int64_t k) {
    HloInstruction* g = op(HloOpcode::GetTupleElement, u32(), {fusion});
    hlo::AttrValue index;
    index.kind = hlo::AttrValue::Kind::Int;
    index.i = k;
    g->setGeneric("index", index);
    return g;
  };
  for (size_t k = 0; k < results.size(); ++k)
    out.push_back({element(int64_t(2 * k)), element(int64_t(2 * k + 1))});
  return out;
}

// The words' sums: the low word in pieces (16-bit halves while at most 65537
// elements meet in one sum, bytes up to 16843009, so no u32 sum overflows)
// and the high word (only its sum mod 2^32 matters), recombined with carries.
bool Rewriter::sumPairs(Pair x, const std::vector<int64_t>& reduced,
                        const std::vector<int64_t>& outDims, Pair* out) {
  int64_t count = 1;
  for (int64_t d : reduced) count *= dims_.at(size_t(d));
  const int pieceBits = count <= 65537 ? 16 : 8;
  if (count > (int64_t(0xffffffff) / ((int64_t(1) << pieceBits) - 1))) return false;
  std::vector<HloInstruction*> pieces;
  for (int shift = 0; shift < 32; shift += pieceBits) {
    HloInstruction* p = shift ? bin(HloOpcode::ShiftRightLogical, x.lo, u(shift)) : x.lo;
    if (shift + pieceBits < 32) p = bin(HloOpcode::And, p, u((1u << pieceBits) - 1));
    pieces.push_back(p);
  }
  dims_ = outDims;
  Pair r{u(0), reduceWords(reduced, x.hi, HloOpcode::Add, PrimitiveType::U32, 0)};
  for (size_t k = 0; k < pieces.size(); ++k) {
    HloInstruction* s = reduceWords(reduced, pieces[k], HloOpcode::Add, PrimitiveType::U32, 0);
    const int shift = int(k) * pieceBits;
    Pair placed = shift == 0 ? Pair{s, u(0)}
                             : Pair{bin(HloOpcode::ShiftLeft, s, u(shift)),
                                    bin(HloOpcode::ShiftRightLogical, s, u(32 - shift))};
    r = add(r, placed);
  }
  *out = r;
  return true;
}

// Restoring long division of u64 words, one quotient bit per step from the
// top (the VPU has no divide; XLA's TPU back end also divides 64-bit integers
// in software): the partial remainder takes the next dividend bit, and the
// divisor is subtracted where it fits, setting the quotient bit. The 64 steps
// run in fusions of kDivideSteps steps (~25 word ops each) passing the
// remainder and the quotient on: one kernel per chunk, each small enough for
// the code generator. A zero divisor gives all ones and the remainder n, which
// is XLA's unsigned result.
constexpr int kDivideSteps = 8;

Pair Rewriter::divideUnsigned(Pair n, Pair d, Pair* remainder) {
  Pair r{u(0), u(0)}, q{u(0), u(0)};
  for (int top = 63; top >= 0; top -= kDivideSteps) {
    std::vector<Pair> state =
        inFusion({n, d, r, q}, "divide", [&](Rewriter& in, std::vector<Pair> a) {
          Pair nd = in.negate(a[1]);
          Pair rem = a[2], quo = a[3];
          for (int bit = top; bit > top - kDivideSteps; --bit) {
            HloInstruction* w = bit >= 32 ? a[0].hi : a[0].lo;
            const int k = bit % 32;
            HloInstruction* next = k ? in.bin(HloOpcode::ShiftRightLogical, w, in.u(k)) : w;
            if (k < 31) next = in.bin(HloOpcode::And, next, in.u(1));
            rem = {in.bin(HloOpcode::Or, in.bin(HloOpcode::ShiftLeft, rem.lo, in.u(1)), next),
                   in.bin(HloOpcode::Or, in.bin(HloOpcode::ShiftLeft, rem.hi, in.u(1)),
                          in.bin(HloOpcode::ShiftRightLogical, rem.lo, in.u(31)))};
            HloInstruction* take = in.compare(rem, a[1], ComparisonDirection::GE, false);
            rem = in.select(take, in.add(rem, nd), rem);
            HloInstruction* b = in.convert(take, in.u32());
            if (k) b = in.bin(HloOpcode::ShiftLeft, b, in.u(k));
            if (bit >= 32)
              quo.hi = in.bin(HloOpcode::Or, quo.hi, b);
            else
              quo.lo = in.bin(HloOpcode::Or, quo.lo, b);
          }
          return std::vector<Pair>{rem, quo};
        });
    r = state[0];
    q = state[1];
  }
  if (remainder) *remainder = r;
  return q;
}

Pair Rewriter::divide(Pair a, Pair b, bool isSigned) {
  if (!isSigned) return divideUnsigned(a, b, nullptr);
  // On the magnitudes (|INT64_MIN| = 2^63 as u64), the sign after, so
  // INT64_MIN / -1 wraps to INT64_MIN; x / 0 is -1.
  Pair q = divideUnsigned(magnitude(a), magnitude(b), nullptr);
  HloInstruction* neg = bin(HloOpcode::Xor, isNegative(a), isNegative(b));
  Pair allOnes{u(0xffffffffu), u(0xffffffffu)};
  return select(isZero(b), allOnes, select(neg, negate(q), q));
}

Pair Rewriter::remainder(Pair a, Pair b, bool isSigned) {
  // The dividend's sign; x % 0 = x falls out of the division.
  Pair r;
  if (!isSigned) {
    divideUnsigned(a, b, &r);
    return r;
  }
  divideUnsigned(magnitude(a), magnitude(b), &r);
  return select(isNegative(a), negate(r), r);
}

Pair Rewriter::power(Pair base, Pair e, bool isSigned) {
  // Square and multiply over the 64 exponent bits (wrapping), kPowerBits bits
  // per fusion (two pair products each); 1^y = x^0 = 1, and a negative s64
  // exponent gives 0, as the reference evaluator.
  constexpr int kPowerBits = 4;
  Pair result{u(1), u(0)}, b = base;
  for (int first = 0; first < 64; first += kPowerBits) {
    std::vector<Pair> state =
        inFusion({e, result, b}, "power", [&](Rewriter& in, std::vector<Pair> a) {
          Pair acc = a[1], sq = a[2];
          for (int bit = first; bit < first + kPowerBits; ++bit) {
            HloInstruction* w = bit < 32 ? a[0].lo : a[0].hi;
            HloInstruction* set =
                in.cmp(in.bin(HloOpcode::And, w, in.u(double(uint32_t(1) << (bit % 32)))), in.u(0),
                       ComparisonDirection::NE);
            acc = in.select(set, in.multiply(acc, sq), acc);
            if (bit < 63) sq = in.multiply(sq, sq);
          }
          return std::vector<Pair>{acc, sq};
        });
    result = state[0];
    b = state[1];
  }
  Pair one{u(1), u(0)}, zero{u(0), u(0)};
  if (isSigned) result = select(isNegative(e), zero, result);
  HloInstruction* baseOne = compare(base, one, ComparisonDirection::EQ, false);
  return select(bin(HloOpcode::Or, baseOne, isZero(e)), one, result);
}

Pair Rewriter::popcount(Pair a) {
  return {bin(HloOpcode::Add, un(HloOpcode::PopulationCount, a.lo),
              un(HloOpcode::PopulationCount, a.hi)),
          u(0)};
}

Pair Rewriter::countLeadingZeros(Pair a) {
  HloInstruction* hiZero = cmp(a.hi, u(0), ComparisonDirection::EQ);
  HloInstruction* low = bin(HloOpcode::Add, un(HloOpcode::CountLeadingZeros, a.lo), u(32));
  return {select(hiZero, low, un(HloOpcode::CountLeadingZeros, a.hi)), u(0)};
}

HloInstruction* Rewriter::transposed(HloInstruction* w, const std::vector<int64_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int64_t(i);
  if (identity) return w;
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(w->shape().dims.at(size_t(p)));
  HloInstruction* t = op(HloOpcode::Transpose, Shape::array(PrimitiveType::U32, dims), {w});
  t->attrs().dimensions = perm;
  return t;
}

// A dot of 64-bit integers as XLA's TPU back end does it: not on the MXU
// (bf16 / s8 only) but multiply-accumulate on the VPU. Both operands go
// (transposed to batch, free, contracting order) to the shape out dims x
// contracting dims, are multiplied word-wise and summed over the contracting dims.
bool Rewriter::dotPair(HloInstruction* inst, Pair* out) {
  const hlo::DotDimensionNumbers& dn = inst->attrs().dot;
  HloInstruction* lhs = inst->operand(0);
  HloInstruction* rhs = inst->operand(1);
  if (!lhs->shape().isArray() || !rhs->shape().isArray() ||
      !hlo::isIntegralType(lhs->shape().type) || !hlo::isIntegralType(rhs->shape().type))
    return false;
  auto order = [](const HloInstruction* v, const std::vector<int64_t>& batch,
                  const std::vector<int64_t>& contracting, std::vector<int64_t>* freeDims) {
    std::vector<int64_t> perm = batch;
    for (int64_t d = 0; d < v->shape().rank(); ++d)
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), d) == contracting.end())
        freeDims->push_back(d);
    perm.insert(perm.end(), freeDims->begin(), freeDims->end());
    perm.insert(perm.end(), contracting.begin(), contracting.end());
    return perm;
  };
  std::vector<int64_t> lf, rf;
  std::vector<int64_t> lperm = order(lhs, dn.lhsBatch, dn.lhsContracting, &lf);
  std::vector<int64_t> rperm = order(rhs, dn.rhsBatch, dn.rhsContracting, &rf);
  const std::vector<int64_t> outDims = dims_;
  const int64_t nb = int64_t(dn.lhsBatch.size()), nl = int64_t(lf.size());
  const int64_t nOut = nb + nl + int64_t(rf.size()), nc = int64_t(dn.lhsContracting.size());
  if (int64_t(outDims.size()) != nOut) return false;
  std::vector<int64_t> full = outDims;
  for (int64_t c : dn.lhsContracting) full.push_back(lhs->shape().dims.at(size_t(c)));
  auto words = [&](HloInstruction* v) {
    if (is64(v->shape())) return pairOf(v);
    dims_ = v->shape().dims;
    Pair p = fromNarrow(v);
    dims_ = outDims;
    return p;
  };
  auto spread = [&](Pair p, const std::vector<int64_t>& perm, std::vector<int64_t> at) {
    dims_ = full;
    auto one = [&](HloInstruction* w) {
      HloInstruction* b = op(HloOpcode::Broadcast, u32(), {transposed(w, perm)});
      b->attrs().dimensions = at;
      return b;
    };
    return Pair{one(p.lo), one(p.hi)};
  };
  std::vector<int64_t> lat, rat, reduced;
  for (int64_t i = 0; i < nb + nl; ++i) lat.push_back(i);
  for (int64_t i = 0; i < nb; ++i) rat.push_back(i);
  for (int64_t i = nb + nl; i < nOut; ++i) rat.push_back(i);
  for (int64_t i = nOut; i < nOut + nc; ++i) {
    lat.push_back(i);
    rat.push_back(i);
    reduced.push_back(i);
  }
  Pair a = words(lhs), b = words(rhs);
  Pair wa = spread(a, lperm, lat), wb = spread(b, rperm, rat);
  Pair product = multiply(wa, wb);
  if (reduced.empty()) {
    dims_ = outDims;
    *out = product;
    return true;
  }
  bool ok = sumPairs(product, reduced, outDims, out);
  dims_ = outDims;
  return ok;
}

// A reduce of 64-bit values by add, maximum or minimum, on the words.
//   add: sumPairs;
//   max: the high word's maximum (signed order for s64), then the maximum low
//     word (unsigned order) among the elements whose high word is that one;
//   min: the max of the complement (~x reverses both orders).
// The init value is combined once at the end.
bool Rewriter::reducePair(HloInstruction* inst, bool isSigned, Pair* out) {
  const HloComputation* f = inst->toApply();
  const HloInstruction* root = f ? f->root() : nullptr;
  if (inst->operandCount() != 2 || !root || root->operandCount() != 2 ||
      root->operand(0)->opcode() != HloOpcode::Parameter ||
      root->operand(1)->opcode() != HloOpcode::Parameter || root->operand(0) == root->operand(1))
    return false;
  const HloOpcode kind = root->opcode();
  if (kind != HloOpcode::Add && kind != HloOpcode::Maximum && kind != HloOpcode::Minimum)
    return false;
  HloInstruction* input = inst->operand(0);
  const std::vector<int64_t> outDims = dims_;
  Pair x = pairOf(input);
  Pair init = pairOf(inst->operand(1));
  dims_ = input->shape().dims;
  Pair r;
  if (kind == HloOpcode::Add) {
    if (!sumPairs(x, inst->dimensions(), outDims, &r)) {
      dims_ = outDims;
      return false;
    }
  } else {
    const bool isMin = kind == HloOpcode::Minimum;
    if (isMin) x = {un(HloOpcode::Not, x.lo), un(HloOpcode::Not, x.hi)};
    // Keys in signed order: the high word as s32 (biased for u64), the low
    // word biased. (For min, ~x of an s64 is still ordered as s64.)
    auto key = [&](HloInstruction* w, bool bias) {
      return convert(bias ? bin(HloOpcode::Xor, w, u(0x80000000u)) : w, s32());
    };
    HloInstruction* hk = key(x.hi, !isSigned);
    HloInstruction* lk = key(x.lo, true);
    const double lowest = -2147483648.0;
    dims_ = outDims;
    HloInstruction* mh = reduceWords(inst, hk, HloOpcode::Maximum, PrimitiveType::S32, lowest);
    dims_ = input->shape().dims;
    std::vector<int64_t> kept;
    std::vector<bool> isReduced(dims_.size(), false);
    for (int64_t d : inst->dimensions()) isReduced[size_t(d)] = true;
    for (size_t d = 0; d < dims_.size(); ++d)
      if (!isReduced[d]) kept.push_back(int64_t(d));
    HloInstruction* back = op(HloOpcode::Broadcast, s32(), {mh});
    back->attrs().dimensions = kept;
    HloInstruction* cand =
        select(cmp(hk, back, ComparisonDirection::EQ), lk, splat(PrimitiveType::S32, lowest));
    dims_ = outDims;
    HloInstruction* ml = reduceWords(inst, cand, HloOpcode::Maximum, PrimitiveType::S32, lowest);
    auto unkey = [&](HloInstruction* k, bool bias) {
      HloInstruction* w = convert(k, u32());
      return bias ? bin(HloOpcode::Xor, w, u(0x80000000u)) : w;
    };
    r = {unkey(ml, true), unkey(mh, !isSigned)};
    if (isMin) r = {un(HloOpcode::Not, r.lo), un(HloOpcode::Not, r.hi)};
  }
  // Combine the init value once: the identity changes nothing, anything else
  // takes part like one more element.
  auto spread = [&](HloInstruction* w) {
    if (dims_.empty()) return w;
    HloInstruction* b = op(HloOpcode::Broadcast, u32(), {w});
    b->attrs().dimensions = std::vector<int64_t>{};
    return b;
  };
  Pair i{spread(init.lo), spread(init.hi)};
  if (kind == HloOpcode::Add) {
    r = add(r, i);
  } else {
    auto d = kind == HloOpcode::Maximum ? ComparisonDirection::GT : ComparisonDirection::LT;
    r = select(compare(r, i, d, isSigned), r, i);
  }
  *out = r;
  return true;
}

Pair Rewriter::pairOf(HloInstruction* v) {
  auto it = pairs_.find(v);
  if (it != pairs_.end()) return it->second;
  std::vector<int64_t> saved = dims_;
  dims_ = v->shape().dims;
  Pair p;
  if (v->opcode() == HloOpcode::Constant && v->literal() && !v->literal()->elided) {
    p = splitConstant(v);
  } else {
    // The same bytes as u32[..., 2]; the words are the slices of the last dim.
    std::vector<int64_t> wide = dims_;
    wide.push_back(2);
    HloInstruction* words =
        op(HloOpcode::BitcastConvert, Shape::array(PrimitiveType::U32, wide), {v});
    auto word = [&](int64_t k) {
      std::vector<int64_t> one = dims_;
      one.push_back(1);
      HloInstruction* s = op(HloOpcode::Slice, Shape::array(PrimitiveType::U32, one), {words});
      std::vector<hlo::SliceDim> sl;
      for (int64_t d : dims_) sl.push_back({0, d, 1});
      sl.push_back({k, k + 1, 1});
      s->attrs().slice = sl;
      return op(HloOpcode::Reshape, u32(), {s});
    };
    p = {word(0), word(1)};
  }
  pairs_[v] = p;
  dims_ = saved;
  return p;
}

Pair Rewriter::splitConstant(HloInstruction* v) {
  const hlo::Literal& lit = *v->literal();
  hlo::Literal lo = hlo::Literal::zeros(u32()), hi = hlo::Literal::zeros(u32());
  for (int64_t i = 0; i < lit.size(); ++i) {
    uint64_t x = lit.getUnsigned(i);
    lo.setInt(i, int64_t(x & 0xffffffffu));
    hi.setInt(i, int64_t(x >> 32));
  }
  HloInstruction* l = op(HloOpcode::Constant, u32(), {});
  l->attrs().literal = lo;
  HloInstruction* h = op(HloOpcode::Constant, u32(), {});
  h->attrs().literal = hi;
  return {l, h};
}

HloInstruction* Rewriter::join(const Pair& p, const Shape& shape) {
  std::vector<int64_t> one = dims_, wide = dims_;
  one.push_back(1);
  wide.push_back(2);
  HloInstruction* lo = op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, one), {p.lo});
  HloInstruction* hi = op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, one), {p.hi});
  HloInstruction* words =
      op(HloOpcode::Concatenate, Shape::array(PrimitiveType::U32, wide), {lo, hi});
  words->attrs().dimensions = std::vector<int64_t>{int64_t(dims_.size())};
  return op(HloOpcode::BitcastConvert, Shape::array(shape.type, dims_), {words});
}

Pair Rewriter::add(Pair a, Pair b) {
  HloInstruction* lo = bin(HloOpcode::Add, a.lo, b.lo);
  HloInstruction* carry = convert(cmp(lo, a.lo, ComparisonDirection::LT), u32());
  return {lo, bin(HloOpcode::Add, bin(HloOpcode::Add, a.hi, b.hi), carry)};
}

Pair Rewriter::negate(Pair a) {
  // -x = ~x + 1: the high word takes the carry when the low word is 0.
  HloInstruction* lo = un(HloOpcode::Negate, a.lo);
  HloInstruction* borrow = convert(cmp(a.lo, u(0), ComparisonDirection::NE), u32());
  return {lo, bin(HloOpcode::Subtract, un(HloOpcode::Negate, a.hi), borrow)};
}

HloInstruction* Rewriter::mulHigh(HloInstruction* a, HloInstruction* b) {
  // The high word of a 32 x 32 bit product from its four 16-bit partial products.
  HloInstruction* mask = u(0xffff);
  HloInstruction* sixteen = u(16);
  auto low16 = [&](HloInstruction* x) { return bin(HloOpcode::And, x, mask); };
  auto high16 = [&](HloInstruction* x) { return bin(HloOpcode::ShiftRightLogical, x, sixteen); };
  HloInstruction *a0 = low16(a), *a1 = high16(a), *b0 = low16(b), *b1 = high16(b);
  HloInstruction* p00 = bin(HloOpcode::Multiply, a0, b0);
  HloInstruction* p01 = bin(HloOpcode::Multiply, a0, b1);
  HloInstruction* p10 = bin(HloOpcode::Multiply, a1, b0);
  HloInstruction* p11 = bin(HloOpcode::Multiply, a1, b1);
  HloInstruction* mid =
      bin(HloOpcode::Add, bin(HloOpcode::Add, high16(p00), low16(p01)), low16(p10));
  HloInstruction* hi = bin(HloOpcode::Add, p11, high16(p01));
  hi = bin(HloOpcode::Add, hi, high16(p10));
  return bin(HloOpcode::Add, hi, high16(mid));
}

Pair Rewriter::multiply(Pair a, Pair b) {
  HloInstruction* lo = bin(HloOpcode::Multiply, a.lo, b.lo);
  HloInstruction* hi = mulHigh(a.lo, b.lo);
  hi = bin(HloOpcode::Add, hi, bin(HloOpcode::Multiply, a.lo, b.hi));
  hi = bin(HloOpcode::Add, hi, bin(HloOpcode::Multiply, a.hi, b.lo));
  return {lo, hi};
}

HloInstruction* Rewriter::compare(Pair a, Pair b, ComparisonDirection d, bool isSigned) {
  using D = ComparisonDirection;
  HloInstruction* loEq = cmp(a.lo, b.lo, D::EQ);
  HloInstruction* hiEq = cmp(a.hi, b.hi, D::EQ);
  if (d == D::EQ) return bin(HloOpcode::And, loEq, hiEq);
  if (d == D::NE) return un(HloOpcode::Not, bin(HloOpcode::And, loEq, hiEq));
  // The high words decide (signed for s64), equal high words the low ones (unsigned).
  HloInstruction *ha = a.hi, *hb = b.hi;
  if (isSigned) {
    ha = convert(ha, s32());
    hb = convert(hb, s32());
  }
  D strict = (d == D::LT || d == D::LE) ? D::LT : D::GT;
  HloInstruction* hiDecides = cmp(ha, hb, strict);
  HloInstruction* loDecides = cmp(a.lo, b.lo, d);
  return bin(HloOpcode::Or, hiDecides, bin(HloOpcode::And, hiEq, loDecides));
}

Pair Rewriter::shift(Pair a, Pair n, HloOpcode kind) {
  // HLO's 32-bit shifts already give 0 (or the sign) for amounts of 32 or
  // more, so each word is the or of the parts that land in it.
  HloInstruction* s = n.lo;
  HloInstruction* thirtyTwo = u(32);
  HloInstruction* up = bin(HloOpcode::Subtract, thirtyTwo, s);    // 32 - s (wraps when s > 32)
  HloInstruction* down = bin(HloOpcode::Subtract, s, thirtyTwo);  // s - 32 (wraps when s < 32)
  HloInstruction* outOfRange = cmp(n.hi, u(0), ComparisonDirection::NE);
  auto shl = [&](HloInstruction* x, HloInstruction* k) { return bin(HloOpcode::ShiftLeft, x, k); };
  auto shr = [&](HloInstruction* x, HloInstruction* k) {
    return bin(HloOpcode::ShiftRightLogical, x, k);
  };
  auto orr = [&](HloInstruction* x, HloInstruction* y) { return bin(HloOpcode::Or, x, y); };
  Pair r;
  if (kind == HloOpcode::ShiftLeft) {
    r = {shl(a.lo, s), orr(orr(shl(a.hi, s), shr(a.lo, up)), shl(a.lo, down))};
    Pair zero{u(0), u(0)};
    return select(outOfRange, zero, r);
  }
  if (kind == HloOpcode::ShiftRightLogical) {
    r = {orr(orr(shr(a.lo, s), shl(a.hi, up)), shr(a.hi, down)), shr(a.hi, s)};
    Pair zero{u(0), u(0)};
    return select(outOfRange, zero, r);
  }
  // Arithmetic: on s32 views of the high word.
  auto sra = [&](HloInstruction* x, HloInstruction* k) {
    return convert(bin(HloOpcode::ShiftRightArithmetic, convert(x, s32()), convert(k, s32())),
                   u32());
  };
  HloInstruction* small = cmp(s, thirtyTwo, ComparisonDirection::LT);
  HloInstruction* lo = select(small, orr(shr(a.lo, s), shl(a.hi, up)), sra(a.hi, down));
  r = {lo, sra(a.hi, s)};
  HloInstruction* fill = sra(a.hi, u(31));
  return select(outOfRange, Pair{fill, fill}, r);
}

Pair Rewriter::fromNarrow(HloInstruction* x) {
  PrimitiveType t = x->shape().type;
  bool isSigned = t == PrimitiveType::S8 || t == PrimitiveType::S16 || t == PrimitiveType::S32;
  if (!isSigned) return {convert(x, u32()), u(0)};
  HloInstruction* v = t == PrimitiveType::S32 ? x : convert(x, s32());
  HloInstruction* sign =
      op(HloOpcode::ShiftRightArithmetic, s32(), {v, splat(PrimitiveType::S32, 31)});
  return {convert(v, u32()), convert(sign, u32())};
}

Pair Rewriter::fromFloat(HloInstruction* xIn, bool isSigned) {
  // Truncate toward zero, split |t| = hi 2^32 + lo (both exact in f32), then
  // negate the pair for a negative t; saturate out of range, NaN -> 0.
  auto f = [&](double v) { return splat(PrimitiveType::F32, v); };
  HloInstruction* x = xIn->shape().type == PrimitiveType::F32 ? xIn : convert(xIn, f32());
  HloInstruction* m = un(HloOpcode::Floor, un(HloOpcode::Abs, x));
  HloInstruction* hiF = un(HloOpcode::Floor, bin(HloOpcode::Multiply, m, f(0x1p-32)));
  HloInstruction* loF = bin(HloOpcode::Subtract, m, bin(HloOpcode::Multiply, hiF, f(0x1p32)));
  Pair mag{convert(loF, u32()), convert(hiF, u32())};
  HloInstruction* neg = cmp(x, f(0), ComparisonDirection::LT);
  HloInstruction* nan = cmp(x, x, ComparisonDirection::NE);
  Pair zero{u(0), u(0)};
  if (!isSigned) {
    Pair all{u(0xffffffffu), u(0xffffffffu)};
    Pair r = select(cmp(m, f(0x1p64), ComparisonDirection::GE), all, mag);
    return select(bin(HloOpcode::Or, neg, nan), zero, r);
  }
  Pair r = select(neg, negate(mag), mag);
  HloInstruction* big = cmp(m, f(0x1p63), ComparisonDirection::GE);
  Pair sat = select(neg, Pair{u(0), u(0x80000000u)}, Pair{u(0xffffffffu), u(0x7fffffffu)});
  return select(nan, zero, select(big, sat, r));
}

HloInstruction* Rewriter::toNarrow(Pair a, const Shape& to, bool isSigned) {
  Shape target = Shape::array(to.type, dims_);
  if (to.type == PrimitiveType::Pred)
    return cmp(bin(HloOpcode::Or, a.lo, a.hi), u(0), ComparisonDirection::NE);
  if (hlo::isFloatingType(to.type)) {
    // The magnitude hi 2^32 + lo in f32 (no cancellation: both parts are
    // non-negative; two roundings), the sign after.
    HloInstruction* neg = nullptr;
    Pair m = a;
    if (isSigned) {
      neg = cmp(convert(a.hi, s32()), splat(PrimitiveType::S32, 0), ComparisonDirection::LT);
      m = select(neg, negate(a), a);
    }
    HloInstruction* v =
        bin(HloOpcode::Add,
            bin(HloOpcode::Multiply, convert(m.hi, f32()), splat(PrimitiveType::F32, 0x1p32)),
            convert(m.lo, f32()));
    if (neg) v = select(neg, un(HloOpcode::Negate, v), v);
    return to.type == PrimitiveType::F32 ? v : convert(v, target);
  }
  // Integers of 32 bits or fewer: the low word, truncated (wraps as XLA's convert).
  return to.type == PrimitiveType::U32 ? a.lo : convert(a.lo, target);
}

bool Rewriter::computePair(HloInstruction* inst, Pair* out) {
  const PrimitiveType t = inst->shape().type;
  const bool isSigned = t == PrimitiveType::S64;
  auto P = [&](int64_t k) { return pairOf(inst->operand(k)); };
  switch (inst->opcode()) {
    case HloOpcode::Add:
      *out = add(P(0), P(1));
      return true;
    case HloOpcode::Subtract:
      *out = add(P(0), negate(P(1)));
      return true;
    case HloOpcode::Multiply:
      *out = multiply(P(0), P(1));
      return true;
    case HloOpcode::Divide:
      *out = divide(P(0), P(1), isSigned);
      return true;
    case HloOpcode::Remainder:
      *out = remainder(P(0), P(1), isSigned);
      return true;
    case HloOpcode::Power:
      *out = power(P(0), P(1), isSigned);
      return true;
    case HloOpcode::PopulationCount:
      *out = popcount(P(0));
      return true;
    case HloOpcode::CountLeadingZeros:
      *out = countLeadingZeros(P(0));
      return true;
    case HloOpcode::Dot:
      return dotPair(inst, out);
    case HloOpcode::Negate:
      *out = negate(P(0));
      return true;
    case HloOpcode::Abs: {
      Pair a = P(0);
      if (!isSigned) {
        *out = a;
        return true;
      }
      HloInstruction* neg =
          cmp(convert(a.hi, s32()), splat(PrimitiveType::S32, 0), ComparisonDirection::LT);
      *out = select(neg, negate(a), a);
      return true;
    }
    case HloOpcode::Sign: {
      Pair a = P(0);
      HloInstruction* nonzero = cmp(bin(HloOpcode::Or, a.lo, a.hi), u(0), ComparisonDirection::NE);
      Pair one{u(1), u(0)}, zero{u(0), u(0)};
      Pair r = select(nonzero, one, zero);
      if (isSigned) {
        HloInstruction* neg =
            cmp(convert(a.hi, s32()), splat(PrimitiveType::S32, 0), ComparisonDirection::LT);
        r = select(neg, Pair{u(0xffffffffu), u(0xffffffffu)}, r);
      }
      *out = r;
      return true;
    }
    case HloOpcode::And:
    case HloOpcode::Or:
    case HloOpcode::Xor: {
      Pair a = P(0), b = P(1);
      *out = {bin(inst->opcode(), a.lo, b.lo), bin(inst->opcode(), a.hi, b.hi)};
      return true;
    }
    case HloOpcode::Not: {
      Pair a = P(0);
      *out = {un(HloOpcode::Not, a.lo), un(HloOpcode::Not, a.hi)};
      return true;
    }
    case HloOpcode::ShiftLeft:
    case HloOpcode::ShiftRightLogical:
    case HloOpcode::ShiftRightArithmetic:
      *out = shift(P(0), P(1), inst->opcode());
      return true;
    case HloOpcode::Maximum:
    case HloOpcode::Minimum: {
      Pair a = P(0), b = P(1);
      auto d =
          inst->opcode() == HloOpcode::Maximum ? ComparisonDirection::GT : ComparisonDirection::LT;
      *out = select(compare(a, b, d, isSigned), a, b);
      return true;
    }
    case HloOpcode::Clamp: {
      // clamp(lo, x, hi) = min(max(x, lo), hi)
      Pair lo = P(0), x = P(1), hi = P(2);
      Pair r = select(compare(x, lo, ComparisonDirection::LT, isSigned), lo, x);
      *out = select(compare(r, hi, ComparisonDirection::GT, isSigned), hi, r);
      return true;
    }
    case HloOpcode::Select: {
      if (inst->operand(0)->shape().rank() != int64_t(dims_.size())) return false;
      *out = select(inst->operand(0), P(1), P(2));
      return true;
    }
    case HloOpcode::Broadcast:
    case HloOpcode::Reshape: {
      Pair a = P(0);
      HloInstruction* lo = op(inst->opcode(), u32(), {a.lo});
      HloInstruction* hi = op(inst->opcode(), u32(), {a.hi});
      if (inst->opcode() == HloOpcode::Broadcast) {
        lo->attrs().dimensions = inst->dimensions();
        hi->attrs().dimensions = inst->dimensions();
      }
      *out = {lo, hi};
      return true;
    }
    case HloOpcode::Convert: {
      HloInstruction* x = inst->operand(0);
      PrimitiveType from = x->shape().type;
      if (is64(from)) {
        *out = P(0);
      } else if (hlo::isFloatingType(from)) {
        if (from == PrimitiveType::F64) return false;
        *out = fromFloat(x, isSigned);
      } else {
        *out = fromNarrow(x);
      }
      return true;
    }
    case HloOpcode::Reduce:
      return reducePair(inst, isSigned, out);
    case HloOpcode::Iota: {
      // Indices below 2^32 (an array that large would not fit HBM): the low word.
      HloInstruction* lo = op(HloOpcode::Iota, u32(), {});
      lo->attrs() = inst->attrs();
      *out = {lo, u(0)};
      return true;
    }
    default:
      return false;
  }
}

bool Rewriter::rewrite(HloInstruction* inst) {
  base_ = inst->name();
  dims_ = inst->shape().isArray() ? inst->shape().dims : std::vector<int64_t>{};
  if (is64(inst->shape())) {
    Pair p;
    if (!computePair(inst, &p)) return false;
    HloInstruction* joined = join(p, inst->shape());
    inst->replaceAllUsesWith(joined);
    pairs_[joined] = p;
    return true;
  }
  // 64-bit operands, a narrower result: compares and converts.
  if (inst->operandCount() == 0 || !is64(inst->operand(0)->shape())) return false;
  const bool isSigned = inst->operand(0)->shape().type == PrimitiveType::S64;
  HloInstruction* r = nullptr;
  if (inst->opcode() == HloOpcode::Compare && inst->attrs().direction) {
    r = compare(pairOf(inst->operand(0)), pairOf(inst->operand(1)), *inst->attrs().direction,
                isSigned);
  } else if (inst->opcode() == HloOpcode::Convert && inst->shape().isArray() &&
             inst->shape().type != PrimitiveType::F64) {
    r = toNarrow(pairOf(inst->operand(0)), inst->shape(), isSigned);
  }
  if (!r) return false;
  inst->replaceAllUsesWith(r);
  return true;
}

class Int64ToPairsPass : public HloPass {
 public:
  std::string_view name() const override { return "int64-to-pairs"; }

  bool run(hlo::HloModule& module) override {
    // Reducers and other called scalar computations keep their types: the
    // pass rewrites the values of computations that run as programs.
    std::set<HloComputation*> applied;
    for (const auto& comp : module.computations())
      for (const auto& inst : comp->instructions())
        if (inst->opcode() != HloOpcode::While && inst->opcode() != HloOpcode::Conditional &&
            inst->opcode() != HloOpcode::Call)
          for (HloComputation* c : inst->calledComputations()) applied.insert(c);
    bool changed = false;
    std::vector<HloComputation*> comps;
    for (const auto& comp : module.computations())
      if (!applied.count(comp.get())) comps.push_back(comp.get());
    if (comps.empty()) return false;
    Reducers reducers(module, module.computations().front().get());
    for (HloComputation* comp : comps) {
      Rewriter rw(comp, &reducers);
      for (HloInstruction* inst : comp->postOrder()) changed |= rw.rewrite(inst);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<HloPass> createInt64ToPairsPass() { return std::make_unique<Int64ToPairsPass>(); }

}  // namespace tpusim::passes
