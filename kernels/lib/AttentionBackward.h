// The backward pass of (causal) softmax attention over whole sequences, fused:
// given q, k, v and the output's gradient dO it recomputes the probabilities
//
//   P = softmax(mask(q k^T * sm_scale))                    (rows: queries)
//
// and returns dq, dk and dv as autodiff writes them:
//
//   dv = P^T dO,  dP = dO v^T,  dS = P * (dP - rowsum(dP * P)) (0 where masked) * ds_scale,
//   dq = dS k,    dk = dS^T q
//
// with P, dP and dS kept in VMEM: the materialized form writes and reads each
// [seq_q, seq_k] f32 array through HBM several times (the training step's
// attention backward, compiler pass `attention-backward`).
//
// Layout: q, dO [bh, seq_q, head_dim], k, v [bh, seq_k, head_dim], bf16
// (bh = batch * heads); outputs dq [bh, seq_q, head_dim], dk and dv [bh, seq_k,
// head_dim] in `outType`. Grid (bh / heads_per_step): each step holds its
// heads' whole [seq_q, seq_k] score arrays (no online softmax), so seq_q x seq_k
// is bounded (kAttentionBackwardMaxScores).
//
// Rounding follows the trace: scores from bf16 operands with f32 accumulation,
// the softmax in f32, P rounded to bf16 for the dv dot, dP rounded to `dpType`
// (the dO.v^T dot's result type) before the softmax backward, dS rounded to
// bf16 for the dq and dk dots. Only the row sums' order differs.
#pragma once

#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

// The kernels' lookahead with 4 or more heads per step (measured: 64 causal
// heads of 256 x 256 x 128; see AttentionBackward.cpp).
constexpr int64_t kAttentionScheduleLookahead = 6144;
// The backward's (its transposed form; 3072 / 4096 / 5120: 116.0k / 109.0k /
// 112.3k cycles, the last with a fallback: see AttentionBackward.cpp).
constexpr int64_t kAttentionBackwardScheduleLookahead = 4096;

struct AttentionBackwardParams {
  bool causal = false;
  double smScale = 0;  // 0: 1 / sqrt(head_dim)
  double dsScale = 0;  // 0: sm_scale (the chain rule through the scores' scale)
  llo::DType dpType = llo::DType::Bf16;
  llo::DType outType = llo::DType::Bf16;
  int64_t vmemLimitBytes = 0;  // 0: the DSL default
  int64_t headsPerStep = 1;    // divides bh
  // > 0: every input and output (forward: q, k, v, out; backward: q, k, v,
  // dO, dq, dk, dv) in the projections' layout [bh / heads, seq, heads *
  // head_dim] (a [batch, seq, heads, head_dim] array: the same bytes), head h
  // of a batch in columns [h d, (h + 1) d), so the transposes to [batch,
  // heads, seq, head_dim] and back are not made (head_dim a multiple of 128;
  // heads_per_step divides heads).
  int64_t heads = 0;
  // The list scheduler's lookahead (dsl::CompilerParams::schedule_lookahead;
  // 0: its default; < 0: kAttentionScheduleLookahead (the backward:
  // kAttentionBackwardScheduleLookahead) with 4 or more heads per step, whose blocks are runs of
  // whole, independent dots, each MXU's next one four dots later in program order; else the
  // default).
  int64_t scheduleLookahead = -1;
  // The forward: the step's softmax straight-line in one basic block, as work
  // the MXUs hide (dsl::OverlapWithMxu: the scheduler takes it near program
  // order), instead of loops of 8 slabs a trip (false).
  bool hideSoftmax = true;
  // With hideSoftmax: the step's score dots, softmax and output dots in one
  // basic block, so each head's output dot runs under the later heads'
  // softmax (false: the softmax in a block of its own, between the dots').
  bool oneBlock = true;
  // Two heads' score dots in one weight tile (dsl::DotOptions::
  // lhs_diagonal_blocks): with 2 head_dim = mxu.size (v6e: 128 x 2 = 256)
  // and an even heads_per_step in the projections' layout, the backward's S^T
  // and dP^T and the forward's S of heads 2i and 2i + 1 are each one dot of
  // 2 seq rows against the pair's adjacent columns (K = 2 head_dim): one dot
  // and one full weight tile per pair instead of two half-empty ones (the
  // lowering still splits its rows over two MXUs). The products are those of
  // the heads apart (the other head's half adds zeros), for finite q, k, v
  // and dO. Off by default (pair_heads=0): the 2-layer training step ran
  // slower with it (docs/performance.md, branch trainprof).
  bool pairHeads = false;
  // The backward: heads whose column softmax shares one basic block. With
  // more than one, every window's column max pass comes first in program
  // order, so the exps of the next window are ready when the transcendental
  // unit finishes one window's (v6e, 64 causal heads of 256 x 256 x 128, 8 a
  // step: 1 / 2 / 4 / 8 heads a block 100,149 / 100,354 / 97,500 / 104,712
  // cycles; v5e 131,665 / 131,983 / 129,255; v4 (32 vector registers, 2 a
  // step) 310,867 / 333,327). The registry entry's default: 4 with 64 or more
  // vector registers, else 1.
  int64_t softmaxHeads = 1;
};

// VMEM bytes one head of a grid step takes (an upper bound: scratch and blocks).
int64_t attentionBackwardVmemPerHead(int64_t seqQ, int64_t seqK, int64_t headDim);

// Scores per head the kernel takes at most (seq_q x seq_k): eight [seq_q,
// seq_k] scratch arrays (8 MiB at the bound) must fit the smallest VMEM (v4, 16 MiB).
constexpr int64_t kAttentionBackwardMaxScores = int64_t(512) * 512;

// Throws dsl::Error for a head_dim the MXU form does not take (a multiple of 8
// up to 128, or a multiple of 128), seq_k not a multiple of 128 (or below 128),
// seq_q not a multiple of 8, more than kAttentionBackwardMaxScores scores, or
// output / dP dtypes other than bf16 and f32.
dsl::PallasCall attentionBackwardCall(int64_t bh, int64_t seqQ, int64_t seqK, int64_t headDim,
                                      const AttentionBackwardParams& params = {});

// The kernel's inputs (q, k, v, do), for PallasCall::trace, in either layout
// (`heads` > 0: [bh / heads, seq, heads * head_dim]).
std::vector<dsl::ShapeDtype> attentionBackwardInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                                     int64_t headDim, int64_t heads = 0);

// Plain C++ reference in double precision (no rounding): dq, dk, dv.
std::vector<std::vector<double>> attentionBackwardReference(
    const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
    const std::vector<double>& dO, int64_t bh, int64_t seqQ, int64_t seqK, int64_t headDim,
    bool causal, double smScale, double dsScale);

// The forward over whole rows, for the same sizes: out = P v (P rounded to
// bf16 for the MXU, as the materialized trace does), in `outType`, with
// heads_per_step heads per grid step (dpType and dsScale unused). At 256 x 256
// x 128 it takes fewer cycles than the online-softmax flash kernel, whose
// single kv block pays the online rescaling for nothing.
dsl::PallasCall attentionForwardCall(int64_t bh, int64_t seqQ, int64_t seqK, int64_t headDim,
                                     const AttentionBackwardParams& params = {});

// The forward's inputs (q, k, v) in either layout (`heads` > 0: [bh / heads,
// seq, heads * head_dim]).
std::vector<dsl::ShapeDtype> attentionForwardInputs(int64_t bh, int64_t seqQ, int64_t seqK,
                                                    int64_t headDim, int64_t heads);

// Registry entry "attention_forward" (custom call tpu.attention_forward).
KernelEntry attentionForwardEntry();

// Registry entry "attention_backward" (tpu-kernel, custom call tpu.attention_backward).
KernelEntry attentionBackwardEntry();

}  // namespace tpusim::kernels::lib
