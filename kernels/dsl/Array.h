// Array values of the DSL (what a Pallas kernel computes with `x_ref[...]`).
// An Array is a lazy 2-D expression over ref windows: element-wise math,
// broadcasts, casts, selects. Nothing is emitted until an array is needed in
// memory: a store into a ref, a dot, or a reduction; then the whole element-wise
// expression is emitted tile by tile ((8,128) vregs), so chains of element-wise
// ops stay in registers. Shapes broadcast as in NumPy between (R,C), (R,1),
// (1,C) and (1,1).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/dsl/Scalar.h"

namespace tpusim::kernels::dsl {

using llo::DType;
constexpr DType F32 = DType::F32;
constexpr DType BF16 = DType::Bf16;
constexpr DType S32 = DType::S32;
constexpr DType S8 = DType::S8;
constexpr DType BOOL = DType::Pred;
// f16 computes in f32 like bf16; in memory and tiles it is the low 16 bits of
// each 32-bit word. Its converts are short VPU sequences (no convert instruction).
constexpr DType F16 = DType::F16;
// s16, u16 and u8 compute in s32 (sign- or zero-extended); in memory and tiles
// they are the low bits of each 32-bit word, and results wrap to those bits.
constexpr DType S16 = DType::S16;
constexpr DType U16 = DType::U16;
constexpr DType U8 = DType::U8;

struct ArrayNode;

class Array {
 public:
  Array() = default;
  explicit Array(std::shared_ptr<const ArrayNode> n) : node_(std::move(n)) {}
  int64_t rows() const;
  int64_t cols() const;
  std::vector<int64_t> shape() const { return {rows(), cols()}; }
  DType dtype() const;
  const std::shared_ptr<const ArrayNode>& node() const { return node_; }
  bool valid() const { return node_ != nullptr; }

  Array astype(DType to, Loc loc = Loc::here()) const;

 private:
  std::shared_ptr<const ArrayNode> node_;
};

// Element-wise arithmetic (f32 and s32; bf16 computes in f32 and rounds back).
// Division is x * (1/y) on the machine's reciprocal, as the VPU computes it.
Array operator+(const Array& a, const Array& b);
Array operator-(const Array& a, const Array& b);
Array operator*(const Array& a, const Array& b);
Array operator/(const Array& a, const Array& b);
Array operator-(const Array& a);
Array operator+(const Array& a, double b);
Array operator-(const Array& a, double b);
Array operator*(const Array& a, double b);
Array operator/(const Array& a, double b);
Array operator+(double a, const Array& b);
Array operator-(double a, const Array& b);
Array operator*(double a, const Array& b);
// Compares give BOOL arrays (vector masks).
Array operator<(const Array& a, const Array& b);
Array operator<=(const Array& a, const Array& b);
Array operator>(const Array& a, const Array& b);
Array operator>=(const Array& a, const Array& b);
Array operator==(const Array& a, const Array& b);
Array operator!=(const Array& a, const Array& b);
Array operator&(const Array& a, const Array& b);  // BOOL and, or s32 bitwise and
Array operator|(const Array& a, const Array& b);
Array operator^(const Array& a, const Array& b);  // s32 bitwise xor
// s32 shifts by the low 5 bits of `amount` (the VPU's vshl / vshr / vsra).
Array shift_left(const Array& a, const Array& amount);
Array shift_right_logical(const Array& a, const Array& amount);
Array shift_right_arithmetic(const Array& a, const Array& amount);
// The same 32-bit words as another dtype (f32 <-> s32 <-> f16 bits), no instruction.
Array bitcast(const Array& a, DType to);

Array maximum(const Array& a, const Array& b);
Array minimum(const Array& a, const Array& b);
Array where(const Array& cond, const Array& a, const Array& b);
Array exp(const Array& a);
Array log(const Array& a);
Array tanh(const Array& a);
Array sqrt(const Array& a);
Array rsqrt(const Array& a);
Array reciprocal(const Array& a);
Array abs(const Array& a);

// Constants and indices.
Array full(int64_t rows, int64_t cols, double value, DType dtype = F32);
Array zeros(int64_t rows, int64_t cols, DType dtype = F32);
Array splat(Scalar s, int64_t rows, int64_t cols);  // s32 array of a scalar
Array iota(int64_t rows, int64_t cols, int axis);   // s32 row (axis 0) or column (axis 1) index
Array broadcast_to(const Array& a, int64_t rows, int64_t cols);
// Lane rotation inside one (8,128) tile (the XLU's lane rotate, pltpu.roll on
// lanes): an (R, C) array with C <= 128 becomes (R, cols), cols <= 128, whose
// column j holds column (j - shift) mod 128 of a's tile. Columns whose source
// lies at or past C hold whatever a's tile holds there (unspecified): callers
// select them away (a concatenate of lane slices, as RoPE's rotate-half).
Array roll_lanes(const Array& a, int64_t shift, int64_t cols);

// Reductions keep the reduced axis as size 1 (keepdims): axis 1 (lanes) gives
// (R,1), axis 0 (sublanes) gives (1,C). Order (bit-exact, shared by interpret
// mode and the machine): column tiles (resp. row tiles) are combined element-wise
// in increasing order, then the XLU lane tree (resp. the sublane rotate tree
// 4, 2, 1) finishes inside the tile.
Array sum(const Array& a, int axis, Loc loc = Loc::here());
Array max(const Array& a, int axis, Loc loc = Loc::here());

// Values in vector registers (what a Pallas kernel holds between `x_ref[...]`
// and a store): in_vregs(a) computes `a` now, tile by tile, into at most
// kMaxVregTiles registers and returns an array over them, so an array read by
// several stores is computed once and never goes through VMEM. The registers
// belong to the block that computed them: use the array in the same `when` /
// loop body, addressed by whole rows (a window of 8 rows at a run-time offset
// is one row tile). sum_vregs / max_vregs: sum(a, 1) / max(a, 1) of at most 8
// rows (the same order), kept in a register instead of a VMEM temporary.
constexpr int64_t kMaxVregTiles = 16;
Array in_vregs(const Array& a, Loc loc = Loc::here());
Array sum_vregs(const Array& a, Loc loc = Loc::here());
Array max_vregs(const Array& a, Loc loc = Loc::here());

// Matrix product on the MXUs: bf16 x bf16 -> f32 or s8 x s8 -> s32. With
// transpose_lhs / transpose_rhs the operands are given as (K,M) / (N,K): a
// transposed RHS is the MXU's transposed weight load, a transposed LHS goes
// through the transpose unit into VMEM beside the MXU work (not with resident
// results).
// Accumulation order: see isa/README.md (k order in chunks of the MXU size).
// A dot whose results stay in the MXU result slots across grid steps (the K
// blocks of a matmul): Keep leaves them there (no pops, so the step does not
// wait for the MXU to drain), Store also pops them into the ref at the end.
// `continue_in_mxu` goes on from the slots' values instead of starting at
// zero: interpret mode keeps them in the ref, which is defined on the machine
// only after a Store step. Only as `ref.store(dot(...))`.
enum class MxuResident { None, Keep, Store };

//
// Weights kept on the MXUs (bf16, not transposed): mxu_latch(w) pushes K chunk
// c (mxu.size rows) of the K x N weights onto MXU c and latches it, once; a
// dot with `latched` then streams its LHS through those weights with no
// pushes (so a loop can issue small dots against weights latched before it)
// and adds the chunks' results in k order on the VPU, the MXU's own order.
// The latched weights last until the next dot without `latched` (across grid
// steps too): interpret mode reads them from its model of the MXUs, so a
// dot between mxu_latch and a latched dot is an error there. Needs N <=
// mxu.size = 128 lanes and K <= mxu.count x mxu.size (codegen checks).
struct DotOptions {
  bool transpose_lhs = false;
  bool transpose_rhs = false;
  MxuResident resident = MxuResident::None;
  bool continue_in_mxu = false;
  bool latched = false;
  // latched_earlier (with latched): the weights were latched in an earlier
  // grid step and no matmul since pushed others (the flash kernel's deferred
  // p x V). The code generator checks mxu_latch before a latched dot in
  // program order; it cannot see a grid step's order, so it trusts this
  // flag, and interpret mode checks the order at run time.
  bool latched_earlier = false;
  // lhs_by_columns: an LHS that must be computed into VMEM first (a fused
  // prologue, not a plain view) is stored unrolled, column tile by column
  // tile (the order in which the MXU's K chunks read it), in the matmul's
  // basic block: the matmul's first K chunk waits for its column only and the
  // scheduler overlaps the rest of the VPU work with the MXU work, instead of
  // the whole prologue (a loop) preceding the MXU. Only for
  // `ref.store(dot(...))` / `ref += dot(...)` without a transposed LHS or
  // resident results; the numbers are the same.
  bool lhs_by_columns = false;
  // lhs_into: a computed LHS is stored into this VMEM ref (rank 2, the LHS's
  // shape and type; by columns with lhs_by_columns) instead of a temporary,
  // for later dots to read it from there (a row's cached prologue: computed
  // once, by columns under the first dot's MXU work, not in a loop before it).
  // A view LHS (read as it is) is copied into it.
  llo::Value* lhs_into = nullptr;
  // lhs_diagonal_blocks G > 1: the LHS a [M, K] stands for the block-diagonal
  // [G M, K] whose row block g is a with every K column outside [g K / G,
  // (g + 1) K / G) zero; the result has G M rows, block g = a's columns of
  // block g times the weights' rows of block g. G products of K / G deep (e.g.
  // two heads' scores, K = 2 x head_dim) share one weight tile and its
  // pushes, streaming G M LHS rows: under a longer stream an MXU hides the
  // next tile's transposed pushes, which wait mxu.size cycles after a latch.
  // The zero columns add products of 0 (+0 or -0, so the same sums for finite
  // weights; an infinite or NaN weight of another block makes NaNs, as on
  // the MXU). A plain bf16 dot: no transposed LHS, not latched or resident.
  int64_t lhs_diagonal_blocks = 1;
};
Array dot(const Array& a, const Array& b, DotOptions options = {}, Loc loc = Loc::here());
void mxu_latch(const Array& w, Loc loc = Loc::here());

// While alive, the element-wise work traced is VPU work an MXU matmul traced
// before it in the same basic block may hide: its ops are marked
// llo::Op::overlap (the scheduler lets them fill the bundle slots the MXU
// stream leaves instead of holding the stream back) and its row tiles are
// unrolled (a row loop would end the basic block). A dot kernel's epilogue of
// the previous output block runs this way under the next block's matmul
// (compiler/lower/fusion/DotLowering.cpp). Nests; the numbers are the same.
class OverlapWithMxu {
 public:
  OverlapWithMxu();
  ~OverlapWithMxu();
  OverlapWithMxu(const OverlapWithMxu&) = delete;
  OverlapWithMxu& operator=(const OverlapWithMxu&) = delete;

 private:
  bool saved_;
};

// While alive, store_together of unrolled row tiles (OverlapWithMxu) walks the
// column tiles outermost: a dot's result columns are complete MXU by MXU
// (LowerMatmul deals the N tiles round-robin to the MXUs), its rows only after
// the last N tile, so an epilogue traced after its own dot may start on the
// first round's columns while the MXUs stream the next round. Row tiles of a
// loop keep the row-major walk. Nests; the numbers are the same.
class EpilogueByColumns {
 public:
  EpilogueByColumns();
  ~EpilogueByColumns();
  EpilogueByColumns(const EpilogueByColumns&) = delete;
  EpilogueByColumns& operator=(const EpilogueByColumns&) = delete;
};

}  // namespace tpusim::kernels::dsl
