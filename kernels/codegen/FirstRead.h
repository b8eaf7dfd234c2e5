// How a kernel's body first reads an input block, as the lowering waits for
// a block that arrives in parts (Lowerer::Arrival): whether that first read
// waits for some of the block's rows only (a matmul operand or a vector load
// at a constant row), so the body starts on the first parts while the rest is
// in flight. Splitting a block whose first read waits for all of it only
// moves the step's wait into the body and lets the block's copy share HBM
// with the other streams' first copies (CopyPlan.h arrivalParts).
#pragma once

#include <functional>

#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

// Whether `op` or an op nested in its regions has a ref operand for which
// `touched` holds. A loop or one-sided `if` none of whose refs is a block
// still arriving in parts waits for none of them (Lowerer::lowerIf,
// lowerOp): nothing in it reads them, so the waits stay where the reads are.
bool touchesRef(const llo::Op& op, const std::function<bool(const llo::Value*)>& touched);

// Whether the body's first read of the block of `m` (one of k.inMaps) waits
// for only some of its rows. `firstStep`: the read at the grid's first step
// (a block copied once arrives only then): a two-sided `if` is followed
// into the branch the first step takes. Conservative: false where the
// lowering's waits are not known from the IR.
bool firstReadByRows(const llo::Kernel& k, const llo::BlockMapping& m, bool firstStep);

// Whether the body's first read of the block of `m` (CopyPlan.h entriesBlock)
// is a matmul operand at a constant leading entry before its last, which
// waits for the parts of entries up to that one only.
bool firstReadByEntries(const llo::Kernel& k, const llo::BlockMapping& m);

// Whether every read of the block of `m` (one of k.inMaps) at the grid's
// first step takes rows before `rowEnd` only (its row indices known there;
// both branches of an `if` whose condition is not): its later rows are not
// needed before the second step. Conservative: false where not known.
bool firstStepReadsWithin(const llo::Kernel& k, const llo::BlockMapping& m, int64_t rowEnd);

}  // namespace tpusim::kernels::codegen
