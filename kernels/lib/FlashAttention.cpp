#include "kernels/lib/FlashAttention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

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

// The causal mask's lane - sublane + col0 of a key column past seq_k in a
// ragged block: above any query row, so the column is masked for every row.
constexpr double kPastSeqK = double(1 << 30);

bool widthOk(int64_t n) { return n >= 1 && (n <= 128 || n % 128 == 0); }

// floor(n / c) for 0 <= n <= maxN on the scalar unit, which divides by powers
// of two only: n * m / 2^s with m = ceil(2^s / c) and the least s with
// maxN * c <= 2^s. Exact: write n = q c + r (0 <= r < c) and e = m c - 2^s
// (0 <= e < c); then n m / 2^s = q + (r + n e / 2^s) / c, and n e < maxN c <=
// 2^s, so r + n e / 2^s < r + 1 <= c and the floor is q. n m must fit the
// 32-bit scalar (checked).
Scalar floorDivBounded(Scalar n, int64_t c, int64_t maxN) {
  if ((c & (c - 1)) == 0) return c == 1 ? n : n / c;
  int s = 0;
  while ((int64_t(1) << s) < maxN * c) ++s;
  const int64_t m = ((int64_t(1) << s) + c - 1) / c;
  if (maxN * m > std::numeric_limits<int32_t>::max())
    throw Error(fmt::format(
        "error: flash attention: the causal block map divides up to {} by {}, too large for "
        "the scalar unit's multiply-and-shift",
        maxN, c));
  return n * m / (int64_t(1) << s);
}

}  // namespace

std::vector<ScratchSpec> OnlineSoftmax::scratch(int64_t rows, int64_t cols, int64_t d) {
  return {VMEM({rows, 128}, F32),  VMEM({rows, 128}, F32),  VMEM({rows, 128}, F32),
          VMEM({rows, d}, F32),    VMEM({rows, cols}, F32), VMEM({rows, cols}, F32),
          VMEM({rows, cols}, BF16)};
}

OnlineSoftmax::OnlineSoftmax(const std::vector<Ref>& r, int64_t rows_, int64_t cols_, int64_t d_)
    : m(r.at(0)),
      l(r.at(1)),
      alpha(r.at(2)),
      acc(r.at(3)),
      s(r.at(4)),
      p(r.at(5)),
      pb(r.at(6)),
      rows(rows_),
      cols(cols_),
      d(d_) {
  if (!widthOk(cols) || !widthOk(d))
    throw Error(fmt::format(
        "error: online softmax over {} columns with head_dim {}: each must be at most 128 or a "
        "multiple of 128",
        cols, d));
}

// Rows are independent in a softmax, so every row-wise pass runs per slab of (up
// to) 8 rows: a store or reduction of at most 8 rows is straight-line code.
// Slabs go kSlabsPerIteration at a time through a counted loop, so each
// iteration is one basic block whose independent slabs the scheduler
// interleaves (a store of more rows is a loop whose iterations each wait out the
// whole latency chain; putting all slabs of a 120-row or larger block in one
// basic block made codegen's list scheduler run without finishing).
void OnlineSoftmax::forSlabs(const std::function<void(Scalar r0, int64_t n)>& fn) const {
  constexpr int64_t kGroupRows = 8 * kSlabsPerIteration;
  int64_t groups = rows / kGroupRows;
  auto group = [&](Scalar base) {
    for (int64_t j = 0; j < kSlabsPerIteration; ++j) fn(base + 8 * j, 8);
  };
  if (groups == 1) group(0);
  if (groups > 1) fori_loop(0, groups, [&](Scalar i) { group(i * kGroupRows); });
  for (int64_t r0 = groups * kGroupRows; r0 < rows; r0 += 8)
    fn(Scalar(r0), std::min<int64_t>(8, rows - r0));
}

void OnlineSoftmax::init() const {
  forSlabs([&](Scalar r0, int64_t n) {
    m.store(ds(r0, n), ds(0, 128), full(n, 128, -std::numeric_limits<double>::infinity()));
    l.store(ds(r0, n), ds(0, 128), zeros(n, 128));
    acc.store(ds(r0, n), ds(0, d), zeros(n, d));
  });
}

void OnlineSoftmax::update(const Array& q, const Array& k, const ScoreFn& scoreOf, const Array& v,
                           bool scoreOnce, bool latchV, int64_t pvLag, int64_t pvCarry) const {
  if (pvDefer && !(cols <= 1024 && latchV && pvLag == 0 && pvCarry == 0))
    throw Error("error: online softmax: a deferred p x V needs V latched, no in-loop p x V");
  previousPv();
  // With V latched, slabsInVregs emits the next step's score dot among its
  // first iterations.
  scoreDot(q, k, cols <= 1024 && latchV);
  // Up to 1024 key columns (8 score vregs per slab) a slab keeps its scaled (and
  // masked) scores, weights, row max and alpha in registers: p goes to VMEM only
  // as the bf16 MXU operand pb, and nothing else is stored twice.
  if (cols <= 1024 && latchV) {
    // V stays latched on the MXUs (chunk c on MXU c) while the slab loop
    // streams p through it: its pushes overlap the score dot's drain. Emitted
    // among the loop's first iterations (in the score dot's block): its loads
    // in front of them kept their slabs further from the dot's pops in
    // program order, past the scheduler's lookahead for new values.
    auto pv = [&](Scalar r0, int64_t n) {
      acc.store(ds(r0, n), ds(0, d),
                acc.load(ds(r0, n), ds(0, d)) +
                    dot(pb.load(ds(r0, n), ds(0, cols)), v, {.latched = true}));
    };
    slabsInVregs(scoreOf, scoreOnce, pvDefer ? PvFn() : PvFn(pv), pvLag, pvCarry,
                 [&] { mxu_latch(v); });
    if (!laterStep) reciprocalL();
    return;
  }
  if (cols <= 1024) {
    slabsInVregs(scoreOf, scoreOnce);
    acc.store(acc.load() + dot(pb.load(), v));
    reciprocalL();
    return;
  }
  ScoreFn score = scoreOf;
  if (scoreOnce) {
    forSlabs([&](Scalar r0, int64_t n) {
      for (auto [c0, w] : laneWindows(cols))
        s.store(ds(r0, n), ds(c0, w), scoreOf(s.load(ds(r0, n), ds(c0, w)), r0, c0));
    });
    score = [](const Array& raw, Scalar, int64_t) { return raw; };
  }
  forSlabs([&](Scalar r0, int64_t n) {
    auto rowsOf = [&](const Ref& r, int64_t c0, int64_t w) { return r.load(ds(r0, n), ds(c0, w)); };
    // New row max: fold the old max and every 128-column window of the scores
    // element-wise, then one lane reduction; the result is lane-replicated, so
    // it broadcasts over any width without a lane shuffle.
    Array folded;
    for (auto [c0, w] : laneWindows(cols)) {
      Array win = score(rowsOf(s, c0, w), r0, c0);
      folded = folded.valid() ? maximum(folded, win) : maximum(rowsOf(m, 0, w), win);
    }
    Array mNext = max(folded, 1);
    alpha.store(ds(r0, n), ds(0, 128), exp(rowsOf(m, 0, 128) - mNext));
    p.store(ds(r0, n), ds(0, cols), exp(score(rowsOf(s, 0, cols), r0, 0) - mNext));
    l.store(ds(r0, n), ds(0, 128),
            rowsOf(alpha, 0, 128) * rowsOf(l, 0, 128) + sum(rowsOf(p, 0, cols), 1));
    m.store(ds(r0, n), ds(0, 128), mNext);
    pb.store(ds(r0, n), ds(0, cols), rowsOf(p, 0, cols).astype(BF16));
    for (auto [c0, w] : laneWindows(d))
      acc.store(ds(r0, n), ds(c0, w), rowsOf(acc, c0, w) * rowsOf(alpha, 0, w));
  });
  acc.store(acc.load() + dot(pb.load(), v));
  reciprocalL();
}

void OnlineSoftmax::updateDiagonal(const Array& q, const Array& k,
                                   const std::function<std::pair<ScoreFn, ScoreFn>()>& makeScore,
                                   const Array& v, int64_t parts) const {
  if (pvDefer) throw Error("error: online softmax: the diagonal step's p x V is not deferred");
  previousPv();
  scoreDot(q, k, true);
  // Made after the dot in program order: its hoisted vregs made before it
  // held registers through it (causal 2048 +19%).
  const auto [masked, scaled] = makeScore();
  // Without the next q block's score dot, the MXUs idle through the later
  // parts once the first part's weights are stored (V latched in it): that
  // part's p x V starts then (into result slot set 0) and pops after them.
  const int64_t earlyRows = !nextQScores && rows / parts <= pvEarlyRows ? rows / parts : 0;
  for (int64_t i = 0; i < parts; ++i) {
    OnlineSoftmax part = *this;
    part.rows = rows / parts;
    part.rowOff = i * part.rows;
    part.liveCols = (i + 1) * cols / parts;
    // Key windows before the part's first row are visible to all its rows
    // (the first query row is the first key): scaled only, no mask compare
    // and select (where(true, s, mask) is s: the same bits).
    const int64_t visible = part.rowOff;
    const ScoreFn score =
        visible == 0 ? masked : ScoreFn([=](const Array& raw, Scalar row0, int64_t col0) {
          return col0 + raw.cols() <= visible ? scaled(raw, row0, col0) : masked(raw, row0, col0);
        });
    // The first part's iterations fill the score dot's block (5 of its 6:
    // causal 2048 -3.3% against 3); the later parts' prologues follow the
    // loop before them, and any iteration there held the scalar registers
    // the grid's counters need (they spilled: +0.8% at 8192 with 1).
    // With the scores made in the step before (scoreNext) the first block
    // has no dot to hide: 2 (causal 2048 31,876 -> 31,443 cycles; 0:
    // 31,536, 1 or 3: 31,470, 4: 31,628, 6: 33,087).
    part.partHead = i == 0 ? (scoresReady ? 2 : 5) : 0;
    if (i > 0) part.nextScores = nullptr;
    // nextQScores: the next q block's first score dot leads the last part,
    // then V's latch (the dot's K^T pushes replace latched weights), and
    // all of that part's iterations go in that block as work the dot hides:
    // the EUP runs through the dot's stream (fewer iterations there, or
    // unmarked ones, left it waiting; after the step's p x V the dot ran
    // serial with it). Its first part then latches nothing.
    const bool withNextQ = nextQScores && i == parts - 1;
    if (withNextQ) {
      nextQScores();
      mxu_latch(v);
      part.partHead = part.rows / (8 * kPipelinedSlabs) - 2;
      part.partOverlap = true;
    }
    // With the next q block's dot, the first part's iterations all
    // straight-line too, marked as work the dot hides: no loop then ends
    // the block before the dot, so the list scheduler runs the dot's pushes
    // and stream under the first part's exps (causal 2048 20,864 -> 20,374
    // cycles; unmarked: +1,400). The dot moved into the first part instead
    // did less (docs/performance.md, branch `causal13`).
    if (nextQScores && i == 0) {
      part.partHead = part.rows / (8 * kPipelinedSlabs) - 2;
      part.partOverlap = true;
    }
    // The first part's p x V on the MXUs, idle through the later parts,
    // with the second part's iterations straight-line after it as work the
    // stream hides (as under the next q block's dot; causal 2048 22,071 ->
    // 21,720 cycles; a loop after it 22,266, 2 / 4 / 5 head iterations
    // 22,056 / 21,846 / 21,775).
    if (i == 1 && earlyRows > 0) {
      mxu_start(pb.load(ds(0, earlyRows), ds(0, cols)), d, 0);
      part.partHead = part.rows / (8 * kPipelinedSlabs) - 2;
      part.partOverlap = true;
    }
    if (i == 0 && !nextQScores)
      part.slabsInVregs(score, true, nullptr, 0, 0, [&] { mxu_latch(v); });
    else
      part.slabsInVregs(score, true);
  }
  if (earlyRows > 0) mxu_finish(acc, ds(0, earlyRows), ds(0, d), cols, 0, true);
  acc.store(ds(earlyRows, rows - earlyRows), ds(0, d),
            acc.load(ds(earlyRows, rows - earlyRows), ds(0, d)) +
                dot(pb.load(ds(earlyRows, rows - earlyRows), ds(0, cols)), v, {.latched = true}));
  reciprocalL();
  if (finishTo) {
    for (int64_t r0 = 0; r0 < rows; r0 += 8)
      for (auto [c0, w] : laneWindows(d))
        finishTo->store(ds(r0, 8), ds(c0, w),
                        (acc.load(ds(r0, 8), ds(c0, w)) * alpha.load(ds(r0, 8), ds(0, w)))
                            .astype(finishTo->dtype()));
  }
}

// The step's raw scores into s, or (scoreNext) the next step's score dot
// first: its instructions lead the block in program order, and the softmax
// of this step's scores (made one step before) fills the slots its stream
// leaves (the head iterations are marked as work the dot hides).
void OnlineSoftmax::scoreDot(const Array& q, const Array& k, bool nextLater) const {
  if (nextScores && !nextLater) nextScores();
  if (!scoresReady) s.store(dot(q, k, {false, true}));
}

// The step before deferred its p x V (pvDefer): acc += its pb x its V, still
// latched on the MXUs, first in this step's first basic block, so that the
// MXUs stream it while K^T's pushes for this step's score dot go to the
// weight staging, and the score dot's result latency and the softmax after
// it overlap its pops. acc gets the same sum in the same order as at the end
// of that step (this step's rescale comes after it), so the bits are equal.
void OnlineSoftmax::previousPv() const {
  if (!pvPrev.valid()) return;
  acc.store(ds(0, rows), ds(0, d),
            acc.load(ds(0, rows), ds(0, d)) + dot(pb.load(ds(0, rows), ds(0, cols)), pvPrev,
                                                  {.latched = true, .latched_earlier = true}));
}

// alpha = 1 / l for finish (rcpInUpdate): straight-line after the step's
// last dot up to 1024 rows, so the scheduler overlaps the EUP's reciprocals
// with its drain.
void OnlineSoftmax::reciprocalL() const {
  if (!rcpInUpdate) return;
  auto slab = [&](Scalar r0, int64_t n) {
    alpha.store(ds(r0, n), ds(0, 128), reciprocal(l.load(ds(r0, n), ds(0, 128))));
  };
  if (rows > 1024) return forSlabs(slab);
  for (int64_t r0 = 0; r0 < rows; r0 += 8) slab(Scalar(r0), std::min<int64_t>(8, rows - r0));
}

// The same operations in the same order as the VMEM form below update's
// register branch (bit for bit: max folds m then the windows in column order,
// the row sum folds the p windows in column order before the lane tree), with
// the scores, the weights p, the row max and alpha in vector registers.
// slabMax: the slab's new row max (lane-replicated, in a register).
Array OnlineSoftmax::slabMax(const ScoreFn& score, Scalar r0, int64_t n) const {
  auto rowsOf = [&](const Ref& r, int64_t c0, int64_t w) { return r.load(ds(r0, n), ds(c0, w)); };
  Array folded;
  for (auto [c0, w] : laneWindows(live())) {
    Array scored = score(rowsOf(s, c0, w), r0, c0);
    // All masked (ScoreFn): max(x, mask) is x for the row's visible scores.
    if (!scored.valid()) continue;
    Array win = in_vregs(scored);
    folded = folded.valid() ? maximum(folded, win) : fresh ? win : maximum(rowsOf(m, 0, w), win);
  }
  return max_vregs(folded);
}

// slabRest: the weights, m, pb and the rescaled acc of a slab whose new row
// max slabMax gave (the scores are scaled and masked again: VPU work, no
// VMEM); returns what slabL needs for l: the weights' column-tile sum (before
// its lane reduction) and alpha.
std::pair<Array, Array> OnlineSoftmax::slabRest(const ScoreFn& score, Scalar r0, int64_t n,
                                                const Array& mNext) const {
  auto rowsOf = [&](const Ref& r, int64_t c0, int64_t w) { return r.load(ds(r0, n), ds(c0, w)); };
  // fresh: alpha = exp(-inf - mNext) = 0 is not made (acc gets the zeros
  // 0 x 0 gave, l the sum 0 x 0 + sum gave).
  Array alphaV = fresh ? Array() : in_vregs(exp(rowsOf(m, 0, 128) - mNext));
  // acc windows narrower than a vreg (head_dim < 128) take alpha at their width.
  Array alphaD = d >= 128 || fresh ? alphaV : in_vregs(exp(rowsOf(m, 0, d) - mNext));
  Array psum;
  std::vector<Array> pw;
  for (auto [c0, w] : laneWindows(live())) {
    Array scored = score(rowsOf(s, c0, w), r0, c0);
    // All masked (ScoreFn): weights exp(mask - m) = 0, no exps; psum + 0
    // is psum (weights are >= 0), so the sum keeps its bits.
    pw.push_back(scored.valid() ? in_vregs(exp(scored - mNext)) : Array());
    if (!pw.back().valid()) continue;
    psum = psum.valid() ? psum + pw.back() : pw.back();
  }
  m.store(ds(r0, n), ds(0, 128), mNext);
  size_t i = 0;
  for (auto [c0, w] : laneWindows(live())) {
    const Array& wgt = pw[i++];
    pb.store(ds(r0, n), ds(c0, w), wgt.valid() ? wgt.astype(BF16) : zeros(n, w, BF16));
  }
  for (int64_t c0 = live(); c0 < cols; c0 += 128)
    pb.store(ds(r0, n), ds(c0, 128), zeros(n, 128, BF16));
  for (auto [c0, w] : laneWindows(d))
    acc.store(ds(r0, n), ds(c0, w),
              fresh ? zeros(n, w) : rowsOf(acc, c0, w) * (d >= 128 ? alphaV : alphaD));
  return {in_vregs(psum), alphaV};
}

// l = alpha * l + the row sum of the weights.
void OnlineSoftmax::slabL(Scalar r0, int64_t n, const Array& psum, const Array& alphaV) const {
  if (fresh) return l.store(ds(r0, n), ds(0, 128), sum_vregs(psum));
  l.store(ds(r0, n), ds(0, 128), alphaV * l.load(ds(r0, n), ds(0, 128)) + sum_vregs(psum));
}

// The slabs in registers, software-pipelined over groups of kPipelinedSlabs
// slabs: a loop iteration works on three groups, the row maxes of group i + 1
// (loads, VPU folds, XLU max reductions), the weights of group i (the EUP's
// exps, the stores of m, pb and acc) and l of group i - 1 (XLU sum
// reductions), handing the maxes and the weights' sums and alphas on to the
// next iteration in registers: the EUP then neither waits for a group's max
// reductions at the start of an iteration nor its sum reductions at the end.
void OnlineSoftmax::slabsInVregs(const ScoreFn& score, bool masked, const PvFn& pv, int64_t pvLag,
                                 int64_t pvCarry, const std::function<void()>& latch) const {
  constexpr int64_t kGroupRows = 8 * kPipelinedSlabs;
  const int64_t groups = rows / kGroupRows;
  if (groups < 3 || rows % kGroupRows != 0) {
    if (rowOff > 0) throw Error("error: online softmax: a part of the rows needs 3+ groups");
    if (latch && nextScores) nextScores();
    forSlabs([&](Scalar r0, int64_t n) {
      auto [psum, alphaV] = slabRest(score, r0, n, slabMax(score, r0, n));
      slabL(r0, n, psum, alphaV);
    });
    if (latch) latch();
    if (pv) pv(Scalar(0), rows);
    return;
  }
  const size_t g = size_t(kPipelinedSlabs);
  // Carries: [maxes of the next group, sums of this group, alphas of this group].
  // updateDiagonal's later parts: groups g0 .. g0 + groups - 1 (the
  // indices shifted, not the bases: a base + rowOff per group cost scalar
  // registers).
  if (rowOff % kGroupRows != 0 || (rowOff > 0 && (pv || latch || !masked)))
    throw Error("error: online softmax: a part of the rows needs whole groups, no p x V");
  const int64_t g0 = rowOff / kGroupRows;
  auto maxes = [&](Scalar base, std::vector<Array>& out) {
    for (size_t j = 0; j < g; ++j) out.push_back(slabMax(score, base + 8 * int64_t(j), 8));
  };
  auto rest = [&](Scalar base, const std::vector<Array>& mx, std::vector<Array>& out) {
    std::vector<Array> sums, alphas;
    for (size_t j = 0; j < g; ++j) {
      auto [ps, al] = slabRest(score, base + 8 * int64_t(j), 8, mx[j]);
      sums.push_back(ps);
      alphas.push_back(al);
    }
    out.insert(out.end(), sums.begin(), sums.end());
    if (!fresh) out.insert(out.end(), alphas.begin(), alphas.end());  // fresh: no alphas
  };
  auto ls = [&](Scalar base, const std::vector<Array>& c) {
    for (size_t j = 0; j < g; ++j)
      slabL(base + 8 * int64_t(j), 8, c[g + j], fresh ? Array() : c[2 * g + j]);
  };
  // Iteration i (1 <= i < groups - 1): l of group i - 1, weights of group i, maxes of i + 1
  // (and in the loop, with pv, p x V of group i - pvLag).
  bool inLoop = false;
  // pvCarry: the loop's iteration at place u of a trip pops slot set u (the
  // p x V of the group pvCarry iterations back, started one trip before) and
  // starts the set with its own group's p x V at its end.
  int64_t carryPlace = -1;
  auto iteration = [&](Scalar i, const std::vector<Array>& c) {
    std::vector<Array> next;
    std::vector<Array> mx(c.begin(), c.begin() + long(g));
    // i * 32 - 32 lag, not (i - lag) * 32: the rows then share the base
    // register of the softmax's own rows of the iteration, so the scheduler
    // sees that they differ.
    if (pv && inLoop) pv(i * kGroupRows - pvLag * kGroupRows, kGroupRows);
    ls((i - 1) * kGroupRows, c);
    std::vector<Array> restOut;
    rest(i * kGroupRows, mx, restOut);
    maxes((i + 1) * kGroupRows, next);
    // The pops last in program order: held back to the loop's result latency,
    // as the oldest instructions they would keep the registers the list
    // scheduler reserves for the oldest from everything else.
    if (carryPlace >= 0) {
      mxu_finish(acc, ds(i * kGroupRows - pvCarry * kGroupRows, kGroupRows), ds(0, d), cols,
                 carryPlace, true);
      mxu_start(pb.load(ds(i * kGroupRows, kGroupRows), ds(0, cols)), d, carryPlace);
    }
    next.insert(next.end(), restOut.begin(), restOut.end());
    return next;
  };
  std::vector<Array> c;
  // The first iterations go straight after the score dot, in its basic
  // block: their slabs' scores pop with the dot's first round of items, and
  // the slabs fill the rest of the dot's drain (263 cycles of result latency
  // and the second round's pops) instead of waiting for the loop. Blocks of
  // 256+ keys, unmasked steps: 9 iterations with headOverlap (seq 2048
  // 49,189 cycles; 5: 50,451, 7: 49,461, 8: 49,334, 10: 49,526, 12: 49,766,
  // 13+: 51,896; causal 8192 -1.9% against 5); without it 5 were best (3:
  // seq 2048 -6.4%, causal -3.5%; 1: -3.9%; with V latched after them and
  // 1 / l in the step, 5 against 3: seq 2048 -0.9%, block_q 256 -2.0%; 4 and
  // 6-7 do less); with one 128-key window the dot's drain is short and they
  // cost more than they save (+0.5 to +10%). Masked steps of up to 512 rows: 3 with V latched there
  // (causal 2048 -0.8% against 1; 5: +3.7%), else 1 (3 in the diagonal step of a ragged last kv
  // block, blocks 256, head_dim 64, needed more than the 32 scalar registers); in larger ones their
  // per-slab mask scalars can exceed the 32 scalar registers (block_q 640).
  const int64_t maskedHead = partHead >= 0 ? partHead : latch ? 3 : 1;
  // With p x V of the finished groups started in the score dot's block
  // (pvEarlyRows), 12: the MXUs then work through the block's second half
  // too, and the block after the loop is left with the p x V tail (V's
  // latch after 3 of them: seq 2048 9 50,566, 10 46,470, 11 49,302, 12
  // 46,294, 13 46,614 cycles; causal 8192 10 405,892, 12 404,453, 13
  // 407,855; after 5: 10 45,526, 12 45,430, 13 46,341).
  const bool pvEarly = pv && latch && pvLag == 0 && pvCarry == 0 && rowOff == 0 && !masked &&
                       pvEarlyRows >= kGroupRows;
  // With the scores made one step before (scoresReady, V latched) every
  // iteration goes in the first block, marked as work the next step's score
  // dot hides: the EUP then starts at once and runs through the block while
  // the MXUs stream that dot, V's pushes and the early p x V (seq 2048: 12
  // head iterations 46,096 cycles, all 14 42,114; the wide overlap window,
  // Scheduler.cpp, 48,250 -> 46,096 with 12).
  const bool ready = (scoresReady || nextScores) && pvEarly && headOverlap;
  const int64_t unmaskedHead = ready ? groups - 2 : pvEarly ? 12 : headOverlap ? 9 : 5;
  const int64_t head = cols < 256 || (masked && rows > 512)
                           ? 0
                           : std::min<int64_t>(masked ? maskedHead : unmaskedHead, groups - 2);
  // V's latch after the first 3 of them (seq 2048 -0.6%; after 1, 2, 4 or
  // all 5: +1.4%, +3.2%, +0.1%, +0.6%): its pushes then overlap the rest of
  // the score dot's drain, and its loads still come after the first slabs.
  // With pvEarly after 5 (seq 2048 1: 47,014, 2: 47,558, 3: 46,294, 4: 45,638, 5: 45,430, 6:
  // 46,096; causal 8192 3: 404,453, 5: 398,684): the dot hides 2 more iterations, and the first
  // p x V starts then take 6 groups at once.
  // ready: V's latch after half of the groups and one (the next score dot
  // of bq rows takes about half of the softmax's exps to stream: seq 2048
  // after 9 of 16 41,910 cycles, 7 41,982, 5 42,114, 3 45,422). A q
  // block's first step (its own score dot, then the next one: the MXUs busy
  // twice as long) after all of them (seq 2048 38,739 -> 37,881 cycles,
  // 8192 542,566 -> 540,420; after 10, 11, 12, 13: 38,354, 38,186, 38,322,
  // 39,226; 5, 7: 39,374, 39,469).
  const int64_t readyLatch = scoresReady ? groups / 2 + 1 : head;
  const int64_t latchAt = std::min<int64_t>(head, ready ? readyLatch : pvEarly ? 5 : kLatchAfter);
  // The next step's score dot (scoresReady) first: before V's latch (a dot
  // replaces the latched weights; after 3 or 5 iterations: +23%, +19%).
  const bool emitNext = latch && nextScores;
  // The prologue and the head iterations up to V's latch as work the score
  // dot hides (dsl::OverlapWithMxu): the list scheduler starts their slabs
  // as their scores pop. Else they come after the dot's ~1,200 instructions
  // in program order, past its 640-instruction lookahead for new values, and
  // start only once the dot's second round of pops is under way (the EUP's
  // first exp ~230 bundles after the first slab's scores are stored).
  // Not past the latch (its pushes are no VPU work) nor in later parts'
  // prologues (they follow a loop, not the dot).
  std::optional<OverlapWithMxu> early;
  // Only with head iterations (a masked step's prologue marked with none,
  // block_q 1024 causal: +44%), and not in masked steps: in the 7B prefill
  // (tpuc) the diagonal step's second loop then took 287 bundles per trip
  // instead of 123 (another scalar interval spilled), its flash call +18%.
  if (emitNext) nextScores();
  // The diagonal's last part under the next q block's first score dot
  // (partOverlap): all its head iterations are overlap work.
  const bool ovPart = partOverlap && head > 0;
  if ((headOverlap && !masked && latchAt > 0 && rowOff == 0 && pvLag == 0 && pvCarry == 0) ||
      ovPart)
    early.emplace();
  {
    std::vector<Array> mx0, restOut;
    maxes(Scalar(rowOff), mx0);
    rest(Scalar(rowOff), mx0, restOut);
    maxes(Scalar(rowOff + kGroupRows), c);
    c.insert(c.end(), restOut.begin(), restOut.end());
  }
  if (latch && latchAt == 0) latch();
  // p x V of the groups finished in this block, on the MXUs, which idle from
  // the score dot's drain to the p x V after the loop: each group's as soon
  // as V is latched and its weights are stored, into its own slot set
  // (mxu_start); the block after the loop only pops them (mxu_finish).
  const int64_t earlyGroups = pvEarly ? std::min<int64_t>(pvEarlyRows / kGroupRows, 1 + head) : 0;
  // ready: the starts spread over the iterations after V's latch, two per
  // iteration, not all 8 groups' at once: the latch's pushes and 8 groups'
  // starts (~500 MXU instructions) are overlap work too, and the scheduler
  // lets overlap work run at most 400 instructions (its wide window) past
  // the oldest unscheduled one: the next iteration's slabs waited ~230
  // bundles for the MXUs to take them, the EUP idle (seq 2048 41,697 ->
  // 38,739 cycles; 1 per iteration 41,126, 3 39,222, 4 40,245; the latch
  // and starts taken out of the overlap work instead 38,783, both 39,046;
  // the latch after 7, 8, 10 or 11 with 2 per iteration 39,474, 38,804,
  // 38,926, 39,566).
  constexpr int64_t kReadyStartsPerIteration = 2;
  int64_t started = 0;
  auto startEarly = [&](int64_t upTo) {
    for (; started < std::min(upTo, earlyGroups); ++started)
      mxu_start(pb.load(ds(started * kGroupRows, kGroupRows), ds(0, cols)), d, started);
  };
  if (latch && latchAt == 0) startEarly(1);
  for (int64_t i = 1; i < 1 + head; ++i) {
    c = iteration(Scalar(g0 + i), c);
    // ready: the later iterations stay overlap work (all 14 at seq 2048:
    // 46,096 -> 42,114 cycles; up to V's latch, the usual end: 46,096).
    if (i == (ready || ovPart ? head : latchAt)) early.reset();
    if (latch && i == latchAt) latch();
    // ready: at most kReadyStartsPerIteration groups started per iteration.
    if (i >= latchAt)
      startEarly(ready ? std::min(i + 1, started + kReadyStartsPerIteration) : i + 1);
  }
  early.reset();
  startEarly(1 + head);  // those the spread left (few iterations after the latch)
  // Unmasked steps run two iterations per trip: the scheduler overlaps the
  // first one's tail (the last exps' results converted and stored, ~19
  // bundles) with the second one's head (loads, scale and subtract before the
  // first exp), which the end of a trip drains (seq 2048: 57,094 cycles
  // against 61,126; 3 or 4 per trip 61,766 / 59,494). Masked steps keep one:
  // with two, causal seq 2048 took 47,754 cycles instead of 42,464 (twice the
  // per-slab mask scalars; with three they exceed the 32 scalar registers).
  const bool carry = pv && pvCarry > 0 && !masked && head + 1 >= pvCarry;
  const int64_t unroll = carry ? pvCarry : masked ? 1 : 2, trips = (groups - 2 - head) / unroll;
  // The loop's iterations 1 + head .. groups - 2 add p x V of groups
  // 1 + head - pvLag .. groups - 2 - pvLag (those that exist); the rest follow the loop.
  const int64_t pvLo = std::max<int64_t>(0, 1 + head - pvLag);
  const int64_t pvHi = std::max<int64_t>(pvLo, groups - 1 - pvLag);
  if (pv && pvLag > 0 && 1 + head - pvLag < 0)
    throw Error(
        fmt::format("error: online softmax: p x V {} groups behind the slab loop's first "
                    "iteration ({}) is outside the block",
                    pvLag, 1 + head));
  inLoop = pvLag > 0 && !carry;
  // Carry: the groups before the loop's first iteration start the slot sets
  // the first trip pops.
  const int64_t first = 1 + head;
  if (carry)
    for (int64_t u = 0; u < unroll; ++u)
      mxu_start(pb.load(ds((first - unroll + u) * kGroupRows, kGroupRows), ds(0, cols)), d, u);
  if (unroll == 1) {
    if (groups - 2 - head > 0) c = fori_loop(g0 + 1 + head, g0 + groups - 1, iteration, c);
  } else {
    if (trips > 0)
      c = fori_loop(
          0, trips,
          [&](Scalar t, const std::vector<Array>& in) {
            std::vector<Array> cur = in;
            for (int64_t u = 0; u < unroll; ++u) {
              carryPlace = carry ? u : -1;
              cur = iteration(t * unroll + (1 + head + u), cur);
            }
            carryPlace = -1;
            return cur;
          },
          c);
    for (int64_t i = 1 + head + trips * unroll; i < groups - 1; ++i) c = iteration(Scalar(i), c);
  }
  const int64_t last = rowOff + (groups - 1) * kGroupRows;
  ls(Scalar(last - kGroupRows), c);
  std::vector<Array> mx(c.begin(), c.begin() + long(g)), restOut;
  rest(Scalar(last), mx, restOut);
  std::vector<Array> fin(g);  // placeholder maxes: ls reads the sums and alphas only
  fin.insert(fin.end(), restOut.begin(), restOut.end());
  ls(Scalar(last), fin);
  if (carry) {
    // The last trip's slot sets, then the groups after the loop.
    const int64_t done = first + trips * unroll;
    for (int64_t u = 0; u < unroll; ++u)
      mxu_finish(acc, ds((done - unroll + u) * kGroupRows, kGroupRows), ds(0, d), cols, u, true);
    if (first > unroll) pv(Scalar(0), (first - unroll) * kGroupRows);
    return pv(Scalar(done * kGroupRows), rows - done * kGroupRows);
  }
  if (earlyGroups > 0) {
    // The later groups in the early ones' slot sets, each started as soon
    // as the set it reuses is popped (a plain latched dot would take all
    // result slots at once and wait for every early pop).
    for (int64_t j = 0; j < groups; ++j) {
      mxu_finish(acc, ds(j * kGroupRows, kGroupRows), ds(0, d), cols, j % earlyGroups, true);
      if (j + earlyGroups < groups)
        mxu_start(pb.load(ds((j + earlyGroups) * kGroupRows, kGroupRows), ds(0, cols)), d,
                  j % earlyGroups);
    }
    return;
  }
  if (pv) {
    if (!inLoop) return pv(Scalar(0), rows);
    if (pvLo > 0) pv(Scalar(0), pvLo * kGroupRows);
    pv(Scalar(pvHi * kGroupRows), rows - pvHi * kGroupRows);
  }
}

// The register form's slabs of rows [r0, r0 + n) as straight-line code, in
// the pipelined loop's order (the row maxes of group i + 1, the weights of
// group i, l of group i - 1): one basic block with the MXU work around it.
void OnlineSoftmax::chunkSoftmax(const ScoreFn& score, int64_t r0, int64_t n) const {
  const int64_t g = kPipelinedSlabs, groups = n / (8 * g);
  auto rowOf = [&](int64_t grp, int64_t j) { return Scalar(r0 + 8 * (g * grp + j)); };
  const size_t ng = size_t(groups);
  std::vector<std::vector<Array>> mx(ng), sums(ng), alphas(ng);
  auto maxes = [&](int64_t grp) {
    for (int64_t j = 0; j < g; ++j) mx[size_t(grp)].push_back(slabMax(score, rowOf(grp, j), 8));
  };
  auto ls = [&](int64_t grp) {
    for (int64_t j = 0; j < g; ++j)
      slabL(rowOf(grp, j), 8, sums[size_t(grp)][size_t(j)], alphas[size_t(grp)][size_t(j)]);
  };
  maxes(0);
  for (int64_t grp = 0; grp < groups; ++grp) {
    if (grp + 1 < groups) maxes(grp + 1);
    for (int64_t j = 0; j < g; ++j) {
      auto [ps, al] = slabRest(score, rowOf(grp, j), 8, mx[size_t(grp)][size_t(j)]);
      sums[size_t(grp)].push_back(ps);
      alphas[size_t(grp)].push_back(al);
    }
    if (grp >= 1) ls(grp - 1);
  }
  ls(groups - 1);
}

void OnlineSoftmax::updateChunked(const Ref& q, const Ref& k, const ScoreFn& score,
                                  const std::function<Array(int64_t, int64_t)>& vRows,
                                  int64_t chunk, int64_t kSplit) const {
  const int64_t nc = rows / chunk;
  Array kAll = k.load();
  auto scores = [&](int64_t c) {
    s.store(ds(c * chunk, chunk), ds(0, cols),
            dot(q.load(ds(c * chunk, chunk), ds(0, d)), kAll, {false, true}));
  };
  // acc += p x V, one dot per kSplit keys (into the unused p scratch, part x
  // at columns 128x), summed in k order (the MXU's order), slab by slab: a
  // store of more rows would be a loop of its own (a basic block).
  auto pv = [&](int64_t c) {
    const int64_t r0 = c * chunk, parts = cdiv(cols, kSplit);
    for (int64_t x = 0; x < parts; ++x) {
      const int64_t k0 = x * kSplit, w = std::min(kSplit, cols - k0);
      p.store(ds(r0, chunk), ds(128 * x, d), dot(pb.load(ds(r0, chunk), ds(k0, w)), vRows(k0, w)));
    }
    for (int64_t r = r0; r < r0 + chunk; r += 8) {
      Array sum = p.load(ds(r, 8), ds(0, d));
      for (int64_t x = 1; x < parts; ++x) sum = sum + p.load(ds(r, 8), ds(128 * x, d));
      acc.store(ds(r, 8), ds(0, d), acc.load(ds(r, 8), ds(0, d)) + sum);
    }
  };
  // One basic block: a one-trip loop per chunk (its own block) needed more
  // than the 32 scalar registers.
  scores(0);
  for (int64_t c = 0; c < nc; ++c) {
    if (c + 1 < nc) scores(c + 1);
    chunkSoftmax(score, c * chunk, chunk);
    if (c >= 1) pv(c - 1);
  }
  pv(nc - 1);
  reciprocalL();
}

void OnlineSoftmax::finish(const Ref& out) const {
  forSlabs([&](Scalar r0, int64_t n) {
    for (auto [c0, w] : laneWindows(d)) {
      Array o =
          acc.load(ds(r0, n), ds(c0, w)) *
          (rcpInUpdate ? alpha.load(ds(r0, n), ds(0, w)) : reciprocal(l.load(ds(r0, n), ds(0, w))));
      out.store(ds(r0, n), ds(c0, w), o.astype(out.dtype()));
    }
  });
}

std::vector<ShapeDtype> flashAttentionInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                             int64_t headDim, int64_t groups) {
  const int64_t kvh = groups >= 1 ? bh / groups : bh;
  return {{{bh, seqQ, headDim}, BF16, "q"},
          {{kvh, seqK, headDim}, BF16, "k"},
          {{kvh, seqK, headDim}, BF16, "v"}};
}

std::string flashScoreNextFallback(int64_t seqK, int64_t d, const FlashAttentionParams& prm) {
  if (!prm.scoreNext) return "";
  // block_k as flashAttentionCall takes it.
  const int64_t bk = prm.blockK < seqK ? prm.blockK : (seqK <= 128 ? seqK : cdiv(seqK, 128) * 128);
  // The conditions of V's latch in every step.
  if (!prm.latchV) return "V is not latched (latch_v off)";
  if (prm.mxuSize != 128)
    return fmt::format("V is not latched (mxu.size {}; the latch needs 128)", prm.mxuSize);
  if (d > 128) return fmt::format("V is not latched (head_dim {} > 128)", d);
  if (bk != 128 * prm.mxuCount || bk > 1024)
    return fmt::format("V is not latched (block_k {} is not mxu.count x 128 = {}, at most 1024)",
                       bk, 128 * prm.mxuCount);
  // Whole K blocks: the steps slice K's head at multiples of block_k.
  if (seqK % bk != 0) return fmt::format("seq_k {} is not a multiple of block_k {}", seqK, bk);
  if (seqK / bk < 2) return fmt::format("one K/V block only (seq_k {})", seqK);
  // K's two buffers (4 bytes per element in VMEM, 128 lanes a row) may take a
  // quarter of the VMEM limit (the DSL's default 16 MiB: seq_k up to 4096;
  // v5e's 96 MiB of the registry entry: 24,576); longer sequences keep K
  // blocks.
  const int64_t vmemLimit = prm.vmemLimitBytes > 0 ? prm.vmemLimitBytes : int64_t(16) << 20;
  const int64_t kHeadBytes = 2 * seqK * 128 * 4;
  if (kHeadBytes > vmemLimit / 4)
    return fmt::format(
        "K's whole head ({} bytes in two VMEM buffers) is over a quarter of the VMEM limit {}",
        kHeadBytes, vmemLimit);
  if (prm.overlap) return "overlap is on";
  if (prm.pvNext) return "pv_next is on";
  if (prm.pvLag != 0) return "pv_lag is on";
  if (prm.pvCarry != 0) return "pv_carry is on";
  return "";
}

bool flashScoreNextQ(int64_t seqQ, int64_t seqK, int64_t d, const FlashAttentionParams& prm) {
  // flashScoreNextFallback says "" when score_next is off: the path needs it on.
  if (!prm.scoreNext || !prm.scoreNextQ || !flashScoreNextFallback(seqK, d, prm).empty())
    return false;
  const int64_t bq = std::min(prm.blockQ, seqQ);
  const int64_t bk = prm.blockK < seqK ? prm.blockK : cdiv(seqK, 128) * 128;
  if (seqQ % bq != 0 || seqQ / bq < 2) return false;
  // Causal: the q block's last step is its diagonal (block_q = block_k, no
  // q block past seq_k), split in parts (updateDiagonal), which makes the
  // next q block's first scores into a third buffer under its last part.
  if (prm.causal) {
    if (bq != bk || seqQ > seqK || prm.causalParts < 2 ||
        !OnlineSoftmax::diagonalFits(bq, bk, prm.causalParts))
      return false;
  } else if ((seqK / bk) % 2 != 0) {
    // An even number of K blocks: the q block's last step's score buffer is
    // then the other one of the next q block's first step's.
    return false;
  }
  // q's two buffers (as K's), and a causal kernel's third score buffer, within
  // a quarter of the VMEM limit.
  const int64_t vmemLimit = prm.vmemLimitBytes > 0 ? prm.vmemLimitBytes : int64_t(16) << 20;
  const int64_t thirdScores = prm.causal ? bq * bk * 4 : 0;
  return 2 * seqQ * 128 * 4 + thirdScores <= vmemLimit / 4;
}

bool flashPairsQ(int64_t seqQ, int64_t seqK, const FlashAttentionParams& prm) {
  const int64_t bq = std::min(prm.blockQ, seqQ);
  const int64_t bk = prm.blockK < seqK ? prm.blockK : cdiv(seqK, 128) * 128;
  return prm.pairQ && prm.causal && bq == bk && seqQ == seqK && seqQ % bq == 0 &&
         (seqQ / bq) % 2 == 0;
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
  const int64_t groups = prm.groups;
  if (groups < 1 || bh % groups != 0)
    throw Error(fmt::format("error: flash attention groups {} must divide bh {}", groups, bh));
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
  if (prm.pvEarly < -1)
    throw Error(fmt::format(
        "error: flash attention pv_early {} must be -1 (automatic), 0 (off) or a row count",
        prm.pvEarly));
  const int64_t nq = cdiv(seqQ, bq), nk = cdiv(seqK, bk);
  const bool causal = prm.causal, raggedK = seqK % bk != 0;
  const double scale = prm.smScale != 0 ? prm.smScale : 1.0 / std::sqrt(double(d));

  CallConfig c;
  c.name = fmt::format("flash_attention{}_{}x{}x{}x{}{}", causal ? "_causal" : "", bh, seqQ, seqK,
                       d, groups > 1 ? fmt::format("_g{}", groups) : "");
  c.out_shapes = {{{bh, seqQ, d}, prm.outType, "out"}};
  // pairQ (FlashAttentionParams): grid axis 1 counts pairs of q blocks, i
  // and nq - 1 - i, each pair's steps axis 2: q block i's i + 1 kv blocks,
  // then q block nq - 1 - i's nq - i. Every step computes: no skipped
  // steps above the diagonal, whose grid headers the EUP idled through.
  const bool paired = flashPairsQ(seqQ, seqK, prm);
  c.grid = paired ? std::vector<int64_t>{bh, nq / 2, nq + 1} : std::vector<int64_t>{bh, nq, nk};
  // The step's q block and kv block.
  auto qOf = [=](const GridIndex& g) {
    return paired ? select(g[2] <= g[1], g[1], Scalar(nq - 1) - g[1]) : g[1];
  };
  auto kvOf = [=](const GridIndex& g) {
    return paired ? select(g[2] <= g[1], g[2], g[2] - g[1] - 1) : g[2];
  };
  auto qMap = [=](const GridIndex& g) { return std::vector<Scalar>{g[0], qOf(g), 0}; };
  // Causal: kv blocks above the diagonal map to the last block the q block
  // needs, so the pipeline sees an unchanged index and skips their copies.
  // That block, (i bq + bq - 1) / bk for q block i, is (a (i + 1) - 1) / c
  // with bq = G a, bk = G c, G = gcd(bq, bk) (floor((G x - 1) / (G c)) =
  // floor(floor((G x - 1) / G) / c) = floor((x - 1) / c)): with i < nq the
  // dividend is small, so a block_k like 384 (c = 3) divides by
  // multiply-and-shift (floorDivBounded; the bound covers i = nq too).
  const int64_t gqk = std::gcd(bq, bk), qa = bq / gqk, kc = bk / gqk;
  auto lastKv = [=](Scalar qi) {
    return min(Scalar(nk - 1), floorDivBounded(qi * qa + (qa - 1), kc, qa * (nq + 1) - 1));
  };
  // Causal: q and V of the steps after a q block's last kv block (skipped)
  // map to the next q block's first step, (i + 1, kv 0): the pipeline then
  // copies them during the q block's last computed step, not in the skipped
  // steps just before the next q block, where the copies were exposed
  // (causal 2048: ~1,100 cycles of sync_wait at the q blocks' starts). The
  // last q block clamps as before. The output keeps qMap: moved on too, its
  // write-back during the next q block's first steps cost more (causal 8192
  // +0.4% against main).
  auto skipsToNext = [=](const GridIndex& g) {
    return (g[2] > lastKv(g[1])) && (g[1] + 1 < Scalar(nq));
  };
  auto kvMap = [=](const GridIndex& g) {
    Scalar kv = kvOf(g);
    if (causal && !paired) kv = select(skipsToNext(g), Scalar(0), min(kv, lastKv(g[1])));
    return std::vector<Scalar>{groups == 1 ? g[0] : g[0] / groups, kv, 0};
  };
  auto qNextMap = [=](const GridIndex& g) {
    if (!causal || paired) return qMap(g);
    return std::vector<Scalar>{g[0], select(skipsToNext(g), g[1] + 1, g[1]), 0};
  };
  // scoreNext (FlashAttentionParams): K then comes as one block of the
  // head's seq_k rows (copied once per K/V head) that the steps slice.
  const bool scoreNext = prm.scoreNext && flashScoreNextFallback(seqK, d, prm).empty();
  auto kHeadMap = [=](const GridIndex& g) {
    return std::vector<Scalar>{groups == 1 ? g[0] : g[0] / groups, 0, 0};
  };
  // scoreNextQ (FlashAttentionParams): q as one block of the head's seq_q
  // rows too (copied once per head), sliced per q block; its grid axis is
  // then sequential (a q block's first scores come from the step before).
  const bool crossQ = scoreNext && flashScoreNextQ(seqQ, seqK, d, prm);
  auto qHeadMap = [](const GridIndex& g) { return std::vector<Scalar>{g[0], 0, 0}; };
  c.in_specs = {crossQ ? BlockSpec({1, seqQ, d}, qHeadMap) : BlockSpec({1, bq, d}, qNextMap),
                scoreNext ? BlockSpec({1, seqK, d}, kHeadMap) : BlockSpec({1, bk, d}, kvMap),
                BlockSpec({1, bk, d}, kvMap)};
  c.out_specs = {BlockSpec({1, bq, d}, qMap)};
  c.scratch = OnlineSoftmax::scratch(bq, bk, d);
  if (scoreNext) c.scratch.push_back(VMEM({bq, bk}, F32));  // the other step parity's scores
  // Causal crossQ: the next q block's first scores, made in the diagonal
  // step while its last part still reads its own (either parity's buffer).
  if (crossQ && causal) c.scratch.push_back(VMEM({bq, bk}, F32));
  c.compiler_params.dimension_semantics = {PARALLEL, crossQ ? ARBITRARY : PARALLEL, ARBITRARY};
  c.compiler_params.vmem_limit_bytes = prm.vmemLimitBytes;

  auto body = [=](const std::vector<Ref>& r) {
    Ref q = r[0].at(0), k = r[1].at(0), v = r[2].at(0), o = r[3].at(0);
    OnlineSoftmax sm(std::vector<Ref>(r.begin() + 4, r.end()), bq, bk, d);
    // Causal too: the last step of a q block is a masked one, whose p x V
    // now streams through latched V as well (causal 2048 -1.0%; +0.1% when
    // masked steps pushed V after the slab loop).
    sm.rcpInUpdate = prm.rcpInUpdate;
    sm.headOverlap = prm.headOverlap;
    // Up to the rows the result slots hold (one 8-row tile per slot and MXU).
    if (prm.pvEarly != 0 && prm.mxuSize == 128)
      sm.pvEarlyRows = prm.pvEarly > 0 && prm.accSlots > 0
                           ? std::min<int64_t>(prm.pvEarly, 8 * prm.accSlots)
                       : prm.pvEarly > 0 ? prm.pvEarly
                                         : 8 * prm.accSlots;
    const GridIndex pos{{program_id(0), program_id(1), program_id(2)}, {}};
    Scalar qi = qOf(pos), kv = kvOf(pos);
    Scalar qStart = qi * bq, kStart = kv * bk;
    // A branch's known start as a constant: the loads of a whole-head block
    // at a constant row wait only for the parts holding their rows (chunked
    // arrival: the kernel's first step starts on K's and q's first rows).
    // tracing runs the lambdas in place; restored after.
    auto withStart = [&](Scalar& start, auto&& f) {
      const Scalar saved = start;
      start = Scalar(0);
      f();
      start = saved;
    };
    // The q block after this one in grid order (paired: i -> nq - 1 - i ->
    // i + 1), and whether there is one in this head.
    // Paired, made here with the step's indices (made where the diagonal
    // reads them: causal 2048 +4%).
    std::optional<Scalar> pairedNextQ, pairedHasNextQ;
    if (paired) {
      pairedNextQ = select(qi < Scalar(nq / 2), Scalar(nq - 1) - qi, Scalar(nq) - qi) * bq;
      pairedHasNextQ = qi != Scalar(nq / 2);
    }
    auto nextQStart = [&] { return paired ? *pairedNextQ : qStart + bq; };
    auto hasNextQ = [&] { return paired ? *pairedHasNextQ : qi + 1 < Scalar(nq); };
    // scoreNext: the step's K rows from the head's, and the score buffers by
    // step parity (set per variant below: tracing runs the steps' lambdas
    // in place).
    auto kBlock = [&](Scalar start) {
      return scoreNext ? k.load(ds(start, bk), ds(0, d)) : k.load();
    };
    auto qBlock = [&](Scalar start) { return crossQ ? q.load(ds(start, bq), ds(0, d)) : q.load(); };
    const std::array<Ref, 3> scores = {sm.s, scoreNext ? r.at(4 + 7) : sm.s,
                                       crossQ && causal ? r.at(4 + 8) : sm.s};
    int parity = -1;          // -1: scoreNext off
    bool nextDot = false;     // this variant computes the next step's scores
    bool first = false;       // the q block's first step: its own scores first
    bool nextQ = false;       // crossQ: the next step's is the next q block's first
    bool firstReady = false;  // crossQ: a q block's first step, its scores made
    bool diagNextQ = false;   // crossQ, causal: the diagonal makes the next q block's first
    bool freshDiag = false;   // q block 0's diagonal, its first step: fresh
    // scoreNext: a q block's first step, if unmasked, writes m, l and acc
    // without reading them (OnlineSoftmax::fresh): no init. So does the
    // diagonal in parts (block_q = block_k) of q block 0, its first step.
    const bool diagInParts = causal && prm.latchV && prm.mxuSize == 128 && d <= 128 &&
                             bk == 128 * prm.mxuCount && prm.causalParts > 1 && bq == bk &&
                             OnlineSoftmax::diagonalFits(bq, bk, prm.causalParts) &&
                             !(raggedK && nk == 1);
    if (!scoreNext)
      when(kv == 0, [&] { sm.init(); });
    else if (causal && !diagInParts)
      when(kv == 0 && qStart < Scalar(bk - 1), [&] { sm.init(); });
    // Scale, then mask keys past seq_k (last block of a ragged sequence) and
    // after the query (blocks crossing the diagonal): the masks cost VPU work
    // on every score, so blocks that need none get code without them. The
    // causal mask of a whole vreg is one compare: key col0 + lane is visible to
    // query row0 + sublane iff lane - sublane <= (qStart + row0) - (kStart + col0),
    // with lane - sublane made once per masked step (in registers).
    // Blocks of 96 rows or more (the pipelined slab loop) hold the scale (and
    // the mask value) in a register made once per step, not one vector
    // immediate per score vreg (VALU slots the loop's first exps need); in
    // smaller blocks the register costs more than the immediates.
    const bool hoist = bq >= 96;
    // The MXU phases overlapped with the softmax (updateChunked): chunks of
    // 128 rows (or the MXU size) keep every MXU's LHS stream as long as its
    // weight tile's pushes; needs the MXU size for p x V's K split.
    const int64_t chunk = std::max<int64_t>(128, prm.mxuSize);
    const bool chunked =
        prm.overlap && prm.mxuSize >= 128 && d <= 128 && OnlineSoftmax::chunkedFits(bq, bk, chunk);
    // The deferred p x V (stepAt below) streams through V latched in the
    // step before: where every unmasked step latches it. Blocks of 96+ rows
    // (the pipelined slab loop): a causal step's successor is then always
    // computed (its first key is at most qStart + 1).
    const bool pvNext = prm.pvNext && prm.latchV && prm.mxuSize == 128 && d <= 128 &&
                        bk == 128 * prm.mxuCount && !chunked && bq >= 96 && prm.pvLag == 0 &&
                        prm.pvCarry == 0;
    // The diagonal in parts (causal, block_q = block_k: every masked step,
    // the q block's last) writes the output in its own last block, after 1 / l,
    // beside p x V's pops, instead of in a loop of its own after the step.
    const bool diagFinish = causal && !raggedK && prm.rcpInUpdate && prm.latchV &&
                            prm.mxuSize == 128 && d <= 128 && bk == 128 * prm.mxuCount &&
                            prm.causalParts > 1 && bq == bk &&
                            OnlineSoftmax::diagonalFits(bq, bk, prm.causalParts);
    // sameStart: the step's first query row is its first key (qStart = kStart).
    // scaledOut: also the ScoreFn without masks, sharing the hoisted scale.
    auto scoreFn = [=](bool maskRagged, bool maskCausal, bool sameStart = false,
                       OnlineSoftmax::ScoreFn* scaledOut = nullptr) {
      Array diag, scaleV, maskV;
      std::vector<Array> diagC;
      if (hoist) scaleV = in_vregs(full(8, 128, scale));
      if (scaledOut)
        *scaledOut = [=](const Array& raw, Scalar, int64_t) {
          return raw.rows() == 8 && raw.cols() == 128 && hoist ? raw * scaleV : raw * scale;
        };
      // A ragged last kv block (causal or not): the ragged mask folds into
      // the per-window diagonals, made once per step.
      const bool foldRagged = maskRagged && hoist && bk <= 512;
      if (maskCausal && (!maskRagged || foldRagged)) {
        diag = in_vregs(iota(8, 128, 1) - iota(8, 128, 0));
        // Up to 4 windows, lane - sublane + col0 per window too (made once per
        // step): one scalar per slab instead of one per score vreg (-1.1%).
        // Ragged: a column at or past seq_k gets kPastSeqK instead, which no
        // row passes (rows are < 2^30), so the one compare applies both
        // masks; one scalar per score vreg for the two separate masks needed
        // more than the 32 scalar registers (seq_q 1000, seq_k 1300, blocks
        // 256, causal).
        if (hoist && bk <= 512)
          for (int64_t c0 = 0; c0 < bk; c0 += 128) {
            Array dc = c0 == 0 ? diag : diag + splat(Scalar(c0), 1, 1);
            if (foldRagged)
              dc = where(iota(8, 128, 1) < splat(Scalar(seqK) - kStart - c0, 1, 1), dc,
                         full(8, 128, kPastSeqK, S32));
            diagC.push_back(c0 == 0 && !foldRagged ? diag : in_vregs(dc));
          }
        if (hoist) maskV = in_vregs(full(8, 128, OnlineSoftmax::kMaskValue));
      }
      // Not causal: every row sees a valid column (the diagonal -2^30 is at
      // most any qStart + row0 - kStart) and no other; per score vreg the
      // generic mask needed more than the 32 scalar registers too (seq_q
      // 1000, seq_k 1300, blocks 256 x 512, causal: its step below the
      // diagonal).
      if (foldRagged && !maskCausal) {
        for (int64_t c0 = 0; c0 < bk; c0 += 128)
          diagC.push_back(
              in_vregs(where(iota(8, 128, 1) < splat(Scalar(seqK) - kStart - c0, 1, 1),
                             full(8, 128, -kPastSeqK, S32), full(8, 128, kPastSeqK, S32))));
        maskV = in_vregs(full(8, 128, OnlineSoftmax::kMaskValue));
      }
      // A slab's row bound qStart + row0 - kStart, broadcast once and shared
      // by its windows (consecutive calls with the same row0: the max reads,
      // then the weights' reads of one slab) instead of a vbcast per compare
      // (32 per masked loop iteration; causal 2048 -1.2% with V latched in
      // masked steps).
      auto bound = std::make_shared<std::pair<llo::Value*, Array>>(nullptr, Array());
      return [=](const Array& raw, Scalar row0, int64_t col0) {
        const bool whole = raw.rows() == 8 && raw.cols() == 128;
        Array s = whole && hoist ? raw * scaleV : raw * scale;
        if (!maskRagged && !maskCausal) return s;
        if (whole && !diagC.empty()) {
          // A slab at a constant row (straight-line iterations) of the
          // diagonal: a window before its first row is visible to all of
          // its rows, one after its last to none (where() would pick s,
          // resp. the mask value, in every lane: the same bits).
          int64_t r0 = 0;
          if (sameStart && !maskRagged && row0.isConstant(&r0)) {
            if (col0 + 127 <= r0) return s;
            if (col0 > r0 + 7) return Array();
          }
          if (bound->first != row0.value()) {
            int64_t r = 0;
            Array b = sameStart && row0.isConstant(&r) ? full(8, 128, double(r), S32)
                                                       : splat(qStart + row0 - kStart, 8, 128);
            *bound = {row0.value(), in_vregs(b)};
          }
          return where(diagC[size_t(col0 / 128)] <= bound->second, s, maskV);
        }
        if (diag.valid() && whole)
          return where(diag <= splat(qStart + row0 - (kStart + col0), 1, 1), s,
                       hoist ? maskV : full(1, 1, OnlineSoftmax::kMaskValue));
        Array col = iota(1, raw.cols(), 1) + splat(kStart + col0, 1, 1);
        Array valid;
        if (maskRagged) valid = col < splat(Scalar(seqK), 1, 1);
        if (maskCausal) {
          Array row = iota(raw.rows(), 1, 0) + splat(qStart + row0, 1, 1);
          Array below = col <= row;
          valid = valid.valid() ? (valid & below) : below;
        }
        return where(valid, s, full(1, 1, OnlineSoftmax::kMaskValue));
      };
    };
    // pending: the step before left its p x V to this one; defer: this one
    // leaves its own to the next.
    auto step = [&](bool lastRagged, bool maskCausal, bool pending, bool defer) {
      OnlineSoftmax st = sm;
      if (parity >= 0) {
        // Causal crossQ: a q block's first step reads the diagonal's third buffer.
        st.s = scores[firstReady && causal ? 2 : size_t(parity)];
        st.scoresReady = !first;
        st.fresh = first || firstReady;
        st.laterStep = nextDot && !nextQ;
        if (nextDot)
          st.nextScores = [&, p = parity, toNextQ = nextQ] {
            scores[size_t(1 - p)].store(
                toNextQ ? dot(qBlock(nextQStart()), kBlock(Scalar(0)), {false, true})
                        : dot(qBlock(qStart), kBlock(kStart + bk), {false, true}));
          };
      }
      if (freshDiag && !lastRagged) st.fresh = true;
      if (diagNextQ)
        st.nextQScores = [&] {
          scores[2].store(dot(qBlock(nextQStart()), kBlock(Scalar(0)), {false, true}));
        };
      if (pending) st.pvPrev = v.load();
      st.pvDefer = defer;
      // Masked blocks keep update: their per-slab mask scalars, unrolled
      // over a whole step, can need more than the 32 scalar registers.
      if (chunked && !lastRagged && !maskCausal) {
        auto vRows = [&](int64_t k0, int64_t w) { return v.load(ds(k0, w), ds(0, d)); };
        st.updateChunked(q, k, scoreFn(false, false), vRows, chunk, prm.mxuSize);
        return;
      }
      Array vv = v.load();
      // Rows past seq_k in the last block are undefined (NaN in interpret mode):
      // zero them, as 0 * NaN would poison the accumulator.
      if (lastRagged)
        vv = where(iota(bk, 1, 0) < splat(Scalar(seqK) - kStart, 1, 1), vv, zeros(1, 1, BF16));
      // Wide blocks (the softmax in VMEM) read each score twice: masked blocks
      // store their scores once, masked.
      // V latched on the MXUs for p x V, K chunk c on MXU c: only where the
      // chunks fill every MXU (block_k = mxu.count x 128), else the plain
      // dot's row groups keep more MXUs busy. The diagonal (masked) steps
      // too, without the experimental in-loop p x V (pv_lag, pv_carry).
      const bool latch =
          prm.latchV && prm.mxuSize == 128 && d <= 128 && !lastRagged && bk == 128 * prm.mxuCount;
      // The diagonal step (block_q = block_k: its first row is its first key)
      // in parts, each skipping the key windows after all of its rows. The
      // row bound of a slab at a constant row is then that row, a vector
      // immediate: a scalar per slab made early by the scheduler made the
      // grid's counters spill.
      if (latch && maskCausal && !lastRagged && prm.causalParts > 1 && bq == bk &&
          OnlineSoftmax::diagonalFits(bq, bk, prm.causalParts)) {
        if (diagFinish) st.finishTo = o;
        st.updateDiagonal(
            qBlock(qStart), kBlock(kStart),
            [&] {
              std::pair<OnlineSoftmax::ScoreFn, OnlineSoftmax::ScoreFn> fns;
              fns.first = scoreFn(false, true, true, &fns.second);
              return fns;
            },
            vv, prm.causalParts);
        return;
      }
      st.update(qBlock(qStart), kBlock(kStart), scoreFn(lastRagged, maskCausal), vv,
                lastRagged || maskCausal, latch, maskCausal ? 0 : prm.pvLag,
                maskCausal ? 0 : prm.pvCarry);
    };
    // Deferred p x V (pvNext): a step below the diagonal (unmasked, V
    // latched) that is not its q block's last leaves its p x V to the next
    // step; a step after such a step adds it first. The variants are basic
    // blocks of their own: the p x V then shares the next step's first block
    // with its score dot.
    auto stepAt = [&](bool lastRagged, bool maskCausal) {
      if (!pvNext || nk == 1) return step(lastRagged, maskCausal, false, false);
      // The step before was unmasked (kStart - bk + bk - 1 <= qStart) and
      // so deferred; an unmasked step's predecessor always is.
      Scalar pendingCond = causal && maskCausal ? (kv > 0) && (kStart <= qStart + 1) : kv > 0;
      auto withPending = [&](bool pending) {
        if (lastRagged || maskCausal) return step(lastRagged, maskCausal, pending, false);
        // With a ragged last block this variant runs before the last step only.
        if (raggedK) return step(lastRagged, maskCausal, pending, true);
        when_else(
            kv < nk - 1, [&] { step(lastRagged, maskCausal, pending, true); },
            [&] { step(lastRagged, maskCausal, pending, false); });
      };
      when_else(
          pendingCond, [&] { withPending(true); }, [&] { withPending(false); });
    };
    auto stepRagged = [&](bool maskCausal) {
      if (raggedK)
        when_else(
            kv == nk - 1, [&] { stepAt(true, maskCausal); }, [&] { stepAt(false, maskCausal); });
      else
        stepAt(false, maskCausal);
    };
    // scoreNext: an unmasked step finds its scores made by the step before
    // (the first one of a q block makes its own first, in the same block)
    // and makes the next step's where one runs (causal: its first key at or
    // before the q block's last row), into the other buffer of the pair.
    auto unmasked = [&] {
      if (!scoreNext) return stepRagged(false);
      Scalar hasNext = kv + 1 < Scalar(nk);
      if (causal) hasNext = hasNext && (kStart + bk <= qStart + (bq - 1));
      // crossQ: a q block's last step (odd parity: nk is even) makes the
      // next q block's first scores (q x K block 0).
      auto last = [&](int p) {
        nextDot = false;
        if (!crossQ || causal || p != 1) return stepRagged(false);
        when_else(
            hasNextQ(),
            [&] {
              nextDot = nextQ = true;
              stepRagged(false);
              nextDot = nextQ = false;
            },
            [&] { stepRagged(false); });
      };
      auto variant = [&](int p) {
        parity = p;
        when_else(
            hasNext, [&] { nextDot = true, stepRagged(false); }, [&] { last(p); });
        parity = -1;
      };
      auto ownFirst = [&] {
        first = true;
        variant(0);
        first = false;
      };
      // Causal: the unmasked kv == 0 step is a later q block's first (q block
      // 0's is the diagonal, which has constant starts), after the heads
      // arrived; constant starts there only move the schedule (causal 2048
      // 22,998 cycles without, 23,040 with).
      auto firstStart = [&](Scalar& start, auto&& f) {
        if (causal) return f();
        withStart(start, f);
      };
      when_else(
          kv == 0,
          [&] {
            firstStart(kStart, [&] {
              if (!crossQ) return ownFirst();
              when_else(
                  qi > 0,
                  [&] {
                    firstReady = true;
                    variant(0);
                    firstReady = false;
                  },
                  [&] { firstStart(qStart, ownFirst); });
            });
          },
          [&] {
            when_else(
                kv % 2 == 0, [&] { variant(0); }, [&] { variant(1); });
          });
    };
    // A masked step (causal) finds its scores made if the step before was
    // unmasked (its last key kStart - 1 at or before qStart), by parity, and
    // makes no next step's scores: another score dot and its registers in
    // the diagonal step's code, at the scalar register file's limit, spilled
    // (causal 2048 47,590 cycles against 32,933).
    // crossQ (causal): the diagonal of a q block with a next one makes that
    // block's first scores (q rows x K block 0, into a third buffer: its
    // last part still reads its own) under that part's softmax
    // (updateDiagonal): that step is then a ready one.
    auto masked = [&] {
      if (!scoreNext) return stepRagged(true);
      auto variant = [&](int p) {
        parity = p;
        nextDot = false;
        stepRagged(true);
        parity = -1;
      };
      auto diagonal = [&] {
        when_else(
            kv > 0 && kStart <= qStart + 1,
            [&] {
              when_else(
                  kv % 2 == 0, [&] { variant(0); }, [&] { variant(1); });
            },
            [&] {
              // block_q = block_k: a masked step is a diagonal one, so this
              // is kv == 0 with q block 0, both starts 0 (whole heads in
              // parts: the first step waits for their first rows only).
              if (bq != bk) return stepRagged(true);
              freshDiag = diagInParts;
              withStart(kStart, [&] { withStart(qStart, [&] { stepRagged(true); }); });
              freshDiag = false;
            });
      };
      if (!crossQ) return diagonal();
      when_else(
          hasNextQ(),
          [&] {
            diagNextQ = true;
            diagonal();
            diagNextQ = false;
          },
          diagonal);
    };
    // In the q block's last computed step (causal: its last key at or past
    // the q block's last row), not in a skipped step after it (causal 8192
    // -0.1%).
    auto finishLast = [&] {
      Scalar lastStep = kv == nk - 1;
      if (causal) lastStep = lastStep || (kStart + bk >= qStart + bq);
      when(lastStep, [&] { sm.finish(o); });
    };
    if (causal) {
      // Blocks entirely above the diagonal (first key after the last query) do
      // nothing; blocks entirely below it (last key at or before the first query)
      // need no causal mask.
      // Paired q blocks: every step computes, so no branch (a one-sided `if`
      // on the heads would wait for all their parts first).
      auto computed = [&](auto&& f) {
        if (paired) return f();
        when(kStart <= qStart + (bq - 1), f);
      };
      computed([&] {
        if (diagFinish) {
          when_else(
              kStart + (bk - 1) <= qStart,
              [&] {
                unmasked();
                finishLast();
              },
              masked);
          return;
        }
        when_else(kStart + (bk - 1) <= qStart, unmasked, masked);
        finishLast();
      });
    } else {
      unmasked();
      finishLast();
    }
  };
  return pallas_call(body, c);
}

std::vector<double> flashAttentionReference(const std::vector<double>& q,
                                            const std::vector<double>& k,
                                            const std::vector<double>& v, int64_t bh, int64_t seqQ,
                                            int64_t seqK, int64_t d, bool causal, double smScale,
                                            int64_t groups) {
  const double scale = smScale != 0 ? smScale : 1.0 / std::sqrt(double(d));
  std::vector<double> out(static_cast<size_t>(bh * seqQ * d), 0.0), s(static_cast<size_t>(seqK));
  for (int64_t h = 0; h < bh; ++h)
    for (int64_t i = 0; i < seqQ; ++i) {
      const double* qi = &q[size_t((h * seqQ + i) * d)];
      int64_t n = causal ? std::min(seqK, i + 1) : seqK;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const double* kj = &k[size_t((h / groups * seqK + j) * d)];
        double dotv = 0;
        for (int64_t e = 0; e < d; ++e) dotv += qi[e] * kj[e];
        s[size_t(j)] = dotv * scale;
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (s[size_t(j)] = std::exp(s[size_t(j)] - mx));
      double* oi = &out[size_t((h * seqQ + i) * d)];
      for (int64_t j = 0; j < n; ++j) {
        const double* vj = &v[size_t((h / groups * seqK + j) * d)];
        for (int64_t e = 0; e < d; ++e) oi[e] += s[size_t(j)] / sum * vj[e];
      }
    }
  return out;
}

}  // namespace tpusim::kernels::lib

namespace tpusim::kernels::lib {

KernelEntry flashAttentionEntry() {
  KernelEntry e;
  e.name = "flash_attention";
  e.description =
      "softmax(q k^T * scale) v over q [bh, seq_q, d], k, v [bh, seq_k, d] bf16 (online softmax)";
  e.params = {{"bh", "2", "batch * heads"},
              {"seq_q", "256", "query sequence length"},
              {"seq_k", "256", "key/value sequence length"},
              {"head_dim", "128", "head dimension (64, 128, ...)"},
              {"block_q", "128", "query rows per block (a multiple of 8)"},
              {"block_k", "128", "key rows per block (a multiple of 128)"},
              {"causal", "false", "mask keys after the query position"},
              {"sm_scale", "0", "score scale; 0 = 1/sqrt(head_dim)"},
              {"out_dtype", "bf16", "output dtype: bf16 or f32"},
              {"groups", "1", "q heads per k/v head (grouped-query attention; divides bh)"},
              {"overlap", "false",
               "overlap the MXU phases with the softmax (block_q of 256+; slower so far)"},
              {"latch_v", "true",
               "unmasked steps latch V on the MXUs once (K chunk c on MXU c) and stream p "
               "through it (mxu.size 128, block_k = mxu.count x 128, head_dim <= 128)"},
              {"pv_lag", "0",
               "with latch_v, p x V inside the slab loop, this many groups of 32 rows behind "
               "the softmax (0: after the loop; slower so far)"},
              {"pv_carry", "0",
               "with latch_v, p x V inside the slab loop, started at the end of an iteration "
               "and popped one trip later: this many iterations per trip (0: off)"},
              {"rcp_in_update", "true",
               "1 / l at the end of every step (where the EUP idles) instead of in the "
               "output pass"},
              {"causal_parts", "2",
               "causal, block_q = block_k, V latched: the diagonal step's rows in this many "
               "parts, each skipping the key windows after all of its rows (1: off)"},
              {"head_overlap", "true",
               "the slab loop's first iterations in the score dot's block (up to V's latch) as "
               "VPU work the dot hides: they start as their scores pop"},
              {"pv_next", "false",
               "with latch_v, a step below the diagonal leaves its p x V to the next step, "
               "which streams it through the still latched V before its score dot"},
              {"pv_early", "-1",
               "with latch_v, p x V of up to this many rows (the ones the score dot's block "
               "finishes) started on the MXUs before the slab loop and popped after it (-1: "
               "as many as the MXU result slots hold; 0: off)"},
              {"score_next", "true",
               "with latch_v, unmasked steps compute the next step's scores (K of the whole "
               "head in VMEM, scores double-buffered) while their softmax runs"},
              {"score_next_q", "true",
               "with score_next, an even number of K blocks (causal: block_q = block_k, the "
               "diagonal in parts): q of the whole head in VMEM, a q block's last step "
               "computes the next q block's first scores"},
              {"pair_q", "true",
               "causal, block_q = block_k, seq_q = seq_k, an even number of q blocks: each "
               "grid step of axis 1 runs q blocks i and nq - 1 - i (equal work, no skipped "
               "steps above the diagonal)"}};
  e.build = [](const Params& p) {
    int64_t bh = p.integer("bh", 1), sq = p.integer("seq_q", 1), sk = p.integer("seq_k", 1);
    int64_t d = p.integer("head_dim", 1);
    FlashAttentionParams fp;
    fp.blockQ = p.integer("block_q", 1);
    fp.blockK = p.integer("block_k", 1);
    fp.causal = p.flag("causal");
    fp.smScale = p.real("sm_scale");
    fp.outType = p.dtype("out_dtype", {BF16, F32});
    fp.groups = p.integer("groups", 1);
    fp.overlap = p.flag("overlap");
    fp.mxuSize = p.target().mxuSize;
    fp.mxuCount = p.target().mxuCount;
    fp.latchV = p.flag("latch_v");
    fp.pvLag = p.integer("pv_lag", 0);
    fp.pvCarry = p.integer("pv_carry", 0);
    fp.rcpInUpdate = p.flag("rcp_in_update");
    fp.causalParts = p.integer("causal_parts", 1);
    fp.headOverlap = p.flag("head_overlap");
    fp.pvNext = p.flag("pv_next");
    fp.pvEarly = p.integer("pv_early", -1);
    fp.accSlots = p.target().accSlots;
    fp.scoreNext = p.flag("score_next");
    fp.scoreNextQ = p.flag("score_next_q");
    fp.pairQ = p.flag("pair_q");
    // Big blocks need more than the DSL's default 16 MiB; v5e has 128 MiB.
    fp.vmemLimitBytes = int64_t(96) << 20;
    LibraryKernel lk{flashAttentionCall(bh, sq, sk, d, fp),
                     flashAttentionInputs(bh, sq, sk, d, fp.groups),
                     {},
                     {}};
    if (std::string why = flashScoreNextFallback(sk, d, fp); !why.empty())
      lk.notes.push_back("flash_attention: score_next falls back to one score dot per step: " +
                         why);
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      return std::vector<std::vector<double>>{flashAttentionReference(
          in.at(0), in.at(1), in.at(2), bh, sq, sk, d, fp.causal, fp.smScale, fp.groups)};
    };
    // p is rounded to bf16 for the MXU (2^-9 relative per weight) and a bf16
    // output once more; outputs are averages of |v| < 2, errors are absolute-like.
    lk.tolerance = fp.outType == BF16 ? Tolerance{3e-2, 0.2} : Tolerance{2e-2, 0.2};
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
