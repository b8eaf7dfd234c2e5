// The fusion pass (`fusion`): cuts each computation that runs on the chip (the
// entry, while bodies and conditions, conditional branches, call targets) into
// fusion instructions as XLA does, printed as XLA prints them:
//   %fusion = f32[8,128]{1,0} fusion(%p0, %p1), kind=kLoop, calls=%fused_computation
//
// Instructions are visited consumers first (reverse post order); each fusible
// consumer pulls its operands' producers in, one at a time, while FusionRules.h
// allows it and the cost model agrees:
//   - a reduce is only ever the root of its fusion (kInput); a dot/convolution
//     fuses its element-wise consumers (kOutput) and, into its operands, data
//     movement and converts, or arithmetic that few output blocks re-read: a
//     dot's LHS producer runs once per column block (N / bn), an RHS producer
//     once per row block (M / bm), and weight x (re-reads - 1) must stay within
//     maxDuplication (so weight dequantization fuses at decode, M = 1), or the
//     recomputation must cost fewer VALU cycles than the HBM round trip of the
//     producer's result it saves (FusionCostModel.h, recomputeBeatsHbmRoundTrip:
//     SwiGLU's sigmoid joins the down projection);
//     one hero (dot, convolution or reduce) per fusion;
//   - an expensive producer (recomputeWeight > 1: exp, divide, ...) is not fused
//     through a broadcast that would recompute it per output element;
//   - a producer with users outside the fusion is duplicated only if
//     weight x (number of other users) <= maxDuplication (default 3: an add may
//     go into 4 fusions, an exp into one only, a dot or reduce is never copied),
//     or (maxDuplication > 0) where the copy costs no HBM time: a cheap op
//     (weight <= 1) whose operands are no more bytes than its result (a
//     bf16 -> f32 convert), or an expensive one whose EUP work, with the
//     kernel's, stays within the kernel's HBM cycles plus the read it saves;
//   - the fusion's VMEM working set (FusionCostModel.h) must fit
//     vmemFraction x the chip's VMEM;
//   - a fusion holds at most maxInstructions instructions (compile time).
// Parameters, control flow, custom-calls, collectives and the rest of
// FusionRules.h's barriers never fuse, so no fusion crosses them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/lower/TargetDescription.h"
#include "compiler/passes/FusionCostModel.h"
#include "compiler/passes/HloPass.h"

namespace tpusim::passes {

struct FusionConfig {
  lower::TargetDescription target;
  int64_t maxDuplication = 3;  // weight x extra copies a duplicated producer may cost
  double vmemFraction = 1.0;   // the share of the chip's VMEM one fusion may use
  // Instructions one fusion may hold. Each fusing step looks at the whole
  // fusion (cost model, VMEM estimate), so without a bound a chain of n
  // element-wise ops compiles in O(n^2); with it, in O(n). Real fusions are
  // far smaller (XLA bounds fusion size for the same reason).
  int64_t maxInstructions = 256;
  // Sibling dots and their combiner as one kernel (SiblingDots.h; off by
  // default, PassOptions::fusionSiblingDots).
  bool siblingDots = false;
  // A dot split into 128-lane heads takes its element-wise and lane-shuffle
  // consumers (FusionRules.h isDotLaneSplit; PassOptions::fusionHeadEpilogues).
  bool headEpilogues = false;
};

struct FusionDecision {
  bool fused = false;
  std::string producer, producerOpcode;  // the instruction considered
  std::string consumer;                  // the fusion (or instruction) it would join
  std::string root;                      // that fusion's root instruction
  // Why it was refused; when fused "", or what made it fuse (sibling dots).
  std::string reason;
};

struct FusionSummary {
  std::string name, kind, root, computation;
  int64_t instructions = 0, operands = 0;
  VmemEstimate vmem;
};

struct FusionResult {
  std::string module, chip;
  int64_t vmemBudget = 0;
  std::vector<FusionDecision> decisions;  // in the order they were made
  std::vector<FusionSummary> fusions;     // every fusion the run created
  int64_t refusals() const;
  // The decisions, the fusions and a summary line, one item per line.
  std::string report() const;
};

// A fusion pass for an explicit configuration. If `result` is given, each run
// stores its decisions there (it must outlive the pass).
std::unique_ptr<HloPass> createFusionPass(FusionConfig config, FusionResult* result = nullptr);

}  // namespace tpusim::passes
