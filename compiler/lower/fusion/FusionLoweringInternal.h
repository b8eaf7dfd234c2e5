// Internals of fusion lowering shared by its per-kind emitters (not for other
// users; FusionLowering.h is the interface).
//
// The model. A kernel walks an *index space*: the shape of the value its
// region computes (a kLoop fusion's output, a reduce's input, a dot's LHS,
// RHS or result). Every value in the region is *embedded* in that space: value
// dim j runs along space dim emb[j] (broadcasts leave space dims out, unit
// reshapes insert or drop dims). Unit space dims are dropped, and adjacent
// dims that every leaf, iota and reduce uses alike are merged into one *axis*
// (so [1, 8, 2, 64] element-wise is one [1024] axis, and a broadcast of
// f32[8] into f32[8, 128] is axes [8, 128]). The last two axes are the rows
// and lanes of the 2-D block the DSL computes on; every other axis is a grid
// axis with block 1. A leaf (a fusion parameter or an operand) becomes one
// kernel input presented with one dim per axis (the axis's size where the
// leaf varies, else 1): a view of its dense row-major bytes, so no copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/fusion/FusionLowering.h"
#include "compiler/lower/fusion/Tiling.h"
#include "kernels/dsl/PallasCall.h"

namespace tpusim::lower::detail {

namespace dsl = kernels::dsl;
using hlo::HloInstruction;

// Space dim of each value dim; -1 for a unit value dim that runs along nothing.
using Embedding = std::vector<int>;

// What one kernel lowers: the instruction, the root of what it computes
// (the fused computation's root, or the instruction itself) and its leaves.
struct ComputeGraph {
  const HloInstruction* inst = nullptr;
  const HloInstruction* root = nullptr;
  std::map<const HloInstruction*, int64_t> leafOperand;  // leaf -> HLO operand index
  bool isLeaf(const HloInstruction* i) const { return leafOperand.count(i) != 0; }
  [[noreturn]] void fail(const HloInstruction& at, const std::string& reason) const;
};

// The DSL element type of an HLO element type (pred -> BOOL), or throws.
dsl::DType dslType(const ComputeGraph& g, const HloInstruction& at, hlo::PrimitiveType t);
// The element type kernel arrays use in memory (pred -> s8).
dsl::DType memoryType(dsl::DType t);

enum class AxisRole { Lead, Row, Col };

struct Axis {
  std::vector<int> dims;  // original space dims (empty for a unit axis)
  int64_t size = 1;
  AxisRole role = AxisRole::Lead;
  int64_t block = 1;  // Row / Col: the block; Lead: 1, or the planes per step of a lead loop
  int grid = -1;      // the grid axis walking its blocks (-1: one block, index 0)
};

// One use of a leaf in a region (one kernel input).
struct LeafUse {
  const HloInstruction* leaf = nullptr;
  Embedding emb;
  int input = -1;  // kernel input index, assigned when the inputs are laid out
};

// An index space with the leaves, iotas and reduces that constrain its axes.
class Region {
 public:
  Region(const ComputeGraph& g, std::vector<int64_t> spaceDims)
      : g_(&g), dims_(std::move(spaceDims)) {}
  const std::vector<int64_t>& spaceDims() const { return dims_; }

  // Lane slices and concatenates (FusionRules.h isLaneShuffle) may occur:
  // loop fusions only. The space's last dim is then the Col axis alone, one
  // lane tile wide, and values are emitted at a lane *shift*: lane j of the
  // tile holds the value's element j - shift along that dim. A slice shifts
  // its operand by its start, a concatenate selects its operands (each at its
  // offset) by lane, and only leaves move data: one XLU lane rotation each.
  void allowLaneShuffles() { laneShufflesAllowed_ = true; }
  bool shuffled() const { return shuffled_; }
  // A dot's head epilogue (DotLowering: its result split into heads of one
  // lane tile, [.., H, 128]): the Col axis merges the heads and their lanes,
  // and a leaf that varies along the 128 lanes but not the heads (RoPE's
  // cos / sin table) is *periodic*: one 128-lane block, read for every head.
  // The epilogue is emitted one 128-lane column tile at a time (setColTile),
  // where lane shuffles work as in a loop kernel. Call before formGroupAxes.
  void allowHeadLanes() {
    laneShufflesAllowed_ = true;
    headLanes_ = true;
  }
  // Emits (loads, stores, iotas, rotations) column tile `c` of the block, 128
  // lanes wide; -1: the whole block.
  void setColTile(int64_t c) { setColWindow(c < 0 ? -1 : c * 128, 128); }
  // Emits the `width` columns of the block from column `start` (a multiple of
  // 128); start -1: the whole block. Row reductions keep their values
  // (setRowReduceValue) across windows.
  void setColWindow(int64_t start, int64_t width) {
    colStart_ = start;
    colWidth_ = start < 0 ? 0 : width;
    memo_.clear();
    loads_.clear();
  }
  // Walks `inst` at `emb` (analysis); `stop` values are not entered (a dot
  // hero seen from its epilogue). Throws CannotLower for unsupported members.
  void analyze(const HloInstruction* inst, const Embedding& emb,
               const HloInstruction* stop = nullptr);
  // The same with several stop values (sibling dots' results, one embedding).
  void analyze(const HloInstruction* inst, const Embedding& emb,
               const std::vector<const HloInstruction*>& stops);
  // Space dims that one value varies along (a reduce's kept dims, a group).
  void constrain(std::vector<int> mappedDims) { masks_.push_back(std::move(mappedDims)); }
  // A boundary no axis may cross (between role groups of a dot's space).
  void boundaryBefore(int spaceDim) { boundaries_.push_back(spaceDim); }
  // Drops unit dims and merges dims into axes; pads to >= 2 axes (unit axes
  // in front), so the last two are Row and Col.
  void formAxes();
  // One axis per group of space dims (a dot's batch / free / contracting
  // dims); throws CannotLower when a group's dims cannot merge. `what` names
  // the region in that message.
  void formGroupAxes(const std::vector<std::vector<int>>& groups, const std::string& what);
  // A space with a single row (a vector, or [1, n]) uses one sublane of
  // eight; when its lanes are at least 1024, a multiple of 128, and no iota
  // reads them, split them into rows of 128 lanes (the same dense bytes; the
  // last sublane tile may be partial, as 11008 = 86 x 128). True if it did.
  bool splitLanes();
  // A column axis merged from several dims and wider than `maxLanes` (a
  // broadcast along the leading dim stopped it from merging with the rows:
  // [B] x [S * D] for a [S, D] operand added to every batch entry) gives
  // blocks of short rows a whole column axis apart, whose DMA runs land on
  // the same few HBM channels. Its trailing dims of at least one lane tile
  // become the lanes, the others the rows, and the rows a leading axis
  // ([B] x [S] x [D]): every block is then one contiguous run. True if it did.
  bool splitWideCols(int64_t maxLanes);
  // Drops leading axes of size 1 (they only add a unit dim to every array;
  // the code generator handles rank-2 blocks best). Call after setting blocks.
  void dropUnitLeadAxes();
  // Element strides of a leaf read in place through a transpose of major dims
  // (dsl::ShapeDtype::strides); empty when the leaf is laid out in axis order.
  std::vector<int64_t> viewStrides(const HloInstruction& leaf, const Embedding& emb) const;
  std::vector<Axis>& axes() { return axes_; }
  const std::vector<Axis>& axes() const { return axes_; }
  // The axis index holding space dim d (-1 for a dropped unit dim).
  int axisOf(int d) const;
  // Is axis a mapped by a value embedded as `emb`?
  bool maps(const Embedding& emb, int a) const;
  std::vector<LeafUse>& leafUses() { return leaves_; }
  // The leaf use recorded for (leaf, emb).
  const LeafUse& leafUse(const HloInstruction* leaf, const Embedding& emb) const;
  // The kernel array shape of a value embedded as `emb`: one dim per axis.
  std::vector<int64_t> arrayShape(const Embedding& emb) const;
  // Block shape and index map of such an array (Row/Col blocks, grid ids).
  dsl::BlockSpec blockSpec(const Embedding& emb) const;
  // Serpentine order (DotLowering): the block index along grid axis `axis`
  // (of `extent` blocks) runs backwards when grid axis `parity`'s index is
  // odd, in index maps and iotas alike.
  void setSerpentine(int axis, int parity, int64_t extent) {
    serpentine_.axis = axis;
    serpentine_.parity = parity;
    serpentine_.extent = extent;
  }
  // Lag (DotLowering's pipelined epilogue): the block index along grid axis
  // `axis` is its program id minus `lag`, clamped to [0, extent - 1] (before
  // the serpentine order), in index maps and iotas alike: with one grid step
  // more than blocks, the operands clamp (lag 0) and the epilogue's arrays
  // trail one step behind (lag 1).
  void setLag(int axis, int64_t lag, int64_t extent) {
    serpentine_.lagAxis = axis;
    serpentine_.lag = lag;
    serpentine_.lagExtent = extent;
  }

  // The same for a leaf use: in a shuffled region a leaf's last dim may be
  // narrower or wider than the space's (a slice's operand, a concatenate's).
  std::vector<int64_t> leafArrayShape(const LeafUse& u) const;
  dsl::BlockSpec leafBlockSpec(const LeafUse& u) const;
  // The 2-D block uses for the VMEM estimate of the tiler.
  BlockUse blockUse(const Embedding& emb, int hbmBytes, int buffers = 2) const;

  // Emits `inst` at `emb` as a DSL array (tracing). `refs` are the kernel's
  // input refs; `hero` stands for the stop value (a dot's accumulator; with
  // several stops, hero[k] for the k-th);
  // `shift` is the lane shift (allowLaneShuffles), 0 outside shuffled regions.
  dsl::Array emit(const HloInstruction* inst, const Embedding& emb,
                  const std::vector<dsl::Ref>& refs, const dsl::Array* hero = nullptr,
                  int64_t shift = 0);
  // emit, but `inst` itself is not materialized for its several users (its
  // operands are, as emit does): for a caller that stores it once itself
  // (sibling dots' cached LHS, DotLowering.cpp).
  dsl::Array emitUnshared(const HloInstruction* inst, const Embedding& emb,
                          const std::vector<dsl::Ref>& refs);
  // A leaf ref of this region loaded as a 2-D array.
  dsl::Array load(const dsl::Ref& ref) const;
  // Stores a value into a 2-D window of `ref` (leading axes indexed 0); BOOL as s8.
  void store(const dsl::Ref& ref, const dsl::Array& value) const;
  // Stores values[k] into refs[k] (windows of one shape) in one tile loop.
  void storeTogether(const std::vector<dsl::Ref>& refs, const std::vector<dsl::Array>& values,
                     const std::vector<dsl::Ref>& accs = {},
                     const std::vector<dsl::Array>& sums = {}) const;
  // A value read by several users is left to the per-tile CSE of the store
  // that reads it (it is computed once per tile, in registers) instead of
  // being materialized in VMEM by a loop of its own: for kernels whose every
  // value is emitted by one store or store_together.
  void keepSharedInRegisters() { sharedInRegisters_ = true; }
  // Inside a loop over the planes of a leading axis whose block holds several
  // (LoopLowering): load and store index that axis with `i` in the arrays
  // whose block spans it (0 in the others).
  void setLeadLoop(int axis, dsl::Scalar i) {
    leadAxis_ = axis;
    leadIndex_ = i;
    memo_.clear();  // values traced for another index (or scope) must not be reused
    loads_.clear();
  }
  // Clips the 2-D block to its first `rows` rows and `cols` columns (0: the
  // whole block) while emitting: leaves load that window of their block and
  // iotas count that far. A dot's ragged last K block is read this way (only
  // its valid part, so nothing stale needs masking). Leaves broadcast along a
  // clipped axis are unaffected.
  void clipBlock(int64_t rows, int64_t cols) {
    clipRows_ = rows;
    clipCols_ = cols;
    memo_.clear();  // values traced at another clip (or in another scope)
    loads_.clear();
  }
  const ComputeGraph& graph() const { return *g_; }
  // Row reductions inside the region (a reduce that is not the kernel's root,
  // over the space's trailing dims, its result read back along the rows: the
  // sums an RMSNorm backward scales each row by). Each row must be one block:
  // after formAxes the reduced dims must be the Col axis, and the block must
  // span it (checkRowReduces, rowReducesWholeCols). emit computes a row
  // reduction as one lane reduction of the block's rows (emitRowReduce).
  bool hasRowReduces() const { return !rowReduces_.empty(); }
  const std::vector<const HloInstruction*>& rowReduces() const { return rowReduces_; }
  // A row reduction's value computed ahead (over column windows, in the
  // order of the reduce kernel's lane blocks): emit returns it for `inst`.
  void setRowReduceValue(const HloInstruction* inst, const dsl::Array& v) { rowValues_[inst] = v; }
  // Throws CannotLower unless the row reductions' dims are the Col axis.
  void checkRowReduces() const;
  // Throws CannotLower unless a Col block of `cols` holds a whole row.
  void rowReducesWholeCols(int64_t cols) const;
  // Where analyze met the stop value (its embedding), if it did.
  bool sawStop() const { return sawStop_; }
  const Embedding& stopEmbedding() const { return stopEmb_; }

 private:
  dsl::Array emitUncached(const HloInstruction* inst, const Embedding& emb,
                          const std::vector<dsl::Ref>& refs, const dsl::Array* hero, int64_t shift);
  void analyzeLaneShuffle(const HloInstruction* inst, const Embedding& emb);
  void analyzeRowReduce(const HloInstruction* inst, const Embedding& emb);
  std::vector<const HloInstruction*> rowReduces_;
  std::vector<int> rowReduceDims_;  // the space dims the row reductions reduce
  std::map<const HloInstruction*, dsl::Array> rowValues_;
  // Is `inst` a few plain VPU ops from the leaves (recomputed per use rather
  // than stored to VMEM and loaded back)?
  bool cheapToRecompute(const HloInstruction* inst) const;
  // Does `inst` depend on its lane shift only modulo 128 (no concatenate or
  // iota below it)?
  bool shiftIsModular(const HloInstruction* inst);
  // Does a value embedded as `emb` vary along the lanes of a shuffled region?
  bool variesAlongLanes(const Embedding& emb) const;
  int64_t leafWidth(const LeafUse& u) const;
  const ComputeGraph* g_;
  std::vector<int64_t> dims_;
  std::vector<std::vector<int>> masks_;
  std::vector<int> boundaries_;
  std::vector<int> iotaDims_;
  std::vector<LeafUse> leaves_;
  std::vector<Axis> axes_;
  std::vector<const HloInstruction*> stops_;
  bool isStop(const HloInstruction* i) const {
    return std::find(stops_.begin(), stops_.end(), i) != stops_.end();
  }
  bool sawStop_ = false;
  Embedding stopEmb_;
  std::map<std::tuple<const HloInstruction*, Embedding, int64_t>, dsl::Array> memo_;
  std::map<std::pair<const HloInstruction*, Embedding>, dsl::Array> loads_;
  std::map<const HloInstruction*, bool> modular_;
  bool laneShufflesAllowed_ = false;
  bool headLanes_ = false;
  int64_t colStart_ = -1, colWidth_ = 0;  // setColWindow (-1: the whole block)
  // A leaf of a head epilogue that varies along the lanes but not the heads.
  bool periodic(const LeafUse& u) const;
  // The lanes of the emitted 2-D frame: the Col block, or one tile (setColTile).
  int64_t frameLanes() const { return colStart_ >= 0 ? colWidth_ : axes_.back().block; }
  bool shuffled_ = false;
  bool sharedInRegisters_ = false;
  // (value, embedding) pairs analyze has walked: a shared value is walked once
  // (a long chain of word arithmetic reuses its values, so walking it as a
  // tree would take exponential time).
  std::set<std::pair<const HloInstruction*, Embedding>> analyzed_;
  int64_t clipRows_ = 0, clipCols_ = 0;  // clipBlock (0: none)
  // The extent of a Row or Col axis's block under clipBlock.
  int64_t blockExtent(const Axis& ax) const;
  int leadAxis_ = -1;
  std::optional<dsl::Scalar> leadIndex_;  // set while tracing the lead loop
  struct Serpentine {
    int axis = -1, parity = -1;
    int64_t extent = 0;
    int lagAxis = -1;
    int64_t lag = 0, lagExtent = 0;
  } serpentine_;
  // The block index of grid axis g, given the grid's program ids.
  static dsl::Scalar serpentineIndex(const Serpentine& sp,
                                     const std::function<dsl::Scalar(int)>& id, int g);
  // `ref` with every leading axis fixed (the lead loop's index, or 0).
  dsl::Ref plane(const dsl::Ref& ref) const;
};

// A transpose that keeps the minor-most dim in place: it permutes the index
// space, and the leaves below it are read through strides instead of moving
// data between tiles (XLA's transpose folding into a dot operand; in a loop
// fusion, a transpose of major dims around element-wise work). The fusion
// pass puts it into a dot's operand only directly above a kernel input.
bool isInPlaceTranspose(const ComputeGraph& g, const HloInstruction& inst);

// The embedding of an operand of `inst` (at `emb`) for the element-wise,
// broadcast, unit-reshape and in-place-transpose rules; throws CannotLower otherwise.
Embedding operandEmbedding(const ComputeGraph& g, const HloInstruction& inst, int64_t operand,
                           const Embedding& emb);
// Identity embedding of a shape of this rank.
Embedding identity(int64_t rank);

// Element-wise op emission (ElementwiseLowering.cpp): `ops` are the operand
// arrays; the result has `inst`'s element type.
dsl::Array emitElementwise(const ComputeGraph& g, const HloInstruction& inst,
                           const std::vector<dsl::Array>& ops);
// Is this element-wise opcode (with these types) one the emitter handles?
bool elementwiseSupported(const HloInstruction& inst, std::string* why);
// A scalar constant as a 1x1 array of its type.
dsl::Array emitScalarConstant(const ComputeGraph& g, const HloInstruction& inst);

// The reduction a reduce's to_apply performs: Sum, Max or Min (Max of negated).
enum class ReduceKind { Sum, Max, Min };
ReduceKind reduceKindOf(const ComputeGraph& g, const HloInstruction& reduce);

// Kernel pieces common to the emitters.
struct KernelPlan {
  const TilingTarget* target = nullptr;
  dsl::CallConfig config;
  std::vector<dsl::ShapeDtype> inputs;
  std::vector<int64_t> inputOperand;
  std::string tiling;  // LoweredKernel::tiling
};
// Adds a kernel input for every leaf use of `r` (in order), with its block spec.
void addLeafInputs(Region& r, KernelPlan& plan);
// The common finish: trace the body, name the kernel after the instruction and
// set its location from the metadata. DSL errors become CannotLower.
LoweredKernel finishKernel(const ComputeGraph& g, KernelPlan& plan, dsl::KernelBody body);

// `a` computed once into a VMEM temporary and read back (a view): a value
// used several times is then not recomputed, since DSL arrays are expression
// trees. Pred arrays (masks) cannot be stored and are returned as they are.
dsl::Array materialized(const dsl::Array& a);

// `a` broadcast to rows x cols (NumPy rules); `a` itself when it has that
// shape. Unlike dsl::broadcast_to it evaluates `a` once per tile.
dsl::Array expandTo(const dsl::Array& a, int64_t rows, int64_t cols);

// Per-kind emitters.
LoweredKernel lowerLoop(const ComputeGraph& g, const TilingTarget& t);    // LoopLowering.cpp
LoweredKernel lowerReduce(const ComputeGraph& g, const TilingTarget& t);  // ReduceLowering.cpp
// A row reduction inside a region (Region::hasRowReduces): its input's block
// rows reduced over their lanes, as a reduce kernel whose block spans the row
// reduces them (the same order, so the same bits), combined with the init.
// An f32 array with one column. ReduceLowering.cpp.
dsl::Array emitRowReduce(Region& r, const HloInstruction* reduce,
                         const std::vector<dsl::Ref>& refs);
LoweredKernel lowerDot(const ComputeGraph& g, const TilingTarget& t);  // DotLowering.cpp
bool hasDot(const ComputeGraph& g);                                    // DotLowering.cpp
// custom_call_target="tpu.NAME" (LibraryCallLowering.cpp).
bool isLibraryCall(const HloInstruction& inst);
// Built for `chip` (the chip the module is compiled for).
LoweredKernel lowerLibraryCall(const ComputeGraph& g, const kernels::codegen::TargetInfo& chip);

}  // namespace tpusim::lower::detail
