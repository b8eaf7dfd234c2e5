// rng-bit-generator-expander: rng-bit-generator as u32 arithmetic the VPU
// runs, the way XLA's RngBitGeneratorExpander expands it, and with the bits the
// reference evaluator computes (compiler/hlo/eval/RngBitGenerator.h: Philox4x32-10,
// rng_default read as Philox). For n output words, ceil(n/4) counters (the
// state's 128-bit counter + iota) go through the ten rounds side by side: each
// round is two 32 x 32 -> 64-bit products (the high word from 16-bit partial
// products, as int64-to-pairs does), xors and the key schedule's adds. The
// four words of each block are interleaved into the values; the new state is
// the key and the counter advanced by the number of blocks. An algorithm or
// type it does not expand (ThreeFry, 8/16-bit values) stays and is named by
// the kernel lowering.
#include <fmt/format.h>

#include <algorithm>

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

constexpr uint32_t kMulA = 0xD2511F53, kMulB = 0xCD9E8D57;
constexpr uint32_t kWeylA = 0x9E3779B9, kWeylB = 0xBB67AE85;

// u32 HLO of one shape (dims_) in one computation.
class Words {
 public:
  Words(HloComputation* comp, std::string base) : comp_(comp), base_(std::move(base)) {}
  std::vector<int64_t> dims;

  Shape u32() const { return Shape::array(PrimitiveType::U32, dims); }
  HloInstruction* op(HloOpcode code, const Shape& s, std::vector<HloInstruction*> operands) {
    return addNew(comp_, code, base_, s, std::move(operands));
  }
  HloInstruction* bin(HloOpcode code, HloInstruction* a, HloInstruction* b) {
    return op(code, a->shape(), {a, b});
  }
  HloInstruction* u(uint32_t v) {
    HloInstruction* c = op(HloOpcode::Constant, Shape::scalar(PrimitiveType::U32), {});
    c->attrs().literal = hlo::Literal::scalar(PrimitiveType::U32, double(v));
    return dims.empty() ? c : spread(c);
  }
  HloInstruction* spread(HloInstruction* scalar) {
    HloInstruction* b = op(HloOpcode::Broadcast, u32(), {scalar});
    b->attrs().dimensions = std::vector<int64_t>{};
    return b;
  }
  // 1 where a + b wrapped (sum < a), else 0.
  HloInstruction* carry(HloInstruction* sum, HloInstruction* a) {
    HloInstruction* c = op(HloOpcode::Compare, Shape::array(PrimitiveType::Pred, dims), {sum, a});
    c->attrs().direction = ComparisonDirection::LT;
    return op(HloOpcode::Convert, u32(), {c});
  }
  // The high word of a * k (k a constant) from 16-bit partial products.
  HloInstruction* mulHigh(HloInstruction* a, uint32_t k) {
    auto low16 = [&](HloInstruction* x) { return bin(HloOpcode::And, x, u(0xffff)); };
    auto high16 = [&](HloInstruction* x) { return bin(HloOpcode::ShiftRightLogical, x, u(16)); };
    HloInstruction *a0 = low16(a), *a1 = high16(a);
    HloInstruction *b0 = u(k & 0xffff), *b1 = u(k >> 16);
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
  // Element `index` of a rank-1 u32 array as a scalar.
  HloInstruction* element(HloInstruction* v, int64_t index) {
    HloInstruction* s = op(HloOpcode::Slice, Shape::array(PrimitiveType::U32, {1}), {v});
    s->attrs().slice = std::vector<hlo::SliceDim>{{index, index + 1, 1}};
    return op(HloOpcode::Reshape, Shape::scalar(PrimitiveType::U32), {s});
  }
  // Rank-1 arrays (or scalars) joined in order.
  HloInstruction* concat(const std::vector<HloInstruction*>& parts, int64_t dim,
                         const std::vector<int64_t>& outDims) {
    HloInstruction* c =
        op(HloOpcode::Concatenate, Shape::array(PrimitiveType::U32, outDims), parts);
    c->attrs().dimensions = std::vector<int64_t>{dim};
    return c;
  }

 private:
  HloComputation* comp_;
  std::string base_;
};

// Rounds [first, last) of Philox4x32 on the words x[0..3] with the key x[4..5]
// (already raised for round `first`) as one multi-output loop fusion: the
// words and the raised key come out. A few rounds per kernel keep the code
// generator's scalar registers (the splat constants) within the target's.
constexpr int kRoundsPerKernel = 2;

std::vector<HloInstruction*> roundsInFusion(HloComputation* comp, const std::string& base,
                                            const std::vector<HloInstruction*>& in, int first,
                                            int last) {
  hlo::HloModule& module = *comp->parent();
  auto fused = std::make_unique<HloComputation>(module.uniqueComputationName("fused_philox"));
  Words w(fused.get(), base);
  w.dims = in[0]->shape().dims;
  std::vector<HloInstruction*> v;
  for (size_t k = 0; k < in.size(); ++k) {
    HloInstruction* p = w.op(HloOpcode::Parameter, w.u32(), {});
    p->attrs().parameterNumber = int64_t(k);
    v.push_back(p);
  }
  for (int round = first; round < last; ++round) {
    if (round) {
      v[4] = w.bin(HloOpcode::Add, v[4], w.u(kWeylA));
      v[5] = w.bin(HloOpcode::Add, v[5], w.u(kWeylB));
    }
    HloInstruction* hiA = w.mulHigh(v[0], kMulA);
    HloInstruction* loA = w.bin(HloOpcode::Multiply, v[0], w.u(kMulA));
    HloInstruction* hiB = w.mulHigh(v[2], kMulB);
    HloInstruction* loB = w.bin(HloOpcode::Multiply, v[2], w.u(kMulB));
    HloInstruction* y0 = w.bin(HloOpcode::Xor, w.bin(HloOpcode::Xor, hiB, v[1]), v[4]);
    HloInstruction* y2 = w.bin(HloOpcode::Xor, w.bin(HloOpcode::Xor, hiA, v[3]), v[5]);
    v[0] = y0;
    v[1] = loB;
    v[2] = y2;
    v[3] = loA;
  }
  const Shape tuple = Shape::tuple(std::vector<Shape>(v.size(), w.u32()));
  fused->setRoot(w.op(HloOpcode::Tuple, tuple, v));
  HloComputation* called = module.addComputationBefore(std::move(fused), comp);
  HloInstruction* fusion = addNew(comp, HloOpcode::Fusion, base, tuple, in);
  fusion->attrs().calls.push_back(hlo::CalledComputations{"calls", {called}, false});
  hlo::AttrValue kind;
  kind.kind = hlo::AttrValue::Kind::Ident;
  kind.s = "kLoop";
  fusion->setGeneric("kind", kind);
  std::vector<HloInstruction*> out;
  for (size_t k = 0; k < v.size(); ++k) {
    HloInstruction* g = addNew(comp, HloOpcode::GetTupleElement, base, in[0]->shape(), {fusion});
    hlo::AttrValue index;
    index.kind = hlo::AttrValue::Kind::Int;
    index.i = int64_t(k);
    g->setGeneric("index", index);
    out.push_back(g);
  }
  return out;
}

bool expand(HloComputation* comp, HloInstruction* rng, std::string* why) {
  const Shape& shape = rng->shape();
  HloInstruction* state = rng->operand(0);
  const std::string algorithm = rng->identAttr("algorithm").value_or("rng_default");
  if (algorithm != "rng_default" && algorithm != "rng_philox") {
    *why = algorithm;
    return false;
  }
  if (!shape.isTuple() || shape.tupleShapes.size() != 2 || !state->shape().isArray() ||
      state->shape().type != PrimitiveType::U64 || state->shape().rank() != 1)
    return false;
  const int64_t stateSize = state->shape().dims[0];
  const Shape& values = shape.tupleShapes[1];
  const PrimitiveType vt = values.type;
  const bool wide = vt == PrimitiveType::U64 || vt == PrimitiveType::S64;
  if ((stateSize != 2 && stateSize != 3) || !values.isArray() ||
      !(wide || vt == PrimitiveType::U32 || vt == PrimitiveType::S32))
    return false;
  int64_t count = 1;
  for (int64_t d : values.dims) count *= d;
  const int64_t words = count * (wide ? 2 : 1);
  const int64_t blocks = (words + 3) / 4;
  if (blocks == 0 || blocks > (int64_t(1) << 31)) return false;

  Words w(comp, rng->name());
  // The state's words: key (k0, k1), counter (c0 .. c3), low words first.
  HloInstruction* sw =
      w.op(HloOpcode::BitcastConvert, Shape::array(PrimitiveType::U32, {stateSize, 2}), {state});
  HloInstruction* flat =
      w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, {stateSize * 2}), {sw});
  HloInstruction* k0 = w.element(flat, 0);
  HloInstruction* k1 = w.element(flat, 1);
  HloInstruction* c0 = w.element(flat, 2);
  HloInstruction* c1 = w.element(flat, 3);
  HloInstruction* c2 = stateSize == 3 ? w.element(flat, 4) : k0;
  HloInstruction* c3 = stateSize == 3 ? w.element(flat, 5) : k1;

  // Block i's counter: the 128-bit counter + i.
  w.dims = {blocks};
  HloInstruction* i = w.op(HloOpcode::Iota, w.u32(), {});
  hlo::AttrValue zero;
  zero.kind = hlo::AttrValue::Kind::Int;
  zero.i = 0;
  i->setGeneric("iota_dimension", zero);
  HloInstruction *C0 = w.spread(c0), *C1 = w.spread(c1), *C2 = w.spread(c2), *C3 = w.spread(c3);
  HloInstruction* x0 = w.bin(HloOpcode::Add, C0, i);
  HloInstruction* x1 = w.bin(HloOpcode::Add, C1, w.carry(x0, C0));
  HloInstruction* x2 = w.bin(HloOpcode::Add, C2, w.carry(x1, C1));
  HloInstruction* x3 = w.bin(HloOpcode::Add, C3, w.carry(x2, C2));
  HloInstruction* key0 = w.spread(k0);
  HloInstruction* key1 = w.spread(k1);
  std::vector<HloInstruction*> x = {x0, x1, x2, x3, key0, key1};
  for (int first = 0; first < 10; first += kRoundsPerKernel)
    x = roundsInFusion(comp, rng->name(), x, first, std::min(10, first + kRoundsPerKernel));
  // Element 4b + c is word c of block b.
  std::vector<HloInstruction*> columns;
  for (int c = 0; c < 4; ++c) {
    HloInstruction* word = x[size_t(c)];
    columns.push_back(
        w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, {blocks, 1}), {word}));
  }
  HloInstruction* grid = w.concat(columns, 1, {blocks, 4});
  HloInstruction* all =
      w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, {blocks * 4}), {grid});
  HloInstruction* used = all;
  if (words != blocks * 4) {
    used = w.op(HloOpcode::Slice, Shape::array(PrimitiveType::U32, {words}), {all});
    used->attrs().slice = std::vector<hlo::SliceDim>{{0, words, 1}};
  }
  HloInstruction* value = nullptr;
  if (wide) {
    std::vector<int64_t> pairDims = values.dims;
    pairDims.push_back(2);
    HloInstruction* pairs =
        w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, pairDims), {used});
    value = w.op(HloOpcode::BitcastConvert, Shape::array(vt, values.dims), {pairs});
  } else {
    value = w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, values.dims), {used});
    if (vt != PrimitiveType::U32)
      value = w.op(HloOpcode::BitcastConvert, Shape::array(vt, values.dims), {value});
  }

  // The new state: the key, the counter + blocks (its low 64 bits only for u64[2]).
  w.dims = {};
  HloInstruction* n0 = w.bin(HloOpcode::Add, c0, w.u(uint32_t(blocks)));
  HloInstruction* n1 = w.bin(HloOpcode::Add, c1, w.carry(n0, c0));
  std::vector<HloInstruction*> stateWords = {k0, k1, n0, n1};
  if (stateSize == 3) {
    HloInstruction* n2 = w.bin(HloOpcode::Add, c2, w.carry(n1, c1));
    stateWords.push_back(n2);
    stateWords.push_back(w.bin(HloOpcode::Add, c3, w.carry(n2, c2)));
  }
  for (HloInstruction*& s : stateWords)
    s = w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, {1}), {s});
  HloInstruction* joined = w.concat(stateWords, 0, {stateSize * 2});
  HloInstruction* grid2 =
      w.op(HloOpcode::Reshape, Shape::array(PrimitiveType::U32, {stateSize, 2}), {joined});
  HloInstruction* newState = w.op(HloOpcode::BitcastConvert, state->shape(), {grid2});
  HloInstruction* tuple = w.op(HloOpcode::Tuple, shape, {newState, value});
  rng->replaceAllUsesWith(tuple);
  comp->removeInstruction(rng);
  return true;
}

class RngBitGeneratorExpanderPass : public HloPass {
 public:
  std::string_view name() const override { return "rng-bit-generator-expander"; }

  // Expanding adds the rounds' fused computations to the module: rewriteEach snapshots them.
  bool run(hlo::HloModule& module) override {
    return rewriteEach(module, HloOpcode::RngBitGenerator,
                       [](HloComputation* comp, HloInstruction* rng) {
                         std::string why;
                         return expand(comp, rng, &why);
                       });
  }
};

}  // namespace

std::unique_ptr<HloPass> createRngBitGeneratorExpanderPass() {
  return std::make_unique<RngBitGeneratorExpanderPass>();
}

}  // namespace tpusim::passes
