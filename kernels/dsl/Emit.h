// Materialization of lazy Arrays into kernel IR (internal to the DSL): tile
// loops that store an expression into a ref window, reductions, and matmuls.
#pragma once

#include <functional>

#include "kernels/dsl/ArrayNode.h"

namespace tpusim::kernels::dsl {

// A 2-D window of a VMEM ref.
struct RefWindow {
  llo::Value* ref = nullptr;
  std::vector<llo::Value*> lead;
  llo::Value* row0 = nullptr;
  llo::Value* col0 = nullptr;
  int64_t rows = 0, cols = 0;
};

// Emits the tile loop that stores `value` (broadcast to the window) into `dst`.
void emitStore(const RefWindow& dst, const NodePtr& value, const Loc& loc);
// Stores values[k] into dsts[k] (windows of one shape) in one tile loop; a node
// the values share is emitted once per tile.
// sumDsts[j] (an [8, cols] f32 window) += the row tiles of sums[j] (each of the
// windows' shape), in row order, in the same tile loop.
void emitStores(const std::vector<RefWindow>& dsts, const std::vector<NodePtr>& values,
                const Loc& loc, const std::vector<RefWindow>& sumDsts = {},
                const std::vector<NodePtr>& sums = {});
// Stores `value` into `dst` unrolled (straight-line code the scheduler can
// interleave with what follows), column tile by column tile.
void emitStoreByColumns(const RefWindow& dst, const NodePtr& value, const Loc& loc);
// A View node of `value`, emitting it into a VMEM temporary when it is not one.
NodePtr materialize(const NodePtr& value, const Loc& loc);
// The RHS of a dot whose LHS `lhs` is materialized: int8 weights widened to
// bf16 stay the s8 view (the matmul widens them in registers); anything else
// is materialized. With `scale`, int8 weights scaled per column in bf16
// (`bf16(f32(w) * f32(s))`, not transposed) also stay the s8 view and
// *scale is set to the materialized scale row (the matmul scales them in
// registers: Ops.def, matmul's scaled rhs).
NodePtr materializeDotRhs(const NodePtr& lhs, const NodePtr& rhs, const Loc& loc,
                          bool transposed = false, NodePtr* scale = nullptr);
// Appends a scale row (materializeDotRhs) to a matmul's operands and sets its
// scaled-rhs flag (ints[9]); call it before any addend is appended.
void appendMatmulScale(const NodePtr& scale, std::vector<llo::Value*>* ops,
                       std::vector<int64_t>* ints);
// Sets a matmul's lhs diagonal blocks (ints[10], DotOptions::lhs_diagonal_blocks)
// when above 1; call it after appendMatmulScale.
void appendMatmulLhsDiagonal(int64_t blocks, std::vector<int64_t>* ints);
// mxu_latch: the weights' view (materialized if need be) as an MxuLatch op.
void emitMxuLatch(const NodePtr& w, const Loc& loc);
// A new VMEM temporary (allocated at the top of the kernel).
llo::Value* allocTemp(std::vector<int64_t> shape, DType dtype);
NodePtr viewOf(llo::Value* ref, int64_t rows, int64_t cols, bool laneReplicated = false);
// inVregs (axis 1, at most 8 rows): the result stays in a register (a Tiles node).
NodePtr reduce(const NodePtr& a, llo::Reduce kind, int axis, const Loc& loc, bool inVregs = false);

// The tiles of `value` as values (row-major over tiles; a 1-row array
// broadcast to every sublane, a 1-column one to every lane), and the node
// that presents such tiles as an array again (loop-carried arrays).
// cse: a node read twice within one tile is emitted once (as for stores).
std::vector<llo::Value*> emitTiles(const NodePtr& value, bool cse = false);
NodePtr tilesNode(std::vector<llo::Value*> tiles, int64_t rows, int64_t cols, DType dtype);

// Forgets per-trace state (materialized dots); called when a trace starts.
void clearTraceCaches();

// Runs `fn` with the builder inserting into `block`, then restores it.
void inBlock(llo::Block* block, const std::function<void()>& fn);

}  // namespace tpusim::kernels::dsl
