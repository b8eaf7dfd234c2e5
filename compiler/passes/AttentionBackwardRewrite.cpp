// attention-backward: the gradient of softmax attention as autodiff writes it
//
//   p   = softmax(mask(dot(q, k) * c))          the forward's probabilities (f32)
//   dP  = [convert f32](dot(dO, v))             contracting head_dim
//   dv  = dot([convert](p), dO)                 contracting the query positions
//   dS  = p * (dP - broadcast(reduce-sum(dP * p)))
//   dS  = [select(broadcast(causal), dS, 0)] [* broadcast(c2)] [convert]
//   dq  = dot(dS, k),  dk = dot(dS, q)          contracting keys / queries
//
// becomes one custom-call tpu.attention_backward(q, k, v, dO) -> (dq, dk, dv)
// (the library kernel, kernels/lib/AttentionBackward.h), which recomputes p
// from q and k and keeps p, dP and dS in VMEM: materialized, each [.., Sq, Sk]
// f32 array goes through HBM several times, and dS and p are transposed for
// the dk and dv dots. The forward is left alone; once its probabilities have
// no other users, `flash-attention` (after this pass) rewrites it too.
//
// What matches, exactly (anything else is left as it was):
//  - the forward's softmax as flash-attention matches it (scores dot at DEFAULT
//    precision with an f32 result, optional scalar scale and causal mask with
//    a fill <= -1e30, reduce-max / reduce-sum over the last dim), whatever
//    other users its parts have; one K/V head per query head (q and k of one rank);
//  - the backward above with batch dims first on every dot, DEFAULT precision,
//    dP in f32 (the dot's own result bf16 or f32: the kernel rounds dP as the
//    trace does), the mask on dS only if the forward has it (a forward mask
//    alone is kept: p is 0 there, so dS is too), c2 a finite non-zero scalar;
//    dq, dk and dv of one type (bf16 or f32);
//  - every backward intermediate used only inside the pattern;
//  - sizes the kernel takes: head_dim a multiple of 8 up to 128 or a multiple
//    of 128, keys a multiple of 128, queries a multiple of 8, at most
//    kAttentionBackwardMaxScores scores per head.
//
// Rounding: the kernel rounds where the trace does (p to bf16 for the dv dot,
// dP to its dot's type, dS to bf16 before the dq / dk dots); rowsum(dP * p) is
// rowsum(dP * e) / rowsum(e) there, so the row sums differ in order and by one
// rounding (docs/compiler.md, "The attention backward").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/AttentionPattern.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"
#include "kernels/lib/AttentionBackward.h"

namespace tpusim::passes {
namespace {

using namespace attention;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

struct Forward {
  HloInstruction *q = nullptr, *k = nullptr;
  double scale = 1;
  bool causal = false;
};

// p = softmax(mask(scale * dot(q, k))) over the last dim, as flash-attention's
// rule has it, without any condition on the users.
std::optional<Forward> matchProbabilities(const HloInstruction* p) {
  const Shape& sh = p->shape();
  const int64_t r = sh.rank(), nb = r - 2;
  if (!is(p, HloOpcode::Divide) || sh.type != PrimitiveType::F32 || r < 2) return std::nullopt;
  const HloInstruction* e = p->operand(0);
  const HloInstruction* sum = rowBroadcastOf(p->operand(1), sh);
  if (!is(e, HloOpcode::Exp) || !sum || !isRowReduce(sum, HloOpcode::Add, 0.0) ||
      sum->operand(0) != e)
    return std::nullopt;
  const HloInstruction* centered = e->operand(0);
  if (!is(centered, HloOpcode::Subtract)) return std::nullopt;
  const HloInstruction* x = centered->operand(0);
  const HloInstruction* mx = rowBroadcastOf(centered->operand(1), sh);
  if (!mx || !isRowReduce(mx, HloOpcode::Maximum, -std::numeric_limits<double>::infinity()) ||
      mx->operand(0) != x)
    return std::nullopt;
  Forward f;
  const HloInstruction* s = x;
  if (is(x, HloOpcode::Select)) {
    auto fill = causalSelectFill(x, r);
    if (!fill || !(*fill <= -1e30)) return std::nullopt;
    f.causal = true;
    s = x->operand(1);
  }
  const HloInstruction* raw = s;
  if (is(s, HloOpcode::Multiply)) {
    raw = nullptr;
    for (int side = 0; side < 2 && !raw; ++side) {
      auto c = splatValue(s->operand(1 - side));
      if (c && is(s->operand(1 - side), HloOpcode::Broadcast) &&
          is(s->operand(side), HloOpcode::Dot)) {
        if (*c == 0 || !std::isfinite(*c)) return std::nullopt;
        f.scale = *c;
        raw = s->operand(side);
      }
    }
    if (!raw) return std::nullopt;
  }
  if (raw->shape().type != PrimitiveType::F32 || !isBatchedDot(raw, nb, -1, nb + 1))
    return std::nullopt;
  f.q = const_cast<HloInstruction*>(raw->operand(0));
  f.k = const_cast<HloInstruction*>(raw->operand(1));
  if (f.q->shape().rank() != r || f.k->shape().rank() != r || !isMxuFloat(f.q->shape().type) ||
      f.q->shape().type != f.k->shape().type)
    return std::nullopt;
  return f;
}

// The only user of `i`, or null.
HloInstruction* soleUser(const HloInstruction* i) {
  return i->userCount() == 1 ? i->users()[0] : nullptr;
}

// a * b in either order: the other operand, or null.
HloInstruction* otherFactor(HloInstruction* mul, const HloInstruction* a) {
  if (!is(mul, HloOpcode::Multiply)) return nullptr;
  if (mul->operand(0) == a) return mul->operand(1);
  if (mul->operand(1) == a) return mul->operand(0);
  return nullptr;
}

struct Backward {
  Forward fwd;
  HloInstruction *v = nullptr, *dO = nullptr;
  HloInstruction *dq = nullptr, *dk = nullptr, *dv = nullptr;
  double dsScale = 1;
  PrimitiveType dpType = PrimitiveType::F32;
  std::vector<HloInstruction*> chain;  // removed after the rewrite, users first
};

std::optional<Backward> matchBackward(HloInstruction* p) {
  std::optional<Forward> fwd = matchProbabilities(p);
  if (!fwd) return std::nullopt;
  Backward m;
  m.fwd = *fwd;
  const Shape& sh = p->shape();
  const int64_t r = sh.rank(), nb = r - 2;
  // rowsum(dP * p) among p's users, then dS0 = p * (dP - broadcast(rowsum)).
  HloInstruction *mulRow = nullptr, *dP = nullptr, *rowsum = nullptr;
  for (HloInstruction* u : p->users()) {
    HloInstruction* other = otherFactor(u, p);
    HloInstruction* red = soleUser(u);
    if (other && other != p && other->shape().sameDims(sh) &&
        other->shape().type == PrimitiveType::F32 && red && isRowReduce(red, HloOpcode::Add, 0.0)) {
      mulRow = u;
      dP = other;
      rowsum = red;
      break;
    }
  }
  if (!mulRow) return std::nullopt;
  HloInstruction* bcast = soleUser(rowsum);
  HloInstruction* centered = bcast ? soleUser(bcast) : nullptr;
  if (!bcast || rowBroadcastOf(bcast, sh) != rowsum || !is(centered, HloOpcode::Subtract) ||
      centered->operand(0) != dP || centered->operand(1) != bcast)
    return std::nullopt;
  HloInstruction* dS0 = soleUser(centered);
  if (!dS0 || otherFactor(dS0, centered) != p) return std::nullopt;
  if (!usedOnlyBy(dP, {mulRow, centered})) return std::nullopt;
  m.chain = {dS0, centered, bcast, rowsum, mulRow};
  // The optional mask, scale and convert of dS.
  HloInstruction* cur = dS0;
  HloInstruction* next = soleUser(cur);
  if (next && is(next, HloOpcode::Select) && next->operand(1) == cur) {
    auto fill = causalSelectFill(next, r);
    if (!fill || *fill != 0 || !m.fwd.causal) return std::nullopt;
    cur = next;
    m.chain.insert(m.chain.begin(), cur);
    next = soleUser(cur);
  }
  if (next && is(next, HloOpcode::Multiply)) {
    HloInstruction* c = otherFactor(next, cur);
    auto value = c && is(c, HloOpcode::Broadcast) ? splatValue(c) : std::nullopt;
    if (!value || *value == 0 || !std::isfinite(*value)) return std::nullopt;
    m.dsScale = *value;
    cur = next;
    m.chain.insert(m.chain.begin(), cur);
    next = soleUser(cur);
  }
  if (next && is(next, HloOpcode::Convert) && isMxuFloat(next->shape().type)) {
    cur = next;
    m.chain.insert(m.chain.begin(), cur);
  }
  // dq = dot(dS, k) and dk = dot(dS, q): dS's only users.
  if (cur->userCount() != 2) return std::nullopt;
  for (HloInstruction* u : cur->users()) {
    if (u->operand(0) != cur) return std::nullopt;
    if (isBatchedDot(u, nb, r - 1, nb) && u->operand(1) == m.fwd.k && !m.dq)
      m.dq = u;
    else if (isBatchedDot(u, nb, nb, nb) && u->operand(1) == m.fwd.q && !m.dk)
      m.dk = u;
    else
      return std::nullopt;
  }
  // dP = [convert](dot(dO, v)).
  HloInstruction* dpDot = dP;
  if (is(dP, HloOpcode::Convert)) {
    dpDot = dP->operand(0);
    m.chain.push_back(dP);
    if (dpDot->userCount() != 1) return std::nullopt;
  }
  if (!isBatchedDot(dpDot, nb, -1, nb + 1) || !isMxuFloat(dpDot->shape().type)) return std::nullopt;
  m.dpType = dpDot->shape().type;
  m.chain.push_back(dpDot);
  m.dO = dpDot->operand(0);
  m.v = dpDot->operand(1);
  // dv = dot([convert](p), dO), contracting the queries.
  for (HloInstruction* u : p->users()) {
    std::vector<HloInstruction*> candidates{u};
    if (is(u, HloOpcode::Convert)) candidates = u->users();
    for (HloInstruction* d : candidates)
      if (isBatchedDot(d, nb, nb, nb) && d->operand(1) == m.dO &&
          (d->operand(0) == p || d->operand(0) == u))
        m.dv = d;
  }
  if (!m.dv) return std::nullopt;
  m.chain.insert(m.chain.begin(), {m.dq, m.dk, m.dv});
  // Shapes: q, dO [B..., Sq, D]; k, v [B..., Sk, D]; one result type.
  const Shape &qs = m.fwd.q->shape(), &ks = m.fwd.k->shape();
  const int64_t d = qs.dims.back(), sq = qs.dims[size_t(r - 2)], sk = ks.dims[size_t(r - 2)];
  if (m.v->shape().dims != ks.dims || m.dO->shape().dims != qs.dims || ks.dims.back() != d ||
      !isMxuFloat(m.v->shape().type) || !isMxuFloat(m.dO->shape().type))
    return std::nullopt;
  for (int64_t i = 0; i < nb; ++i)
    if (qs.dims[size_t(i)] != ks.dims[size_t(i)]) return std::nullopt;
  const PrimitiveType out = m.dq->shape().type;
  if (m.dk->shape().type != out || m.dv->shape().type != out || !isMxuFloat(out))
    return std::nullopt;
  if (!((d % 8 == 0 && d <= 128) || d % 128 == 0) || sk % 128 != 0 || sq % 8 != 0 ||
      sq * sk > kernels::lib::kAttentionBackwardMaxScores)
    return std::nullopt;
  return m;
}

HloInstruction* element(hlo::HloComputation* comp, HloInstruction* tuple, int64_t i,
                        const Shape& shape) {
  HloInstruction* g =
      addNew(comp, HloOpcode::GetTupleElement, tuple->name() + ".element", shape, {tuple});
  hlo::AttrValue index;
  index.kind = hlo::AttrValue::Kind::Int;
  index.i = i;
  g->setGeneric("index", index);
  g->attrs().metadata = tuple->attrs().metadata;
  return g;
}

bool rewrite(hlo::HloComputation* comp, HloInstruction* p) {
  std::optional<Backward> m = matchBackward(p);
  if (!m) return false;
  const std::string base = m->dq->name();
  // The projections' layout: q, k, v and dO each transpose(x, {0,2,1,3}) of a
  // bf16 x [B, S, H, D] (JAX's reshape after the projections, and the
  // gradient arriving from the o projection): the kernel reads every x in
  // place (its `heads` layout, head_dim a multiple of 128) and writes dq, dk
  // and dv as [B, S, H, D], transposed back here, which cancels the
  // transposes JAX writes before the projections' gradient dots (algsimp).
  // The seven transposes were HBM round trips (2.2 M cycles per layer of the
  // tiny training step on v6e).
  std::vector<HloInstruction*> ops{m->fwd.q, m->fwd.k, m->v, m->dO};
  const Shape& qs = m->fwd.q->shape();
  int64_t heads = 0;
  if (qs.rank() == 4 && qs.dims[3] % 128 == 0 &&
      std::all_of(ops.begin(), ops.end(), [](HloInstruction* x) { return headsMajorSource(x); })) {
    heads = qs.dims[1];
    for (HloInstruction*& x : ops) x = headsMajorSource(x);
  } else {
    ops = {asBf16(comp, m->fwd.q, base + ".q"), asBf16(comp, m->fwd.k, base + ".k"),
           asBf16(comp, m->v, base + ".v"), asBf16(comp, m->dO, base + ".do")};
  }
  // [B, H, S, D] -> [B, S, H, D] where the kernel writes x's layout.
  auto callShape = [&](const Shape& s) {
    return heads > 0 ? Shape::array(s.type, {s.dims[0], s.dims[2], s.dims[1], s.dims[3]}) : s;
  };
  const Shape shape = Shape::tuple(
      {callShape(m->dq->shape()), callShape(m->dk->shape()), callShape(m->dv->shape())});
  HloInstruction* call =
      addNew(comp, HloOpcode::CustomCall, base + ".attention_backward", shape, ops);
  call->attrs().customCallTarget = "tpu.attention_backward";
  std::string json = fmt::format(
      R"({{"causal": {}, "sm_scale": {}, "ds_scale": {}, "dp_dtype": "{}"{}}})", m->fwd.causal,
      m->fwd.scale, m->dsScale, m->dpType == PrimitiveType::BF16 ? "bf16" : "f32",
      heads > 0 ? fmt::format(
                      R"(, "heads": {}, "bh": {}, "seq_q": {}, "seq_k": {}, "head_dim": {})", heads,
                      qs.dims[0] * heads, qs.dims[2], m->fwd.k->shape().dims[2], qs.dims[3])
                : "");
  std::string escaped;
  for (char ch : json) escaped += ch == '"' ? std::string("\\\"") : std::string(1, ch);
  call->attrs().backendConfig = hlo::BackendConfig{hlo::BackendConfig::Kind::String, escaped};
  call->attrs().metadata = m->dq->attrs().metadata;
  HloInstruction* grads[] = {m->dq, m->dk, m->dv};
  for (int64_t i = 0; i < 3; ++i) {
    HloInstruction* g = grads[i];
    HloInstruction* result = element(comp, call, i, shape.tupleShapes[size_t(i)]);
    if (heads > 0) {
      result = addNew(comp, HloOpcode::Transpose, result->name() + ".heads", g->shape(), {result});
      result->attrs().dimensions = {0, 2, 1, 3};
      result->attrs().metadata = g->attrs().metadata;
    }
    g->replaceAllUsesWith(result);
  }
  for (HloInstruction* i : m->chain) comp->removeInstruction(i);
  return true;
}

class AttentionBackwardPass : public HloPass {
 public:
  std::string_view name() const override { return "attention-backward"; }
  bool run(hlo::HloModule& module) override {
    return rewriteEach(module, HloOpcode::Divide, rewrite);
  }
};

}  // namespace

std::unique_ptr<HloPass> createAttentionBackwardPass() {
  return std::make_unique<AttentionBackwardPass>();
}

}  // namespace tpusim::passes
