// Pieces of the attention patterns JAX emits, shared by the passes that
// match them (flash-attention: the forward; attention-backward: its gradient).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"

namespace tpusim::passes::attention {

std::vector<int64_t> iotaVec(int64_t from, int64_t to);

inline bool is(const hlo::HloInstruction* i, hlo::HloOpcode op) { return i && i->opcode() == op; }

// The users of `i` are exactly `users` (as a set).
bool usedOnlyBy(const hlo::HloInstruction* i, std::vector<const hlo::HloInstruction*> users);

// reduce(x, init) over the last dim with a region `op` of its two parameters.
bool isRowReduce(const hlo::HloInstruction* r, hlo::HloOpcode op, double init);

// broadcast(row value) back over the last dim of `full`: the row value, or null.
const hlo::HloInstruction* rowBroadcastOf(const hlo::HloInstruction* b, const hlo::Shape& full);

// pred[Sq, Sk] that is true where row >= col (two s32 iotas, or broadcasts of
// 1-D iotas, compared GE, or LE swapped).
bool isCausalPredicate(const hlo::HloInstruction* c);

// select(broadcast(causal predicate) over the last two dims of a rank-r
// array, x, broadcast(fill)): the fill value, or nullopt.
std::optional<double> causalSelectFill(const hlo::HloInstruction* sel, int64_t r);

// One bf16 pass on the MXU (DEFAULT precision).
bool isDefaultPrecision(const hlo::HloInstruction& dot);

bool isMxuFloat(hlo::PrimitiveType t);

// dot whose batch dims are the first `nb` of both operands, contracting lhs
// dim `lhsContract` (-1: its last) with rhs dim `rhsContract`, at DEFAULT precision.
bool isBatchedDot(const hlo::HloInstruction* d, int64_t nb, int64_t lhsContract,
                  int64_t rhsContract);

// x itself if bf16, else a new convert of it to bf16 (named after `base`).
hlo::HloInstruction* asBf16(hlo::HloComputation* comp, hlo::HloInstruction* x,
                            const std::string& base);

// x if `t` is transpose(x, {0, 2, 1, 3}) of a bf16 x [B, S, H, D] (what JAX
// writes after the projections' reshape, and for the gradients arriving
// from them), else null: the whole-row attention kernels read and write x's
// layout in place (their `heads` parameter).
hlo::HloInstruction* headsMajorSource(hlo::HloInstruction* t);

}  // namespace tpusim::passes::attention
