// flash-attention: the materialized attention JAX emits
//
//   s = dot(q, k)                      batch dims first, contracting head_dim (last of both)
//   s = s * broadcast(c)               optional scalar scale (absent: c = 1)
//   s = select(broadcast(causal), s, broadcast(m))   optional causal mask
//   e = exp(s - broadcast(reduce-max(s)))
//   p = e / broadcast(reduce-sum(e))
//   o = dot(convert(p), v)             the convert to v's type is optional
//
// becomes one custom-call tpu.flash_attention(q, k, v) (the library kernel,
// kernels/lib/FlashAttention.h, lowered by LibraryCallLowering) whose online
// softmax never writes the [seq_q, seq_k] scores to HBM.
//
// What matches, exactly (anything else is left as it was):
//  - q [B..., G..., Sq, D], k and v [B..., Sk, D] with the same batch dims B
//    (all leading, in order, on both dots); G are free dims of q between the
//    batch and Sq: grouped-query attention, where G query heads share one K/V
//    head (the kernel reads K/V head h / prod(G)). Both dots DEFAULT precision
//    (one bf16 MXU pass, so f32 q, k, v are rounded to bf16 as the MXU would);
//    the scores dot produces f32; head_dim as the kernel supports it; at least
//    128 keys and at least head_dim queries (smaller scores are cheaper
//    materialized: short rows, decode).
//  - the scale: a multiply by a broadcast scalar constant (either operand),
//    non-zero and finite. A scale folded into q upstream stays there (c = 1).
//  - the mask: select(broadcast(pred[Sq, Sk] -> the scores' last two dims),
//    scores, broadcast(m)) with the predicate row >= col built from two s32
//    iotas (iota over [Sq, Sk] along dim 0 / 1, or a broadcast 1-D iota),
//    compare GE (or LE with the operands swapped), and m a constant <= -1e30
//    or -inf: exp(m - max) is exactly 0 for any visible row max below 1e29,
//    as the kernel's masked scores are. Other masks (padding/length masks,
//    sliding windows, additive masks, masks from parameters) and dropout do not
//    match: the kernel has no input for them.
//  - the softmax in f32 over the last dim: reduce-max with init -inf and
//    reduce-sum with init 0 of add/maximum regions, each broadcast back along
//    dims {0..r-2}; subtract, exponential, divide.
//  - every intermediate used only inside the pattern (else the scores would
//    be materialized anyway for the other user).
//
// The projections' layout: when the whole-row kernel is chosen and q, k, v
// are transpose(x, {0,2,1,3}) of bf16 x [B, S, H, D] (head_dim a multiple of
// 128), the call reads the x's ("heads": H) and returns [B, S, H, D],
// transposed back here (algsimp cancels it against JAX's transpose before the
// o projection): no transpose goes through HBM.
//
// Rounding: the kernel computes the same scores (bf16 operands, f32
// accumulation), rounds p to bf16 unnormalized and divides by the row sum at
// the end, where the materialized form divides first and then rounds. Both
// round each weight once to bf16, so they differ by about 2^-9 of the output,
// within --check's tolerances (docs/compiler.md, "Attention as flash attention").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "compiler/hlo/DotPrecision.h"
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

constexpr int64_t kMinKeys = 128;

struct Match {
  HloInstruction *q = nullptr, *k = nullptr, *v = nullptr;
  double scale = 1;
  bool causal = false;
  int64_t groups = 1;
  std::vector<HloInstruction*> chain;  // the replaced instructions, outputs first
};

// Matches the pattern ending in `out` (the p.v dot).
std::optional<Match> matchAttention(HloInstruction* out) {
  Match m;
  if (!is(out, HloOpcode::Dot) || !isMxuFloat(out->shape().type)) return std::nullopt;
  HloInstruction* pv = out->operand(0);
  m.v = out->operand(1);
  const int64_t rv = m.v->shape().rank(), nb = rv - 2;
  if (nb < 0 || !isMxuFloat(m.v->shape().type) || !isBatchedDot(out, nb, -1, nb))
    return std::nullopt;
  m.chain.push_back(out);
  HloInstruction* p = pv;
  if (is(pv, HloOpcode::Convert)) {
    if (pv->userCount() != 1) return std::nullopt;
    m.chain.push_back(pv);
    p = pv->operand(0);
  }
  // The softmax, in f32 over the scores' last dim.
  const Shape& sh = p->shape();
  const int64_t r = sh.rank();
  if (sh.type != PrimitiveType::F32 || r < nb + 2 || !is(p, HloOpcode::Divide) ||
      p->userCount() != 1)
    return std::nullopt;
  HloInstruction* e = p->operand(0);
  const HloInstruction* sum = rowBroadcastOf(p->operand(1), sh);
  if (!is(e, HloOpcode::Exp) || !sum || sum->operand(0) != e ||
      !isRowReduce(sum, HloOpcode::Add, 0.0) || !usedOnlyBy(e, {p, sum}) ||
      p->operand(1)->userCount() != 1 || sum->userCount() != 1)
    return std::nullopt;
  HloInstruction* centered = e->operand(0);
  if (!is(centered, HloOpcode::Subtract) || centered->userCount() != 1) return std::nullopt;
  HloInstruction* x = centered->operand(0);
  const HloInstruction* mx = rowBroadcastOf(centered->operand(1), sh);
  if (!mx || mx->operand(0) != x ||
      !isRowReduce(mx, HloOpcode::Maximum, -std::numeric_limits<double>::infinity()) ||
      !usedOnlyBy(x, {centered, mx}) || centered->operand(1)->userCount() != 1 ||
      mx->userCount() != 1)
    return std::nullopt;
  for (HloInstruction* i : {p, p->operand(1), const_cast<HloInstruction*>(sum), e, centered,
                            centered->operand(1), const_cast<HloInstruction*>(mx)})
    m.chain.push_back(i);
  // The causal mask.
  HloInstruction* s = x;
  if (is(x, HloOpcode::Select)) {
    const HloInstruction* pred = x->operand(0);
    auto fill = splatValue(x->operand(2));
    if (!is(pred, HloOpcode::Broadcast) ||
        pred->dimensions() != std::vector<int64_t>{r - 2, r - 1} ||
        !isCausalPredicate(pred->operand(0)) || !fill || !(*fill <= -1e30))
      return std::nullopt;
    m.causal = true;
    m.chain.push_back(x);
    s = x->operand(1);
    if (s->userCount() != 1) return std::nullopt;
  }
  // The scale.
  HloInstruction* raw = s;
  if (is(s, HloOpcode::Multiply)) {
    for (int side = 0; side < 2; ++side) {
      auto c = splatValue(s->operand(1 - side));
      if (c && is(s->operand(1 - side), HloOpcode::Broadcast) &&
          is(s->operand(side), HloOpcode::Dot)) {
        if (*c == 0 || !std::isfinite(*c)) return std::nullopt;
        m.scale = *c;
        raw = s->operand(side);
        m.chain.push_back(s);
        break;
      }
    }
    if (raw == s) return std::nullopt;
  }
  // The scores dot: q [B..., G..., Sq, D] x k [B..., Sk, D] -> f32 [B..., G..., Sq, Sk].
  if (raw->shape().type != PrimitiveType::F32 || (raw != x && raw->userCount() != 1) ||
      !isBatchedDot(raw, nb, -1, nb + 1))
    return std::nullopt;
  m.q = raw->operand(0);
  m.k = raw->operand(1);
  const Shape &qs = m.q->shape(), &ks = m.k->shape(), &vs = m.v->shape();
  if (qs.rank() != r || ks.rank() != rv || !isMxuFloat(qs.type) || !isMxuFloat(ks.type) ||
      qs.type != ks.type)
    return std::nullopt;
  const int64_t d = qs.dims.back(), sq = qs.dims[size_t(r - 2)], sk = ks.dims[size_t(rv - 2)];
  if (ks.dims.back() != d || vs.dims.back() != d || vs.dims[size_t(rv - 2)] != sk ||
      sh.dims[size_t(r - 2)] != sq || sh.dims[size_t(r - 1)] != sk)
    return std::nullopt;
  for (int64_t i = 0; i < nb; ++i)
    if (qs.dims[size_t(i)] != ks.dims[size_t(i)] || ks.dims[size_t(i)] != vs.dims[size_t(i)])
      return std::nullopt;
  for (int64_t i = nb; i < r - 2; ++i) m.groups *= qs.dims[size_t(i)];
  // The kernel's head_dim: a multiple of 8 up to 128, or a multiple of 128.
  if (!((d % 8 == 0 && d <= 128) || d % 128 == 0)) return std::nullopt;
  // Rows of fewer than 128 keys fill part of a vreg's lanes; such scores are small
  // enough that the kernel's per-head grid steps cost more than the materialized
  // form (the micro prefill, 8 keys: +8.8% / +14.6% cycles on v5e / v6e).
  if (sk < kMinKeys) return std::nullopt;
  // Fewer query rows than head_dim (decode): the f32 scores are smaller than K and V,
  // which both forms read, so keeping them out of HBM saves little, and the decode
  // path's dots read the caches in place (32-head decode over 512 keys: 25,241
  // cycles materialized, 71,647 through the kernel on v5e).
  if (sq < d) return std::nullopt;
  m.chain.push_back(raw);
  return m;
}

constexpr int64_t kBlock = 512;

// Replaces the pattern ending in `out`; the instructions it removed are added to `removed`.
bool rewrite(hlo::HloComputation* comp, HloInstruction* out, std::set<HloInstruction*>& removed) {
  std::optional<Match> m = matchAttention(out);
  if (!m) return false;
  const std::string base = out->name();
  // One K/V head per query head and one head's scores small enough for VMEM:
  // the whole-row kernel (kernels/lib/AttentionBackward.h), which needs no
  // online rescaling and runs several heads per grid step (v6e, 8 causal
  // heads of 256 x 256 x 128: 15,575 cycles against flash's 25,124; v5e
  // 15,808 against 18,269).
  const Shape &qs = m->q->shape(), &ks = m->k->shape();
  const int64_t sq = qs.dims[qs.dims.size() - 2], sk = ks.dims[ks.dims.size() - 2];
  const bool wholeRows = m->groups == 1 && sk % 128 == 0 && sq % 8 == 0 &&
                         sq * sk <= kernels::lib::kAttentionBackwardMaxScores;
  // The projections' layout: q, k and v each transpose(x, {0,2,1,3}) of a bf16
  // x [B, S, H, D] (what JAX writes after the projections' reshape): the
  // whole-row kernel reads x in place (its `heads` layout, head_dim a
  // multiple of 128) and writes [B, S, H, D], transposed back here, which
  // cancels the transpose JAX writes before the o projection (algsimp). The
  // three transposes and the one after were HBM round trips (~9.5k cycles of
  // the tiny prefill's 116k per layer on v5e).
  auto headsMajor = headsMajorSource;
  const Shape& os = out->shape();
  int64_t heads = 0;
  std::vector<HloInstruction*> ops;
  if (wholeRows && os.rank() == 4 && os.dims[3] % 128 == 0 && headsMajor(m->q) &&
      headsMajor(m->k) && headsMajor(m->v)) {
    heads = os.dims[1];
    ops = {headsMajor(m->q), headsMajor(m->k), headsMajor(m->v)};
  } else {
    ops = {asBf16(comp, m->q, base + ".q"), asBf16(comp, m->k, base + ".k"),
           asBf16(comp, m->v, base + ".v")};
  }
  HloInstruction* call = addNew(
      comp, HloOpcode::CustomCall, base + (wholeRows ? ".attention" : ".flash"),
      Shape::array(os.type,
                   heads > 0 ? std::vector<int64_t>{os.dims[0], os.dims[2], os.dims[1], os.dims[3]}
                             : os.dims),
      ops);
  call->attrs().customCallTarget = wholeRows ? "tpu.attention_forward" : "tpu.flash_attention";
  // Blocks of 512 x 512 (the kernel shrinks them to shorter sequences): the per-step
  // online-softmax overhead is paid per block, and on v5e the causal 2048 x 2048 head_dim
  // 128 head takes 234.7k cycles with 128 x 128 blocks, 116.3k with 256, 83.6k with 512 and
  // 111.2k with 1024 x 512 (docs/performance.md).
  std::string json =
      wholeRows && heads > 0
          ? fmt::format(
                R"({{"causal": {}, "sm_scale": {}, "heads": {}, "bh": {}, "seq_q": {}, "seq_k": {}, "head_dim": {}}})",
                m->causal, m->scale, heads, os.dims[0] * heads, sq, sk, os.dims[3])
      : wholeRows
          ? fmt::format(R"({{"causal": {}, "sm_scale": {}}})", m->causal, m->scale)
          : fmt::format(R"({{"causal": {}, "sm_scale": {}{}, "block_q": {}, "block_k": {}}})",
                        m->causal, m->scale,
                        m->groups > 1 ? fmt::format(R"(, "groups": {})", m->groups) : "", kBlock,
                        kBlock);
  std::string escaped;
  for (char ch : json) escaped += ch == '"' ? std::string("\\\"") : std::string(1, ch);
  call->attrs().backendConfig = hlo::BackendConfig{hlo::BackendConfig::Kind::String, escaped};
  call->attrs().metadata = out->attrs().metadata;
  HloInstruction* result = call;
  if (heads > 0) {
    result = addNew(comp, HloOpcode::Transpose, base + ".heads", os, {call});
    result->attrs().dimensions = {0, 2, 1, 3};
    result->attrs().metadata = out->attrs().metadata;
  }
  out->replaceAllUsesWith(result);
  // The pattern is dead now (every intermediate had its users inside it); so may be
  // the mask's and scale's inputs, which dce removes.
  for (HloInstruction* i : m->chain)
    if (comp->removeInstruction(i)) removed.insert(i);
  return true;
}

class FlashAttentionPass : public HloPass {
 public:
  std::string_view name() const override { return "flash-attention"; }
  bool run(hlo::HloModule& module) override {
    bool changed = false;
    for (const auto& comp : module.computations()) {
      std::vector<HloInstruction*> dots;
      for (const auto& inst : comp->instructions())
        if (inst->opcode() == HloOpcode::Dot) dots.push_back(inst.get());
      // A rewrite removes the scores dot, which may sit later in the list.
      std::set<HloInstruction*> removed;
      for (HloInstruction* dot : dots)
        if (!removed.count(dot)) changed |= rewrite(comp.get(), dot, removed);
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<HloPass> createFlashAttentionPass() {
  return std::make_unique<FlashAttentionPass>();
}

}  // namespace tpusim::passes
