#include "kernels/lib/FlashAttention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Column windows of at most 128 lanes covering `n` columns (n <= 128 or a multiple of 128).
std::vector<std::pair<int64_t, int64_t>> laneWindows(int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> w;
  for (int64_t c = 0; c < n; c += 128) w.push_back({c, std::min<int64_t>(128, n - c)});
  return w;
}

bool widthOk(int64_t n) { return n >= 1 && (n <= 128 || n % 128 == 0); }

}  // namespace

std::vector<ScratchSpec> OnlineSoftmax::scratch(int64_t rows, int64_t cols, int64_t d) {
  return {VMEM({rows, 128}, F32), VMEM({rows, 128}, F32),  VMEM({rows, 128}, F32),
          VMEM({rows, d}, F32),   VMEM({rows, cols}, F32), VMEM({rows, cols}, F32)};
}

OnlineSoftmax::OnlineSoftmax(const std::vector<Ref>& r, int64_t rows_, int64_t cols_, int64_t d_)
    : m(r.at(0)),
      l(r.at(1)),
      alpha(r.at(2)),
      acc(r.at(3)),
      s(r.at(4)),
      p(r.at(5)),
      rows(rows_),
      cols(cols_),
      d(d_) {
  if (!widthOk(cols) || !widthOk(d))
    throw Error(fmt::format(
        "error: online softmax over {} columns with head_dim {}: each must be at most 128 or a "
        "multiple of 128",
        cols, d));
}

void OnlineSoftmax::init() const {
  m.store(full(rows, 128, -std::numeric_limits<double>::infinity()));
  l.store(zeros(rows, 128));
  acc.store(zeros(rows, d));
}

void OnlineSoftmax::update(const Array& scores, const Array& v) const {
  // The scores are read several times: materialize them once.
  s.store(scores);
  // New row max: fold the old max and every 128-column window of s element-wise,
  // then one lane reduction per row tile; the result is lane-replicated, so it
  // broadcasts over any width without a lane shuffle.
  Array folded;
  for (auto [c0, w] : laneWindows(cols)) {
    Array win = s.load(ds(0, rows), ds(c0, w));
    folded = folded.valid() ? maximum(folded, win) : maximum(m.load(ds(0, rows), ds(0, w)), win);
  }
  Array mNext = max(folded, 1);
  alpha.store(exp(m.load() - mNext));
  p.store(exp(s.load() - mNext));
  l.store(alpha.load() * l.load() + sum(p.load(), 1));
  m.store(mNext);
  for (auto [c0, w] : laneWindows(d))
    acc.store(ds(0, rows), ds(c0, w),
              acc.load(ds(0, rows), ds(c0, w)) * alpha.load(ds(0, rows), ds(0, w)));
  acc.store(acc.load() + dot(p.load().astype(BF16), v));
}

void OnlineSoftmax::finish(const Ref& out) const {
  for (auto [c0, w] : laneWindows(d)) {
    Array o = acc.load(ds(0, rows), ds(c0, w)) * reciprocal(l.load(ds(0, rows), ds(0, w)));
    out.store(ds(0, rows), ds(c0, w), o.astype(out.dtype()));
  }
}

std::vector<ShapeDtype> flashAttentionInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                             int64_t headDim) {
  return {{{bh, seqQ, headDim}, BF16, "q"},
          {{bh, seqK, headDim}, BF16, "k"},
          {{bh, seqK, headDim}, BF16, "v"}};
}

PallasCall flashAttentionCall(int64_t bh, int64_t seqQ, int64_t seqK, int64_t d,
                              const FlashAttentionParams& prm) {
  if (bh < 1 || seqQ < 1 || seqK < 1)
    throw Error(
        fmt::format("error: flash attention needs positive sizes, not bh={} seq_q={} "
                    "seq_k={}",
                    bh, seqQ, seqK));
  if (!widthOk(d) || (d < 128 && d % 8 != 0))
    throw Error(fmt::format(
        "error: flash attention head_dim {} is not supported (a multiple of 8 up to 128, or "
        "a multiple of 128)",
        d));
  if (prm.outType != BF16 && prm.outType != F32)
    throw Error(fmt::format("error: flash attention output must be bf16 or f32, not {}",
                            isa::dtypeName(prm.outType)));
  // A block past the sequence covers it: whole if the sequence fits one vreg
  // width, else rounded up to whole 128-column score windows (a padded block).
  const int64_t bq = std::min(prm.blockQ, seqQ);
  const int64_t bk = prm.blockK < seqK ? prm.blockK : (seqK <= 128 ? seqK : cdiv(seqK, 128) * 128);
  if (bq < 1 || (bq % 8 != 0 && bq != seqQ))
    throw Error(
        fmt::format("error: flash attention block_q {} must be a multiple of 8 (or at "
                    "least seq_q {})",
                    prm.blockQ, seqQ));
  if (bk < 1 || (bk % 128 != 0 && bk != seqK))
    throw Error(
        fmt::format("error: flash attention block_k {} must be a multiple of 128 (or at "
                    "least seq_k {} when seq_k < 128)",
                    prm.blockK, seqK));
  const int64_t nq = cdiv(seqQ, bq), nk = cdiv(seqK, bk);
  const bool causal = prm.causal, raggedK = seqK % bk != 0;
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));

  CallConfig c;
  c.name = fmt::format("flash_attention{}_{}x{}x{}x{}", causal ? "_causal" : "", bh, seqQ, seqK, d);
  c.out_shapes = {{{bh, seqQ, d}, prm.outType, "out"}};
  c.grid = {bh, nq, nk};
  auto qMap = [](const GridIndex& g) { return std::vector<Scalar>{g[0], g[1], 0}; };
  // Causal: kv blocks above the diagonal map to the last block the q block
  // needs, so the pipeline sees an unchanged index and skips their copies.
  auto kvMap = [=](const GridIndex& g) {
    Scalar kv = g[2];
    if (causal) {
      Scalar last = bq % bk == 0 ? g[1] * (bq / bk) + (bq / bk - 1) : (g[1] * bq + (bq - 1)) / bk;
      kv = min(kv, last);
    }
    return std::vector<Scalar>{g[0], kv, 0};
  };
  c.in_specs = {BlockSpec({1, bq, d}, qMap), BlockSpec({1, bk, d}, kvMap),
                BlockSpec({1, bk, d}, kvMap)};
  c.out_specs = {BlockSpec({1, bq, d}, qMap)};
  c.scratch = OnlineSoftmax::scratch(bq, bk, d);
  c.compiler_params.dimension_semantics = {PARALLEL, PARALLEL, ARBITRARY};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;

  auto body = [=](const std::vector<Ref>& r) {
    Ref q = r[0].at(0), k = r[1].at(0), v = r[2].at(0), o = r[3].at(0);
    OnlineSoftmax sm(std::vector<Ref>(r.begin() + 4, r.end()), bq, bk, d);
    Scalar qi = program_id(1), kv = program_id(2);
    Scalar qStart = qi * bq, kStart = kv * bk;
    when(kv == 0, [&] { sm.init(); });
    auto step = [&](bool maskV) {
      Array s = dot(q.load(), k.load(), {false, true}) * scale;
      Array col = iota(1, bk, 1) + splat(kStart, 1, 1);
      Array valid;
      if (raggedK) valid = col < splat(Scalar(seqK), 1, 1);
      if (causal) {
        Array row = iota(bq, 1, 0) + splat(qStart, 1, 1);
        Array below = col <= row;
        valid = valid.valid() ? (valid & below) : below;
      }
      if (valid.valid()) s = where(valid, s, full(1, 1, OnlineSoftmax::kMaskValue));
      Array vv = v.load();
      // Rows past seq_k in the last block are undefined (NaN in interpret mode):
      // zero them, as 0 * NaN would poison the accumulator.
      if (maskV)
        vv = where(iota(bk, 1, 0) < splat(Scalar(seqK) - kStart, 1, 1), vv, zeros(1, 1, BF16));
      sm.update(s, vv);
    };
    // Causal: blocks entirely above the diagonal (first key after the last query) do nothing.
    Scalar needed = causal ? (kStart <= qStart + (bq - 1)) : Scalar(1);
    when(needed, [&] {
      if (raggedK)
        when_else(
            kv == nk - 1, [&] { step(true); }, [&] { step(false); });
      else
        step(false);
    });
    when(kv == nk - 1, [&] { sm.finish(o); });
  };
  return pallas_call(body, c);
}

std::vector<double> flashAttentionReference(const std::vector<double>& q,
                                            const std::vector<double>& k,
                                            const std::vector<double>& v, int64_t bh, int64_t seqQ,
                                            int64_t seqK, int64_t d, bool causal, double smScale) {
  const double scale = smScale != 0 ? smScale : 1.0 / std::sqrt(double(d));
  std::vector<double> out(static_cast<size_t>(bh * seqQ * d), 0.0), s(static_cast<size_t>(seqK));
  for (int64_t h = 0; h < bh; ++h)
    for (int64_t i = 0; i < seqQ; ++i) {
      const double* qi = &q[size_t((h * seqQ + i) * d)];
      int64_t n = causal ? std::min(seqK, i + 1) : seqK;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const double* kj = &k[size_t((h * seqK + j) * d)];
        double dotv = 0;
        for (int64_t e = 0; e < d; ++e) dotv += qi[e] * kj[e];
        s[size_t(j)] = dotv * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      double* oi = &out[size_t((h * seqQ + i) * d)];
      for (int64_t j = 0; j < n; ++j) {
        const double* vj = &v[size_t((h * seqK + j) * d)];
        for (int64_t e = 0; e < d; ++e) oi[e] += s[size_t(j)] / sum * vj[e];
      }
    }
  return out;
}

}  // namespace tpusim::kernels::lib
