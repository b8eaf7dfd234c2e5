// Flash attention (the Pallas TPU kernel's algorithm): out = softmax(q k^T * scale
// [+ causal mask]) v without materializing the [seq_q, seq_k] scores.
//
// Layout: q [bh, seq_q, head_dim], k and v [bh / groups, seq_k, head_dim], all
// bf16, where bh = batch * heads (a [batch, heads, seq, head_dim] array
// reshaped: the same bytes). Grouped-query attention: `groups` consecutive q
// heads share one K/V head (q head h reads K/V head h / groups), as q
// [batch, kv_heads, groups, seq, head_dim] does. Output [bh, seq_q, head_dim] in
// `outType` (bf16 as Pallas, or f32).
//
// Grid (bh, seq_q / block_q, seq_k / block_k), kv innermost and "arbitrary",
// the other two "parallel". Per q block the kernel keeps in VMEM scratch the
// running row max m and row sum l (as [block_q, 128], every lane holding the
// row's value) and an f32 accumulator [block_q, head_dim]; each kv block
// rescales them by exp(m_old - m_new) (online softmax). Causal: query row i
// sees key columns j <= i (rows and columns counted from 0 in both
// sequences, as Pallas's flash attention); kv blocks entirely above the diagonal
// are skipped (no compute, `when`) and their index_map is clamped to the last
// block the q block needs, so the pipeline does not copy them either; with
// pairQ the grid pairs q blocks i and nq - 1 - i instead and has no such steps.
//
// Ragged sequences (seq not a multiple of the block) are masked: key columns
// past seq_k get the mask value, their v rows are zeroed (edge-block padding is
// undefined), query rows past seq_q are computed and clipped on write-back.
#pragma once

#include <functional>
#include <optional>

#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

struct FlashAttentionParams {
  // block_q: a multiple of 8 (or >= seq_q: one block). block_k: a multiple of
  // 128 (or >= seq_k < 128: one block). Both shrink to the sequence when larger.
  int64_t blockQ = 128, blockK = 128;
  bool causal = false;
  double smScale = 0;  // 0: 1 / sqrt(head_dim)
  llo::DType outType = llo::DType::Bf16;
  int64_t vmemLimitBytes = 0;  // 0: the DSL default (16 MiB)
  int64_t groups = 1;          // q heads per K/V head (divides bh)
  // Overlap the MXU phases with the softmax (OnlineSoftmax::updateChunked)
  // where the blocks allow it; needs mxuSize (the target's mxu.size: p x V's
  // K split must be the MXU's own chunks for the same output bits; 0 =
  // unknown, no overlap).
  bool overlap = false;
  int64_t mxuSize = 0;
  // V latched on the MXUs once per unmasked step (K chunk c on MXU c; its
  // pushes overlap the score dot) and p x V as dots through it
  // (dsl::mxu_latch, DotOptions::latched): no V pushes after the slab loop.
  // Only where block_k = mxu.count x 128 (mxuSize 128, mxuCount the target's
  // mxu.count): every MXU then holds one chunk.
  // pvLag > 0: p x V inside the slab loop, each pipelined iteration adding
  // that of the group pvLag groups back (slower so far: its mms' result
  // latency then lengthens every trip of the loop).
  bool latchV = false;
  int64_t pvLag = 0;
  // pvCarry > 0: p x V in the slab loop with pvCarry iterations per trip,
  // each starting its group's p x V in its own slot set (dsl::mxu_start) at
  // its end and popping the set's previous results (dsl::mxu_finish) one
  // trip later, across the loop's back edge.
  int64_t pvCarry = 0;
  int64_t mxuCount = 0;
  // 1 / l computed at the end of every step where the EUP idles (the p x V
  // drain) rather than in the last step's finish (OnlineSoftmax::rcpInUpdate).
  bool rcpInUpdate = true;
  // Causal with block_q = block_k and V latched: the diagonal step's rows in
  // this many parts, each over the keys up to its last row only
  // (OnlineSoftmax::updateDiagonal; 1: off).
  int64_t causalParts = 2;
  // OnlineSoftmax::headOverlap.
  bool headOverlap = true;
  // p x V of a step below the diagonal (V latched, not the q block's last
  // step) in the next step's first basic block, before its score dot
  // (OnlineSoftmax::pvDefer / pvPrev): the MXUs stream it while K^T's
  // pushes go to the weight staging, and the softmax's first slabs overlap
  // its pops instead of the MXUs idling during the slab loop's tail.
  // Slower so far (docs/performance.md, branch `flashpp`): off.
  bool pvNext = false;
  // p x V of the rows whose weights the score dot's block finishes (its head
  // iterations) started on the MXUs at that block's end (dsl::mxu_start, V
  // latched) and popped after the slab loop (OnlineSoftmax::pvEarlyRows): the
  // MXUs stream them while the loop keeps the EUP busy. -1: as many rows as
  // the result slots hold (accSlots x 8); 0: off.
  int64_t pvEarly = -1;
  int64_t accSlots = 0;
  // The next step's scores computed in this one (V latched, seq_k a
  // multiple of block_k, two K/V blocks or more, K's whole head within a
  // quarter of the VMEM limit, not the experimental pvLag / pvCarry / pvNext
  // / overlap): the K rows of the whole head stay in VMEM (one block of seq_k
  // rows, copied once per K/V head), the scores in two buffers by step
  // parity, and an unmasked step's one basic block starts with the next
  // step's score dot (q x K block kv + 1) while the softmax of its own, made
  // one step before, fills the bundle slots the MXU stream leaves: the EUP no
  // longer waits for the score dot's pushes, stream and result latency. The
  // first step of a q block makes its own scores first; a causal masked step
  // after an unmasked one finds its scores made but makes none.
  // flashScoreNextFallback says why the path is not taken.
  bool scoreNext = false;
  // With scoreNext, an even number of K blocks (causal: block_q = block_k
  // and the diagonal in parts, its last part making them), two q blocks or
  // more: q comes as one block of the head's seq_q rows (copied once per
  // head, within a quarter of the VMEM limit) and a q block's last step
  // makes the next q block's first scores (its q rows x K block 0) while its
  // softmax runs, so that first step no longer waits for its own score dot.
  // The q grid axis is then sequential (arbitrary). flashScoreNextQ says
  // whether the path is taken.
  bool scoreNextQ = false;
  // Causal, block_q = block_k, seq_q = seq_k a multiple of block_q, an even
  // number nq of q blocks: grid axis 1 counts pairs of q blocks (i, nq - 1 -
  // i), axis 2 the pair's nq + 1 steps (q block i's kv blocks 0 .. i, then
  // q block nq - 1 - i's 0 .. nq - 1 - i): every step computes, none is
  // skipped above the diagonal (each skipped step's grid header idled the
  // EUP), and the diagonal's next q block is the pair's second or the next
  // pair's first. flashPairsQ says whether the grid is paired.
  bool pairQ = false;
};

// Whether flashAttentionCall pairs the q blocks (pairQ).
bool flashPairsQ(int64_t seqQ, int64_t seqK, const FlashAttentionParams& params);

// Whether flashAttentionCall takes the scoreNextQ path.
bool flashScoreNextQ(int64_t seqQ, int64_t seqK, int64_t headDim,
                     const FlashAttentionParams& params);

// Why flashAttentionCall does not take the scoreNext path for these sizes
// and parameters although params.scoreNext asks for it (one line); empty
// when it takes it or scoreNext is off. tpu-kernel reports it as a note.
std::string flashScoreNextFallback(int64_t seqK, int64_t headDim,
                                   const FlashAttentionParams& params);

// Throws dsl::Error for an unsupported head_dim (64 or 128 ... any multiple of 8
// up to 128, or a multiple of 128), block sizes breaking the rules above, or
// an output dtype other than bf16/f32.
dsl::PallasCall flashAttentionCall(int64_t bh, int64_t seqQ, int64_t seqK, int64_t headDim,
                                   const FlashAttentionParams& params = {});

// The kernel's input shapes and names (q, k, v), for PallasCall::trace.
std::vector<dsl::ShapeDtype> flashAttentionInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                                  int64_t headDim, int64_t groups = 1);

// The online-softmax state both attention kernels keep in VMEM scratch, for
// `rows` query rows, `cols` key columns per grid step and head_dim `d`:
// m, l, alpha [rows, 128] f32 (row values replicated over the lanes), acc
// [rows, d] f32, s and p [rows, cols] f32, pb [rows, cols] bf16 (p for the
// MXU). Up to 1024 columns alpha and p stay in vector registers (their
// scratch is unused). cols: at most 128, or a multiple of 128; d: at most 128, or a multiple
// of 128.
struct OnlineSoftmax {
  static std::vector<dsl::ScratchSpec> scratch(int64_t rows, int64_t cols, int64_t d);
  // The refs of scratch() in order, as the kernel body receives them.
  OnlineSoftmax(const std::vector<dsl::Ref>& refs, int64_t rows, int64_t cols, int64_t d);

  // Turns raw scores q.k of the rows [row0, row0 + raw.rows()) and columns
  // [col0, col0 + raw.cols()) of the step into the scores the
  // softmax sees: scaled, and kMaskValue where a key is not visible. Applied
  // lazily wherever the scores are read, so it costs VPU work, not a VMEM pass.
  // An invalid Array: no key of the window is visible to any of the rows
  // (weights 0; the register form's slabMax / slabRest then make no exps
  // for it; other readers must not get one).
  using ScoreFn = std::function<dsl::Array(const dsl::Array& raw, dsl::Scalar row0, int64_t col0)>;

  void init() const;  // m = -inf, l = 0, acc = 0, s = 0
  // One step: raw scores q [rows, d] x k [cols, d]^T on the MXU (accumulated
  // into s: a dot inside an element-wise expression would be re-emitted per row
  // tile), then the online-softmax update with v [cols, d] bf16 (rows of
  // undefined data zeroed by the caller).
  // scoreOnce: apply `score` in one pass over the raw scores, stored back, instead
  // of wherever they are read (for costly masks; blocks of more than 1024 key
  // columns only: narrower ones keep a slab's scores in registers, and
  // scoreOnce, the mark of a costly mask, unrolls their slab loop less).
  // latchV (the register form, v a plain view of `cols` rows, cols / 128 <=
  // the MXUs, mxu.size 128; masked steps too): v is latched on the MXUs
  // after the score dot (dsl::mxu_latch) and p x V streams through it (a
  // latched dot: the same bits as the plain dot). pvLag > 0: each iteration of the pipelined slab
  // loop adds p x V of the group pvLag groups before its own to acc (mms and
  // pops within the iteration); the groups the loop does not reach follow it.
  void update(const dsl::Array& q, const dsl::Array& k, const ScoreFn& score, const dsl::Array& v,
              bool scoreOnce = false, bool latchV = false, int64_t pvLag = 0,
              int64_t pvCarry = 0) const;
  // update's register form with the MXU phases overlapped: the step's rows go
  // in chunks of `chunk` rows (a multiple of 32), and one basic block
  // holds the scores of chunk c + 1 (on the MXUs), the softmax of chunk c
  // (the EUP) and p x V of chunk c - 1 (on the MXUs), so the scheduler runs
  // them side by side. p x V is one dot per `kSplit` keys (the MXU size: one
  // K chunk each, on different MXUs), their results added in k order, which
  // is the MXU's own accumulation order, so the output bits equal update's.
  // vRows(k0, w): rows [k0, k0 + w) of v.
  // Needs cols <= 1024 and rows a multiple of chunk, at least two chunks.
  // Slower than update so far (the list scheduler does not keep the EUP busy
  // in so large a block: docs/performance.md, branch `flashov`): opt-in.
  void updateChunked(const dsl::Ref& q, const dsl::Ref& k, const ScoreFn& score,
                     const std::function<dsl::Array(int64_t k0, int64_t w)>& vRows, int64_t chunk,
                     int64_t kSplit) const;
  // update's register form with V latched, for a causal diagonal step whose
  // first query row is its first key (block_q = block_k): the rows in
  // `parts` parts, part i over the keys [0, (i + 1) cols / parts) only (the
  // others are after all of its rows: their weights are exp(mask - m) = 0,
  // so pb gets zeros, and skipping them leaves m's and l's bits as they were).
  // Each part is its own pipelined slab loop; makeScore makes the step's
  // ScoreFns (once, after the score dot): the masked one and the scale alone
  // (sharing its hoisted registers), which part i > 0 applies to the key
  // windows before its first row (visible to all its rows: no compares).
  void updateDiagonal(const dsl::Array& q, const dsl::Array& k,
                      const std::function<std::pair<ScoreFn, ScoreFn>()>& makeScore,
                      const dsl::Array& v, int64_t parts) const;
  static bool diagonalFits(int64_t rows, int64_t cols, int64_t parts) {
    return parts >= 1 && rows == cols && cols % (128 * parts) == 0 && cols <= 1024 &&
           (rows / parts) % (8 * kPipelinedSlabs) == 0 && rows / parts >= 8 * kPipelinedSlabs * 3;
  }
  static bool chunkedFits(int64_t rows, int64_t cols, int64_t chunk) {
    return cols <= 1024 && chunk % (8 * kPipelinedSlabs) == 0 && rows % chunk == 0 &&
           rows / chunk >= 2;
  }
  // out = acc / l, cast to the ref's dtype (acc * alpha with rcpInUpdate).
  void finish(const dsl::Ref& out) const;
  // Every update (and updateChunked) ends with alpha = 1 / l, and finish
  // multiplies acc by alpha: the reciprocals run in the step's last basic
  // block, where the EUP idles while p x V drains, instead of in finish's
  // loop, which they bound (the same bits: finish's product is unchanged).
  bool rcpInUpdate = false;
  // The slab loop's first iterations in the score dot's block, up to V's
  // latch, marked as VPU work the dot hides (dsl::OverlapWithMxu).
  bool headOverlap = false;
  // Deferred p x V (FlashAttentionParams::pvNext): pvDefer, this step leaves
  // its p x V to the next one (V stays latched, pb and acc hold it; update's
  // latched register form only); pvPrev valid, the step before did: update
  // and updateDiagonal first add its pb x V through the latched weights
  // (pvPrev is a view of V's shape for the latched dot; its values are not
  // read).
  bool pvDefer = false;
  dsl::Array pvPrev;
  // Up to this many rows (a multiple of 32) of p x V started at the end of
  // the score dot's block, from the rows its head iterations finished, into
  // slot set 0 (mxu_start) and popped into acc after the slab loop
  // (mxu_finish): the same sum in the same order, so the same bits (update's
  // latched register form without in-loop p x V only; 0: off).
  int64_t pvEarlyRows = 0;
  // FlashAttentionParams::scoreNext: s already holds this step's raw scores
  // (update and updateDiagonal skip their score dot), and nextScores, if
  // set, emits the next step's score dot (into another buffer) first in the
  // step's first basic block.
  bool scoresReady = false;
  std::function<void()> nextScores;
  // The diagonal step (updateDiagonal) of a causal q block with a next one
  // (scoreNextQ): emits the next q block's first score dot at the start of
  // the step's last part, whose slabs it hides (V is latched after it).
  std::function<void()> nextQScores;
  // The diagonal step (updateDiagonal) of a causal q block, its last: the
  // output (finish's out = acc x alpha) written in the step's last block,
  // after 1 / l, where p x V's pops drain (rcpInUpdate).
  std::optional<dsl::Ref> finishTo;
  // The q block's first step with m, l and acc not initialized (init
  // skipped): the register form writes them without reading them (the
  // row max of the scores alone, l = the row sum, acc = 0): the bits m =
  // -inf, l = 0, acc = 0 gave (max(-inf, x) = x, 0 x 0 + sum = sum), no
  // alpha exps, no init stores. update's latched register form only.
  bool fresh = false;
  // A later step of these rows follows (this one makes its scores): its
  // 1 / l overwrites this one's, which update's latched register form then
  // skips (rcpInUpdate).
  bool laterStep = false;

  // A large finite negative (as Pallas's DEFAULT_MASK_VALUE): a row whose
  // columns are all masked gets exp(0) weights that a later rescale removes,
  // never inf - inf = NaN.
  static constexpr double kMaskValue = -0.7 * 3.4028234663852886e38;

  dsl::Ref m, l, alpha, acc, s, p, pb;
  int64_t rows, cols, d;

 private:
  // The register form over part of the step (updateDiagonal): rows
  // [rowOff, rowOff + rows) and, of each, the key windows [0, liveCols) (0:
  // all; pb's columns from liveCols on get zeros); partHead: the slab loop's
  // iterations in the block before it (-1: the usual count); partOverlap:
  // those iterations are work the MXU's dot in that block hides
  // (dsl::OverlapWithMxu), as in an unmasked step.
  int64_t rowOff = 0, liveCols = 0, partHead = -1;
  bool partOverlap = false;
  int64_t live() const { return liveCols > 0 ? liveCols : cols; }
  static constexpr int64_t kSlabsPerIteration = 8;
  // Slabs per iteration of the software-pipelined register loop: 4 keep its
  // three groups' values (12 carried vregs and the working set) within the
  // register file; 8 made the scheduler hold values back (+40% cycles).
  static constexpr int64_t kPipelinedSlabs = 4;
  void forSlabs(const std::function<void(dsl::Scalar r0, int64_t n)>& fn) const;
  dsl::Array slabMax(const ScoreFn& score, dsl::Scalar r0, int64_t n) const;
  std::pair<dsl::Array, dsl::Array> slabRest(const ScoreFn& score, dsl::Scalar r0, int64_t n,
                                             const dsl::Array& mNext) const;
  void slabL(dsl::Scalar r0, int64_t n, const dsl::Array& psum, const dsl::Array& alphaV) const;
  // masked: `score` masks (its per-slab scalars limit the loop's unrolling).
  // pv(r0, n): p x V of rows [r0, r0 + n) added to acc (null: none in the loop).
  using PvFn = std::function<void(dsl::Scalar r0, int64_t n)>;
  // latch: emitted after the first kLatchAfter of the loop's iterations in
  // the score dot's block (after all of them if fewer), before the loop.
  void slabsInVregs(const ScoreFn& score, bool masked, const PvFn& pv = nullptr, int64_t pvLag = 0,
                    int64_t pvCarry = 0, const std::function<void()>& latch = nullptr) const;
  static constexpr int64_t kLatchAfter = 3;
  void reciprocalL() const;
  void previousPv() const;
  void scoreDot(const dsl::Array& q, const dsl::Array& k, bool nextLater) const;
  void chunkSoftmax(const ScoreFn& score, int64_t r0, int64_t rows) const;
};

// Plain C++ reference in double precision: the same layout, values as doubles.
std::vector<double> flashAttentionReference(const std::vector<double>& q,
                                            const std::vector<double>& k,
                                            const std::vector<double>& v, int64_t bh, int64_t seqQ,
                                            int64_t seqK, int64_t headDim, bool causal,
                                            double smScale = 0, int64_t groups = 1);

// Registry entry "flash_attention" (tpu-kernel, custom call tpu.flash_attention).
KernelEntry flashAttentionEntry();

}  // namespace tpusim::kernels::lib
