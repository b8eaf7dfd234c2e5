#include "kernels/lib/AttentionBackward.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "kernels/lib/FlashAttention.h"

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {

// Slices, named apart from the kernel's dS scratch `ds`.
Slice ds_(Scalar start, int64_t size) { return dsl::ds(start, size); }

// fn(r0) for every slab of 8 rows of `rows` (a multiple of 8): 8 slabs per
// iteration of a counted loop, so each iteration is one basic block whose
// independent slabs the scheduler interleaves (a store of all rows at once is a
// loop whose iterations each wait out the whole latency chain).
//
// straight: every slab in the current basic block, no loop, for short
// load-store work (the identity): it then shares its block with the
// dots around it, and the scheduler fits it into the slots their MXU streams
// leave (v6e, 64 causal heads of 256 x 256 x 128: the backward 248.0k ->
// 230.3k cycles, the forward 103.4k -> 99.2k). Not for the softmax slabs:
// straight, their XLU-bound chains crowd out the dots' issue (248k -> 328k).
//
// first: the slabs start at row `first` (a multiple of 8; rows counted from it).
void forSlabs(int64_t rows, const std::function<void(Scalar r0)>& fn, bool straight = false,
              int64_t first = 0) {
  if (straight) {
    for (int64_t r0 = 0; r0 < rows; r0 += 8) fn(Scalar(first + r0));
    return;
  }
  constexpr int64_t kGroup = 64;
  const int64_t groups = rows / kGroup;
  auto group = [&](Scalar base) {
    for (int64_t j = 0; j < kGroup; j += 8) fn(base + j);
  };
  if (groups == 1) group(first);
  if (groups > 1) fori_loop(0, groups, [&](Scalar i) { group(i * kGroup + first); });
  for (int64_t r0 = groups * kGroup; r0 < rows; r0 += 8) fn(Scalar(first + r0));
}

// With several heads per step the next dot on an MXU is four whole dots (a
// thousand instructions) later in program order: the default lookahead (1024)
// started it only once the one before had drained. 64 causal heads of 256 x
// 256 x 128, 8 per step, lookahead 0 / 2048 / 4096 / 6144: backward v6e
// 194.7k / 161.2k / 145.2k / 142.0k cycles, forward 98.8k / 80.0k / 78.9k /
// 78.9k; v5e backward 248.7k / 238.9k / 239.1k / 238.8k. A longer window
// makes the register allocator spill scalars, and how many is erratic: in the
// training step's pipeline the backward took 13.2k / 17.1k / 11.0k bundles per
// step at 2048 / 4096 / 6144. With two heads per step (v4's VMEM) it does not
// pay: forward 181.5k -> 244.1k at 4096.
int64_t scheduleLookahead(const AttentionBackwardParams& prm,
                          int64_t wide = kAttentionScheduleLookahead) {
  if (prm.scheduleLookahead >= 0) return prm.scheduleLookahead;
  return prm.headsPerStep >= 4 ? wide : 0;
}

void checkSizes(const char* kind, int64_t bh, int64_t sq, int64_t sk, int64_t d,
                const AttentionBackwardParams& prm) {
  if (bh < 1 || sq < 1 || sk < 1)
    throw Error(fmt::format("error: {} needs positive sizes, not bh={} seq_q={} seq_k={}", kind, bh,
                            sq, sk));
  if (!((d % 8 == 0 && d <= 128) || d % 128 == 0))
    throw Error(
        fmt::format("error: {} head_dim {} is not supported (a multiple of 8 up to 128, or "
                    "a multiple of 128)",
                    kind, d));
  if (sk % 128 != 0 || sq % 8 != 0)
    throw Error(fmt::format(
        "error: {} needs seq_k a multiple of 128 and seq_q a multiple of 8, not {} and {}", kind,
        sk, sq));
  if (sq * sk > kAttentionBackwardMaxScores)
    throw Error(fmt::format("error: {} holds one head's {} x {} scores in VMEM; at most {} scores",
                            kind, sq, sk, kAttentionBackwardMaxScores));
  for (DType t : {prm.outType, prm.dpType})
    if (t != BF16 && t != F32)
      throw Error(
          fmt::format("error: {} dtypes must be bf16 or f32, not {}", kind, isa::dtypeName(t)));
  // -1 picks the lookahead by heads per step; any other negative is a typo,
  // not a request for the default.
  if (prm.scheduleLookahead < -1)
    throw Error(fmt::format("error: {} schedule_lookahead {} must be -1 (automatic) or >= 0", kind,
                            prm.scheduleLookahead));
  if (prm.headsPerStep < 1 || bh % prm.headsPerStep != 0)
    throw Error(
        fmt::format("error: {} heads per step {} must divide bh {}", kind, prm.headsPerStep, bh));
}

// The projections' layout (`heads` > 0): whole heads of 128-lane columns, in
// steps that stay within one batch entry.
void checkSeqMajor(const char* kind, int64_t bh, int64_t d, const AttentionBackwardParams& prm) {
  const int64_t nh = prm.heads, hs = prm.headsPerStep;
  if (nh <= 0) return;
  if (d % 128 != 0)
    throw Error(fmt::format("error: {} with heads={} needs head_dim a multiple of 128, not {}",
                            kind, nh, d));
  if (nh % hs != 0 || bh % nh != 0)
    throw Error(fmt::format(
        "error: {} with heads={} needs heads dividing bh {} and heads_per_step {} dividing heads",
        kind, nh, bh, hs));
}

// The softmax of one slab of 8 score rows (all `cols` keys, in registers):
// x = the scaled raw scores, masked where key c0 + lane is after query r0 +
// sublane (`diag` = lane - sublane; null: no mask), e = exp(x - rowmax(x)),
// inv = 1 / rowsum(e); P = e * inv, the division as the VPU does it.
struct SlabSoftmax {
  std::vector<Array> e;  // per 128-key window
  Array inv;
};
SlabSoftmax slabSoftmax(const Ref& s, int64_t row0, Scalar r0, int64_t cols, double scale,
                        const Array* diag) {
  std::vector<Array> x;
  Array folded, esum;
  for (int64_t c0 = 0; c0 < cols; c0 += 128) {
    Array raw = s.load(ds_(r0 + row0, 8), ds_(c0, 128)) * scale;
    if (diag)
      raw = where(*diag <= splat(r0 - c0, 1, 1), raw,
                  full(1, 1, double(std::numeric_limits<float>::lowest())));
    x.push_back(in_vregs(raw));
    folded = folded.valid() ? maximum(folded, x.back()) : x.back();
  }
  const Array rowMax = max_vregs(folded);
  SlabSoftmax out;
  for (const Array& xw : x) {
    out.e.push_back(in_vregs(exp(xw - rowMax)));
    esum = esum.valid() ? esum + out.e.back() : out.e.back();
  }
  out.inv = in_vregs(full(1, 1, 1.0) / sum_vregs(esum));
  return out;
}

// The transposed problem: scores S^T [seq_k, seq_q] with keys in rows and
// queries in lanes, so each query's softmax statistics are column reductions:
// row tiles folded element-wise on the VPU, then one sublane tree per column
// window (3 XLU rotates), instead of three lane reductions (16 cycles each on
// the XLU) per 8 query rows.
//
// How a row tile of 8 keys from r0 meets a causal window of w queries from c0:
// key r0 + sublane is visible from query c0 + lane iff sublane - lane <= c0 - r0.
enum class TileMask { None, Partial, Whole };
TileMask tileMask(bool causal, int64_t r0, int64_t c0, int64_t w) {
  if (!causal || c0 - r0 >= 7) return TileMask::None;
  return c0 - r0 < -(w - 1) ? TileMask::Whole : TileMask::Partial;
}

// The softmax over the keys of one column window (queries c0 .. c0 + w) of
// S^T, x the scaled, masked scores: e = exp(x - colmax(x)) overwrites S^T's
// row tiles in VMEM (a window's 32 tiles held in registers spilled), inv = 1 /
// colsum(e) in every sublane. active[t]: row tile t is not masked whole (those
// keep their raw scores; their P and dS are 0). `fold` gets each e tile for
// more column sums of the same pass. The folds run over four partial
// accumulators (independent chains), combined in a fixed order.
struct ColSoftmax {
  std::vector<bool> active;
  Array inv;
};
class Fold {
 public:
  explicit Fold(bool isMax) : isMax_(isMax) {}
  void add(const Array& t) {
    if (acc_.size() < 4) {
      acc_.push_back(t);
    } else {
      Array& a = acc_[n_ % 4];
      a = in_vregs(isMax_ ? maximum(a, t) : a + t);
    }
    ++n_;
  }
  // The partial accumulators combined pairwise: (0 + 1) + (2 + 3).
  Array result() const {
    std::vector<Array> acc = acc_;
    while (acc.size() > 1) {
      std::vector<Array> next;
      for (size_t i = 0; i + 1 < acc.size(); i += 2)
        next.push_back(isMax_ ? maximum(acc[i], acc[i + 1]) : acc[i] + acc[i + 1]);
      if (acc.size() % 2) next.push_back(acc.back());
      acc = next;
    }
    return in_vregs(acc.at(0));
  }

 private:
  bool isMax_;
  size_t n_ = 0;
  std::vector<Array> acc_;
};
// The column max of one window (the first pass): `active` as in ColSoftmax.
struct ColMax {
  std::vector<bool> active;
  Array scaleV, colMax;
};
// x: the scaled, masked scores of row tile t (rows r0 - c0 .. + 8 of the
// diagonal block's bias where the tile is partly masked).
Array colScores(const Ref& sT, int64_t row0, size_t t, int64_t c0, int64_t w, const Array& scaleV,
                const Ref* bias) {
  const int64_t r0 = int64_t(t) * 8;
  Array raw = sT.load(ds_(row0 + r0, 8), ds_(c0, w)) * scaleV;
  if (tileMask(bias != nullptr, r0, c0, w) == TileMask::Partial)
    raw = raw + bias->load(ds_(r0 - c0, 8), ds_(0, w));
  return in_vregs(raw);
}
ColMax colMaxPass(const Ref& sT, int64_t row0, int64_t rows, int64_t c0, int64_t w, double scale,
                  const Ref* bias) {
  ColMax out;
  const bool causal = bias != nullptr;
  // Constants in registers once per window, not an immediate per tile.
  const Array scaleV = out.scaleV = in_vregs(full(8, w, scale));
  const size_t n = size_t(rows / 8);
  out.active.resize(n);
  Fold mx(true);
  for (size_t t = 0; t < n; ++t)
    if ((out.active[t] = tileMask(causal, int64_t(t) * 8, c0, w) != TileMask::Whole))
      mx.add(colScores(sT, row0, t, c0, w, scaleV, bias));
  out.colMax = in_vregs(broadcast_to(max(mx.result(), 0), 8, w));
  return out;
}
ColSoftmax colSoftmaxFrom(const ColMax& m, const Ref& sT, int64_t row0, int64_t c0, int64_t w,
                          double scale, const Ref* bias,
                          const std::function<void(size_t t, const Array& e)>& fold) {
  ColSoftmax out;
  out.active = m.active;
  // Staged (the max passes of several windows first), a scale register per pass.
  const Array scaleV = m.scaleV.valid() ? m.scaleV : in_vregs(full(8, w, scale));
  Fold es(false);
  for (size_t t = 0; t < out.active.size(); ++t) {
    if (!out.active[t]) continue;
    const Array e = in_vregs(exp(colScores(sT, row0, t, c0, w, scaleV, bias) - m.colMax));
    sT.store(ds_(row0 + int64_t(t) * 8, 8), ds_(c0, w), e);
    es.add(e);
    if (fold) fold(t, e);
  }
  out.inv = in_vregs(full(1, 1, 1.0) / broadcast_to(sum(es.result(), 0), 8, w));
  return out;
}
// The identity [n, n] in bf16 (n a multiple of 8), straight: `diag` is lane -
// sublane over one tile.
void makeIdentity(const Ref& eye, int64_t n, const Array& diag) {
  forSlabs(
      n,
      [&](Scalar r0) {
        for (int64_t c0 = 0; c0 < n; c0 += 128) {
          const int64_t w = std::min<int64_t>(128, n - c0);
          const Array dg = w == 128 ? diag : iota(8, w, 1) - iota(8, w, 0);
          eye.store(
              ds_(r0, 8), ds_(c0, w),
              where(dg == splat(r0 - c0, 1, 1), full(1, 1, 1.0), full(1, 1, 0.0)).astype(BF16));
        }
      },
      true);
}

// bias[i][l] (f32 [128, 128]): 0 where key i of a diagonal 128 x 128 block is
// visible from its query l (i <= l), else the lowest float.
void makeCausalBias(const Ref& bias, const Array& diag) {
  forSlabs(
      128,
      [&](Scalar r0) {
        bias.store(ds_(r0, 8), ds_(0, 128),
                   where(diag >= splat(r0, 1, 1), full(1, 1, 0.0),
                         full(1, 1, double(std::numeric_limits<float>::lowest()))));
      },
      true);
}

}  // namespace

std::vector<ShapeDtype> attentionBackwardInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                                int64_t headDim, int64_t heads) {
  if (heads > 0)
    return {{{bh / heads, seqQ, heads * headDim}, BF16, "q"},
            {{bh / heads, seqK, heads * headDim}, BF16, "k"},
            {{bh / heads, seqK, heads * headDim}, BF16, "v"},
            {{bh / heads, seqQ, heads * headDim}, BF16, "do"}};
  return {{{bh, seqQ, headDim}, BF16, "q"},
          {{bh, seqK, headDim}, BF16, "k"},
          {{bh, seqK, headDim}, BF16, "v"},
          {{bh, seqQ, headDim}, BF16, "do"}};
}

int64_t attentionBackwardVmemPerHead(int64_t sq, int64_t sk, int64_t d) {
  // Six [seq, seq] scratch arrays and the seven blocks double-buffered;
  // every element counted as a 32-bit word.
  return 4 * (6 * sq * sk + 2 * (3 * sq + 4 * sk) * d);
}

PallasCall attentionBackwardCall(int64_t bh, int64_t sq, int64_t sk, int64_t d,
                                 const AttentionBackwardParams& prm) {
  checkSizes("attention backward", bh, sq, sk, d, prm);
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));
  const double dsScale = prm.dsScale != 0 ? prm.dsScale : scale;
  const bool causal = prm.causal;

  // Heads per grid step: each phase of one head (a dot, the softmax slabs, a
  // cast) waits for the phase before it; with several heads the phases
  // alternate, and one head's work fills the other's waits (v6e, 8 causal
  // heads of 256 x 256 x 128: 6.35k cycles per head with one, 4.85k with two,
  // 4.3k with four; 64 heads: 4.17k with four, 3.87k with eight).
  const int64_t hs = prm.headsPerStep, nh = prm.heads;
  const bool seqMajor = nh > 0;
  checkSeqMajor("attention backward", bh, d, prm);
  CallConfig c;
  c.name = fmt::format("attention_backward{}_{}x{}x{}x{}{}", causal ? "_causal" : "", bh, sq, sk, d,
                       seqMajor ? fmt::format("_sh{}", nh) : "");
  c.grid = {bh / hs};
  if (seqMajor) {
    // Step g: batch g / (heads / hs), column block g % (heads / hs) of hs heads.
    const int64_t perBatch = nh / hs;
    c.out_shapes = {{{bh / nh, sq, nh * d}, prm.outType, "dq"},
                    {{bh / nh, sk, nh * d}, prm.outType, "dk"},
                    {{bh / nh, sk, nh * d}, prm.outType, "dv"}};
    auto map = [=](const GridIndex& g) {
      return std::vector<Scalar>{g[0] / perBatch, 0, g[0] - (g[0] / perBatch) * perBatch};
    };
    c.in_specs = {BlockSpec({1, sq, hs * d}, map), BlockSpec({1, sk, hs * d}, map),
                  BlockSpec({1, sk, hs * d}, map), BlockSpec({1, sq, hs * d}, map)};
    c.out_specs = {BlockSpec({1, sq, hs * d}, map), BlockSpec({1, sk, hs * d}, map),
                   BlockSpec({1, sk, hs * d}, map)};
  } else {
    c.out_shapes = {{{bh, sq, d}, prm.outType, "dq"},
                    {{bh, sk, d}, prm.outType, "dk"},
                    {{bh, sk, d}, prm.outType, "dv"}};
    auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0, 0}; };
    c.in_specs = {BlockSpec({hs, sq, d}, map), BlockSpec({hs, sk, d}, map),
                  BlockSpec({hs, sk, d}, map), BlockSpec({hs, sq, d}, map)};
    c.out_specs = {BlockSpec({hs, sq, d}, map), BlockSpec({hs, sk, d}, map),
                   BlockSpec({hs, sk, d}, map)};
  }
  // Per head, in the transposed form (keys in rows): S^T and dP^T (f32, as the
  // MXU leaves them), P^T and dS^T [seq_k, seq_q] (bf16, for the MXU: the dv
  // and dk dots' LHS as they are), and dS [seq_q, seq_k] = I dS^T^T (bf16,
  // rounded as the MXU's results are popped, as are dq, dk and dv). Then the
  // identity [seq_q, seq_q] dS is made with.
  // Paired heads (pairHeads) share S^T and dP^T arrays of 2 seq_k rows, the
  // pair's one dot each; head 2i + 1's rows start at seq_k.
  const int64_t pair = prm.pairHeads ? 2 : 1;
  if (pair == 2 && (!seqMajor || hs % 2 != 0))
    throw Error(
        "error: attention backward pairs heads only in the projections' layout with an "
        "even heads_per_step");
  // Per head its scratch's first index among the kernel's refs (7: after the
  // blocks); a pair's S^T and dP^T come with its first head.
  std::vector<size_t> firstScratch;
  for (int64_t h = 0; h < hs; ++h) {
    firstScratch.push_back(7 + c.scratch.size());
    if (h % pair == 0)
      for (int i = 0; i < 2; ++i) c.scratch.push_back(VMEM({pair * sk, sq}, F32));
    for (const ScratchSpec& sp : {VMEM({sk, sq}, BF16), VMEM({sk, sq}, BF16), VMEM({sq, sk}, BF16)})
      c.scratch.push_back(sp);
  }
  const size_t lastScratch = 7 + c.scratch.size();
  c.scratch.push_back(VMEM({sq, sq}, BF16));
  c.scratch.push_back(VMEM({128, 128}, F32));  // the causal bias of a diagonal block
  c.compiler_params.dimension_semantics = {PARALLEL};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;
  c.compiler_params.schedule_lookahead =
      scheduleLookahead(prm, kAttentionBackwardScheduleLookahead);

  auto body = [=](const std::vector<Ref>& r) {
    // Seq-major: every head of the step is a column window of one block (col >= 0).
    struct Head {
      Ref q, k, v, dO, dq, dk, dv;
      Ref sT, dpT, pT, dsT, ds;
      int64_t col = -1, dim = 0;
      int64_t sRow = 0;  // the head's first row in sT and dpT (paired: seq_k for the second)
      Array load(const Ref& x, int64_t rows, int64_t heads = 1) const {
        return col < 0 ? x.load() : x.load(ds_(0, rows), ds_(col, heads * dim));
      }
    };
    std::vector<Head> heads;
    for (int64_t h = 0; h < hs; ++h) {
      const size_t g = firstScratch[size_t(h - h % pair)], b = firstScratch[size_t(h)];
      const size_t own = h % pair == 0 ? b + 2 : b;
      const Scalar at = seqMajor ? Scalar(0) : Scalar(h);
      heads.push_back({r[0].at(at), r[1].at(at), r[2].at(at), r[3].at(at), r[4].at(at), r[5].at(at),
                       r[6].at(at), r[g], r[g + 1], r[own], r[own + 1], r[own + 2],
                       seqMajor ? h * d : -1, d, (h % pair) * sk});
    }
    Ref eye = r[lastScratch];
    Ref bias = r[lastScratch + 1];
    auto each = [&](const std::function<void(const Head&)>& fn) {
      for (const Head& h : heads) fn(h);
    };
    // S^T and dP^T; paired, one dot of the two heads' rows each (the first
    // head's columns of k / v against its q / dO columns, then the second's).
    DotOptions scores;
    scores.transpose_rhs = true;
    scores.lhs_diagonal_blocks = pair;
    for (size_t h = 0; h < heads.size(); h += size_t(pair)) {
      const Head& x = heads[h];
      x.sT.store(dot(x.load(x.k, sk, pair), x.load(x.q, sq, pair), scores));
      x.dpT.store(dot(x.load(x.v, sk, pair), x.load(x.dO, sq, pair), scores));
    }
    // The MXU takes no transposed LHS: dS is I dS^T^T (exact: one product per
    // output, bf16 in and out). Made per step (while the first dots run): with
    // parallel grid semantics no step is known to run first on its core.
    const Array diag = in_vregs(iota(8, 128, 1) - iota(8, 128, 0));
    makeIdentity(eye, sq, diag);
    if (causal) makeCausalBias(bias, diag);
    // Per column window of up to 128 queries, in registers: the forward's P =
    // e / l, e = exp(x - colmax(x)), l = colsum(e), x the scaled, masked
    // scores; then dS = P * (dP - colsum(dP * P)), masked and scaled, with
    // colsum(dP * P) taken as colsum(dP * e) / l. Only P^T and dS^T in bf16 go
    // to VMEM; row tiles masked whole are zeros, with no math. Straight code:
    // the column folds are short VPU chains, so one head's softmax fills the
    // slots the other heads' dots leave.
    auto softmax = [&](const std::vector<const Head*>& group) {
      const Array zero = in_vregs(full(8, 128, 0.0).astype(BF16));
      const Ref* biasRef = causal ? &bias : nullptr;
      struct Window {
        const Head* h;
        int64_t c0, w;
      };
      std::vector<Window> windows;
      for (const Head* h : group)
        for (int64_t c0 = 0; c0 < sq; c0 += 128)
          windows.push_back({h, c0, std::min<int64_t>(128, sq - c0)});
      const bool staged = group.size() > 1;
      std::vector<ColMax> maxes;
      if (staged)
        for (const Window& x : windows)
          maxes.push_back(colMaxPass(x.h->sT, x.h->sRow, sk, x.c0, x.w, scale, biasRef)),
              maxes.back().scaleV = Array();
      for (size_t wi = 0; wi < windows.size(); ++wi) {
        const Head& h = *windows[wi].h;
        const int64_t c0 = windows[wi].c0, w = windows[wi].w;
        // dP is loaded in both passes (loads are cheap; live tiles are not).
        auto dP = [&](size_t t) {
          Array raw = h.dpT.load(ds_(h.sRow + int64_t(t) * 8, 8), ds_(c0, w));
          return in_vregs(prm.dpType == F32 ? raw : raw.astype(prm.dpType).astype(F32));
        };
        Fold prod(false);
        const ColMax mx = staged ? maxes[wi] : colMaxPass(h.sT, h.sRow, sk, c0, w, scale, biasRef);
        const ColSoftmax sm =
            colSoftmaxFrom(mx, h.sT, h.sRow, c0, w, scale, biasRef,
                           [&](size_t t, const Array& e) { prod.add(dP(t) * e); });
        const Array colSum = in_vregs(broadcast_to(sum(prod.result(), 0), 8, w) * sm.inv);
        const Array dsScaleV = in_vregs(full(8, w, dsScale));
        for (size_t t = 0; t < sm.active.size(); ++t) {
          const int64_t r0 = int64_t(t) * 8;
          if (!sm.active[t]) {
            const Array z = w == 128 ? zero : full(8, w, 0.0).astype(BF16);
            h.pT.store(ds_(r0, 8), ds_(c0, w), z);
            h.dsT.store(ds_(r0, 8), ds_(c0, w), z);
            continue;
          }
          const Array p = in_vregs(h.sT.load(ds_(h.sRow + r0, 8), ds_(c0, w)) * sm.inv);
          h.pT.store(ds_(r0, 8), ds_(c0, w), p.astype(BF16));
          // Masked: p is 0 (e = exp(lowest - max)), so dS is too.
          h.dsT.store(ds_(r0, 8), ds_(c0, w), (p * (dP(t) - colSum) * dsScaleV).astype(BF16));
        }
      }
    };
    // dv = P^T dO, dk = dS^T q, dq = dS k; the dots of a head right after its
    // softmax, so the scheduler overlaps them with the next head's.
    const bool f32Out = prm.outType == F32;
    // An output dot: straight to the output (its column window), rounded as popped.
    auto store = [&](const Head& h, const Ref& out, int64_t rows, const Array& value) {
      const Array v = f32Out ? value : value.astype(BF16);
      if (h.col < 0)
        out.store(v);
      else
        out.store(ds_(0, rows), ds_(h.col, d), v);
    };
    const size_t group = size_t(std::max<int64_t>(1, prm.softmaxHeads));
    for (size_t h0 = 0; h0 < heads.size(); h0 += group)
      fori_loop(0, 1, [&](Scalar) {
        std::vector<const Head*> members;
        for (size_t h = h0; h < std::min(heads.size(), h0 + group); ++h)
          members.push_back(&heads[h]);
        softmax(members);
      });
    each([&](const Head& h) {
      h.ds.store(dot(eye.load(), h.dsT.load(), {false, true}).astype(BF16));
      store(h, h.dv, sk, dot(h.pT.load(), h.load(h.dO, sq)));
      store(h, h.dk, sk, dot(h.dsT.load(), h.load(h.q, sq)));
    });
    each([&](const Head& h) { store(h, h.dq, sq, dot(h.ds.load(), h.load(h.k, sk))); });
  };
  return pallas_call(body, c);
}

PallasCall attentionForwardCall(int64_t bh, int64_t sq, int64_t sk, int64_t d,
                                const AttentionBackwardParams& prm) {
  checkSizes("attention forward", bh, sq, sk, d, prm);
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));
  const bool causal = prm.causal;
  const int64_t hs = prm.headsPerStep, nh = prm.heads;
  const bool seqMajor = nh > 0;
  checkSeqMajor("attention forward", bh, d, prm);
  CallConfig c;
  c.name = fmt::format("attention_forward{}_{}x{}x{}x{}{}", causal ? "_causal" : "", bh, sq, sk, d,
                       seqMajor ? fmt::format("_sh{}", nh) : "");
  c.grid = {bh / hs};
  if (seqMajor) {
    // Step g: batch g / (heads / hs), column block g % (heads / hs) of hs heads.
    const int64_t perBatch = nh / hs;
    c.out_shapes = {{{bh / nh, sq, nh * d}, prm.outType, "out"}};
    auto map = [=](const GridIndex& g) {
      return std::vector<Scalar>{g[0] / perBatch, 0, g[0] - (g[0] / perBatch) * perBatch};
    };
    c.in_specs = {BlockSpec({1, sq, hs * d}, map), BlockSpec({1, sk, hs * d}, map),
                  BlockSpec({1, sk, hs * d}, map)};
    c.out_specs = {BlockSpec({1, sq, hs * d}, map)};
  } else {
    c.out_shapes = {{{bh, sq, d}, prm.outType, "out"}};
    auto map = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0, 0}; };
    c.in_specs = {BlockSpec({hs, sq, d}, map), BlockSpec({hs, sk, d}, map),
                  BlockSpec({hs, sk, d}, map)};
    c.out_specs = {BlockSpec({hs, sq, d}, map)};
  }
  // Per head: the scores (f32) and P (bf16, for the MXU); paired heads
  // (pairHeads) share scores of 2 seq_q rows, the pair's one dot, with the first head.
  const int64_t pair = prm.pairHeads ? 2 : 1;
  if (pair == 2 && (!seqMajor || hs % 2 != 0))
    throw Error(
        "error: attention forward pairs heads only in the projections' layout with an "
        "even heads_per_step");
  std::vector<size_t> firstScratch;
  for (int64_t h = 0; h < hs; ++h) {
    firstScratch.push_back(4 + c.scratch.size());
    if (h % pair == 0) c.scratch.push_back(VMEM({pair * sq, sk}, F32));
    c.scratch.push_back(VMEM({sq, sk}, BF16));
  }
  c.compiler_params.dimension_semantics = {PARALLEL};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;
  c.compiler_params.schedule_lookahead = scheduleLookahead(prm);
  auto body = [=](const std::vector<Ref>& r) {
    // Seq-major: every head of the step is a column window of one block.
    struct Head {
      Ref q, k, v, o, s, pb;
      int64_t col = 0;
      int64_t sRow = 0;  // the head's first row in s (paired: seq_q for the second)
      Array load(const Ref& x, int64_t rows, int64_t d) const {
        return col < 0 ? x.load() : x.load(ds_(0, rows), ds_(col, d));
      }
    };
    std::vector<Head> heads;
    for (int64_t h = 0; h < hs; ++h) {
      const size_t g = firstScratch[size_t(h - h % pair)], b = firstScratch[size_t(h)];
      const Scalar at = seqMajor ? Scalar(0) : Scalar(h);
      heads.push_back({r[0].at(at), r[1].at(at), r[2].at(at), r[3].at(at), r[g],
                       r[h % pair == 0 ? b + 1 : b], seqMajor ? h * d : -1, (h % pair) * sq});
    }
    // Causal: query rows in bands of 128, each band's softmax over the key
    // windows up to its last row only. A window after it is masked in every
    // row of the band, so its P is exactly 0 (exp of the mask value minus a
    // real row max: every row sees key 0) and is stored as zeros, and leaving
    // its lowest() scores out of the row max and its zeros out of the row sum
    // changes no bit. At 256 x 256 a quarter of the slabs' windows.
    const int64_t band = causal ? 128 : sq;
    auto softmax = [&](const Head& h, const Array& diag, bool straight) {
      for (int64_t b0 = 0; b0 < sq; b0 += band) {
        const int64_t b1 = std::min(sq, b0 + band);
        const int64_t cols = causal ? std::min(sk, (b1 + 127) / 128 * 128) : sk;
        forSlabs(
            b1 - b0,
            [&](Scalar r0) {
              const SlabSoftmax sm =
                  slabSoftmax(h.s, h.sRow, r0, cols, scale, causal ? &diag : nullptr);
              for (size_t w = 0; w < sm.e.size(); ++w)
                h.pb.store(ds_(r0, 8), ds_(int64_t(w) * 128, 128), (sm.e[w] * sm.inv).astype(BF16));
              for (int64_t c0 = cols; c0 < sk; c0 += 128)
                h.pb.store(ds_(r0, 8), ds_(c0, 128), zeros(8, 128, BF16));
            },
            straight, b0);
      }
    };
    DotOptions scores;
    scores.transpose_rhs = true;
    scores.lhs_diagonal_blocks = pair;
    for (size_t i = 0; i < heads.size(); i += size_t(pair)) {
      const Head& h = heads[i];
      h.s.store(dot(h.load(h.q, sq, pair * d), h.load(h.k, sk, pair * d), scores));
    }
    // hideSoftmax: the slabs straight in one block of their own, as work the
    // MXUs hide. The list scheduler takes such work near program order (its
    // own window), so the slabs' chains interleave without spilling (straight
    // but not marked, every slab's loads started at once: 153.4k cycles) and
    // the XLU runs at its floor. Not in the dots' block: alone that was
    // shorter still (64 causal heads, v6e: 58,080 cycles against 64,014), but
    // in the training step the whole step in one block spilled scalars (the
    // next kernel's prefetch: 13.7k bundles a step against 7.0k).
    if (prm.hideSoftmax && prm.oneBlock) {
      OverlapWithMxu hidden;
      const Array diag = in_vregs(iota(8, 128, 1) - iota(8, 128, 0));
      for (const Head& h : heads) softmax(h, diag, true);
    } else if (prm.hideSoftmax) {
      fori_loop(0, 1, [&](Scalar) {
        OverlapWithMxu hidden;
        const Array diag = in_vregs(iota(8, 128, 1) - iota(8, 128, 0));
        for (const Head& h : heads) softmax(h, diag, true);
      });
    } else {
      const Array diag = in_vregs(iota(8, 128, 1) - iota(8, 128, 0));
      for (const Head& h : heads) softmax(h, diag, false);
    }
    // The output rounded as the MXU's results are popped (bf16 out).
    for (const Head& h : heads) {
      Array o = dot(h.pb.load(), h.load(h.v, sk, d));
      if (prm.outType != F32) o = o.astype(BF16);
      if (h.col < 0)
        h.o.store(o);
      else
        h.o.store(ds_(0, sq), ds_(h.col, d), o);
    }
  };
  return pallas_call(body, c);
}

std::vector<std::vector<double>> attentionBackwardReference(
    const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
    const std::vector<double>& dO, int64_t bh, int64_t sq, int64_t sk, int64_t d, bool causal,
    double smScale, double dsScale) {
  const double scale = smScale != 0 ? smScale : 1.0 / std::sqrt(double(d));
  if (dsScale == 0) dsScale = scale;
  std::vector<double> dq(size_t(bh * sq * d)), dk(size_t(bh * sk * d)), dv(size_t(bh * sk * d));
  std::vector<double> p(static_cast<size_t>(sk)), dp(static_cast<size_t>(sk));
  for (int64_t h = 0; h < bh; ++h) {
    const double* qh = &q[size_t(h * sq * d)];
    const double* kh = &k[size_t(h * sk * d)];
    const double* vh = &v[size_t(h * sk * d)];
    const double* oh = &dO[size_t(h * sq * d)];
    for (int64_t i = 0; i < sq; ++i) {
      const int64_t n = causal ? std::min(sk, i + 1) : sk;
      double mx = -std::numeric_limits<double>::infinity(), total = 0, rs = 0;
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < d; ++t) acc += qh[i * d + t] * kh[j * d + t];
        p[size_t(j)] = acc * scale;
        mx = std::max(mx, p[size_t(j)]);
      }
      for (int64_t j = 0; j < n; ++j) total += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
      for (int64_t j = 0; j < n; ++j) {
        p[size_t(j)] /= total;
        double acc = 0;
        for (int64_t t = 0; t < d; ++t) acc += oh[i * d + t] * vh[j * d + t];
        dp[size_t(j)] = acc;
        rs += acc * p[size_t(j)];
      }
      for (int64_t j = 0; j < n; ++j) {
        const double ds = p[size_t(j)] * (dp[size_t(j)] - rs) * dsScale;
        for (int64_t t = 0; t < d; ++t) {
          dv[size_t((h * sk + j) * d + t)] += p[size_t(j)] * oh[i * d + t];
          dq[size_t((h * sq + i) * d + t)] += ds * kh[j * d + t];
          dk[size_t((h * sk + j) * d + t)] += ds * qh[i * d + t];
        }
      }
    }
  }
  return {dq, dk, dv};
}

namespace {

// The parameters both entries share; heads per step auto: the most heads (8,
// 4, 2, 1) dividing bh whose VMEM fits half the limit. Each step's phases
// alternate between its heads, so more heads fill more of each other's waits
// (64 causal heads of 256 x 256 x 128, 8 heads against 4: v6e backward -7.0%,
// forward -10.3%; v5e -2.3%, -2.7%).
AttentionBackwardParams commonParams(const Params& p, int64_t bh, int64_t sq, int64_t sk, int64_t d,
                                     int64_t nh = 0) {
  AttentionBackwardParams ap;
  ap.causal = p.flag("causal");
  ap.smScale = p.real("sm_scale");
  ap.outType = p.dtype("out_dtype", {BF16, F32});
  const int64_t vmem = std::min<int64_t>(int64_t(96) << 20, p.target().vmemBytes);
  ap.vmemLimitBytes = vmem;
  ap.headsPerStep = p.integer("heads_per_step", 0);
  ap.scheduleLookahead = p.integer("schedule_lookahead", -1);
  for (int64_t h = 8; ap.headsPerStep == 0; h /= 2)
    if (h == 1 || (bh % h == 0 && (nh <= 0 || nh % h == 0) &&
                   h * attentionBackwardVmemPerHead(sq, sk, d) <= vmem / 2))
      ap.headsPerStep = h;
  // Head pairs where two heads' K fill one MXU weight tile (v6e: 2 x 128);
  // off by default: the 1-layer training step gained (-157k cycles), the
  // 2-layer one lost (+662k), not yet explained.
  const int64_t pair = p.integer("pair_heads", -1);
  ap.pairHeads =
      pair < 0 ? nh > 0 && ap.headsPerStep % 2 == 0 && 2 * d == p.target().mxuSize : pair != 0;
  return ap;
}

// [bh / nh, seq, nh, d] <-> [bh, seq, d] (toHeads false: back; nh <= 0: x).
std::vector<double> permuteHeads(const std::vector<double>& x, int64_t bh, int64_t nh, int64_t seq,
                                 int64_t d, bool toHeads) {
  if (nh <= 0) return x;
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < bh / nh; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t t = 0; t < d; ++t) {
          const size_t sm = size_t(((b * seq + i) * nh + h) * d + t);
          const size_t hm = size_t(((b * nh + h) * seq + i) * d + t);
          (toHeads ? y[hm] : y[sm]) = toHeads ? x[sm] : x[hm];
        }
  return y;
}

ParamSpec headsSpec() {
  return {"heads", "0",
          "> 0: every array as [bh / heads, seq, heads * head_dim] (batch, seq, heads, head_dim: "
          "no transposes); 0: [bh, seq, head_dim]"};
}

std::vector<ParamSpec> commonSpecs() {
  return {{"bh", "2", "batch * heads"},
          {"seq_q", "256", "query sequence length (a multiple of 8)"},
          {"seq_k", "256", "key/value sequence length (a multiple of 128)"},
          {"head_dim", "128", "head dimension"},
          {"causal", "false", "mask keys after the query position"},
          {"sm_scale", "0", "score scale; 0 = 1/sqrt(head_dim)"},
          {"out_dtype", "bf16", "output dtype: bf16 or f32"},
          {"heads_per_step", "0", "heads per grid step (divides bh); 0 = auto (8, 4, 2 or 1)"},
          {"pair_heads", "0",
           "1: two heads' score dots in one MXU weight tile (backward: S^T and dP^T); -1: "
           "where 2 x head_dim is mxu.size, heads > 0 and heads_per_step is even; 0 (default): "
           "off (the 2-layer training step ran slower with it, see docs/performance.md)"},
          {"schedule_lookahead", "-1",
           "list scheduler lookahead in instructions (0: the compiler's default; -1: auto, "
           "6144 (backward: 4096) with 4 or more heads per step)"}};
}

}  // namespace

std::vector<ShapeDtype> attentionForwardInputs(int64_t bh, int64_t sq, int64_t sk, int64_t d,
                                               int64_t heads) {
  if (heads <= 0) return flashAttentionInputs(bh, sq, sk, d);
  const int64_t b = bh / heads;
  return {{{b, sq, heads * d}, BF16, "q"},
          {{b, sk, heads * d}, BF16, "k"},
          {{b, sk, heads * d}, BF16, "v"}};
}

KernelEntry attentionForwardEntry() {
  KernelEntry e;
  e.name = "attention_forward";
  e.description =
      "softmax(q k^T * scale) v over q [bh, seq_q, d], k, v [bh, seq_k, d] bf16 (whole score "
      "rows in VMEM, several heads per step)";
  e.params = commonSpecs();
  e.params.push_back(headsSpec());
  e.params.push_back({"one_block", "true",
                      "with hide_softmax: the score dots, the softmax and the output dots of a "
                      "step in one basic block (false: the softmax in a block of its own)"});
  e.params.push_back({"hide_softmax", "true",
                      "the softmax straight-line in one block, as work the MXUs hide (false: 16 "
                      "loops of 8 slabs a trip per 8 heads)"});
  e.build = [](const Params& p) {
    const int64_t bh = p.integer("bh", 1), sq = p.integer("seq_q", 1), sk = p.integer("seq_k", 1);
    const int64_t d = p.integer("head_dim", 1);
    const int64_t nh = p.integer("heads", 0);
    AttentionBackwardParams ap = commonParams(p, bh, sq, sk, d, nh);
    ap.heads = nh;
    ap.hideSoftmax = p.flag("hide_softmax");
    ap.oneBlock = p.flag("one_block");
    LibraryKernel lk{
        attentionForwardCall(bh, sq, sk, d, ap), attentionForwardInputs(bh, sq, sk, d, nh), {}, {}};
    auto permute = [=](const std::vector<double>& x, int64_t seq, bool toHeads) {
      return permuteHeads(x, bh, nh, seq, d, toHeads);
    };
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{
          permute(flashAttentionReference(permute(in.at(0), sq, true), permute(in.at(1), sk, true),
                                          permute(in.at(2), sk, true), bh, sq, sk, d, ap.causal,
                                          ap.smScale),
                  sq, false)};
    };
    lk.tolerance = ap.outType == BF16 ? Tolerance{3e-2, 0.2} : Tolerance{2e-2, 0.2};
    return lk;
  };
  return e;
}

KernelEntry attentionBackwardEntry() {
  KernelEntry e;
  e.name = "attention_backward";
  e.description =
      "dq, dk, dv of softmax(q k^T * scale) v given q, do [bh, seq_q, d], k, v [bh, seq_k, "
      "d] bf16 (whole score rows in VMEM)";
  e.params = commonSpecs();
  e.params.push_back({"ds_scale", "0", "scale of the scores' gradient; 0 = sm_scale"});
  e.params.push_back({"dp_dtype", "bf16", "dtype dP = do v^T is rounded to: bf16 or f32"});
  e.params.push_back(headsSpec());
  e.params.push_back({"softmax_heads", "-1",
                      "heads whose column softmax shares one basic block, their column max "
                      "passes first (-1: 4 with 64 or more vector registers, else 1)"});
  e.build = [](const Params& p) {
    const int64_t bh = p.integer("bh", 1), sq = p.integer("seq_q", 1), sk = p.integer("seq_k", 1);
    const int64_t d = p.integer("head_dim", 1);
    const int64_t nh = p.integer("heads", 0);
    AttentionBackwardParams ap = commonParams(p, bh, sq, sk, d, nh);
    ap.dsScale = p.real("ds_scale");
    ap.dpType = p.dtype("dp_dtype", {BF16, F32});
    ap.heads = nh;
    const int64_t softmaxHeads = p.integer("softmax_heads", -1);
    ap.softmaxHeads = softmaxHeads > 0 ? softmaxHeads : (p.target().vectorRegs >= 64 ? 4 : 1);
    LibraryKernel lk{attentionBackwardCall(bh, sq, sk, d, ap),
                     attentionBackwardInputs(bh, sq, sk, d, nh),
                     {},
                     {}};
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      auto heads = [&](size_t i, int64_t seq) {
        return permuteHeads(in.at(i), bh, nh, seq, d, true);
      };
      std::vector<std::vector<double>> out =
          attentionBackwardReference(heads(0, sq), heads(1, sk), heads(2, sk), heads(3, sq), bh, sq,
                                     sk, d, ap.causal, ap.smScale, ap.dsScale);
      const int64_t seqs[] = {sq, sk, sk};
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = permuteHeads(out[i], bh, nh, seqs[i], d, false);
      return out;
    };
    // P, dP and dS are rounded to bf16 on their way to the MXU (2^-9 relative
    // each); gradients are sums of such products of |x| < 2.
    lk.tolerance = ap.outType == BF16 ? Tolerance{3e-2, 0.2} : Tolerance{2e-2, 0.2};
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
