// Dot epilogues with several outputs (run by multi-output-fusion, after its
// sibling merges): an element-wise kernel that reads the results of a dot
// kernel (or of two sibling dot kernels: one LHS value, RHS operands of one
// shape) joins them as their epilogue. The merged kernel runs the dots, then
// computes every output of the element-wise kernel from the dots' results in
// VMEM, and also writes a dot's result where other kernels still read it:
//   - the forward SwiGLU silu(g) * u after the gate and up projections, whose
//     g and u the backward pass keeps: one kernel writes g, u and the product
//     (g and u are not read back from HBM);
//   - the SwiGLU backward's two products after the dot that computes their
//     common factor dh (dh is neither written nor read back).
// The element-wise kernel's values are computed in the dots' shape (the
// dot-canonicalized [1, M, N] of a [B, S, N] result: the same dense bytes);
// its other operands of its own shape are read through bitcast views.
// Conditions (general, no shapes or names):
//   - the dot kernels are plain (a dot, or a fusion whose root is the dot:
//     operand prologues allowed) of float types, their results of the
//     element-wise kernel's element count and last dim, default layouts, an
//     LHS laid out [batch, rows, contracting], results no smaller than the
//     weights (not a decode's weight-bound dots);
//   - the element-wise kernel is float element-wise work, broadcasts of
//     scalars or of rows along the last dim, scalar constants (no compares
//     or selects: a dot epilogue keeps shared values in registers);
//   - none of its other operands depends on the dots (a cycle);
//   - the merged kernel has several outputs (the element-wise kernel's, or a
//     dot result kept): a single epilogue is the fusion pass's decision.
#pragma once

#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

class NameTable;

// Merges every such group of `comp`; true if it merged any.
bool mergeDotEpilogueOutputs(hlo::HloModule& module, hlo::HloComputation& comp, NameTable& names);

}  // namespace tpusim::passes
