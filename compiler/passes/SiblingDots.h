// Sibling dots (horizontal fusion of dots that share their LHS), which the
// fusion pass makes into one kOutput fusion before it grows the others.
//
// Two dots are siblings when they read the same LHS value with the same
// dimension numbers, and have the same result shape and RHS shape (a SwiGLU
// FFN's gate x.w1 and up x.w3). They form a group when their results feed
// only an element-wise combiner with one result: following the users of
// every value that escapes (the two dots, then the combiner's members),
// element-wise ops of the dots' dims join until exactly one member's result
// is used outside (silu(g) * u); views that add or drop unit dims join too.
// The combiner's other operands must not
// depend on the dots (the kernel would form a cycle).
//
// One kernel then reads the LHS block once, runs both dots into two
// accumulators and applies the combiner as its epilogue, writing one result
// (compiler/lower/fusion/DotLowering.cpp); the dots' results never reach
// HBM. Priced by the tiling model (kernels/tiling/Tiling.h): the pair is
// fused when the sibling kernel (two RHS blocks and two accumulators per
// step, TilingTarget::dotRhsCount) plus its consumer's read of the result
// costs fewer cycles than the two dot kernels plus their consumer's reads of
// both results; for dots whose steps wait for their weights (M = 1), when it
// also saves more HBM bytes than the second first weight block it exposes;
// and not when its blocks fit VMEM only with more K blocks than one dot's.
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/TargetDescription.h"

namespace tpusim::passes {

struct SiblingDotGroup {
  std::vector<hlo::HloInstruction*> dots;      // in program order
  std::vector<hlo::HloInstruction*> combiner;  // element-wise, in program order
  hlo::HloInstruction* root = nullptr;         // the combiner's result (its last member)
  double fusedCycles = 0, separateCycles = 0;  // the tiling model's prices
};

struct SiblingDotRefusal {
  std::vector<std::string> dots;  // the pair's names
  std::string reason;
};

// The groups of `comp` (un-fused instructions), each dot in at most one.
// `refusals` (may be null) gets the sibling pairs with a combiner that the
// cost model kept apart.
std::vector<SiblingDotGroup> findSiblingDotGroups(const hlo::HloComputation& comp,
                                                  const lower::TargetDescription& target,
                                                  std::vector<SiblingDotRefusal>* refusals);

}  // namespace tpusim::passes
