// The reduce-scatter of large chunks (custom-call "tpusim$grid-reduce-scatter",
// left by the spmd-collectives pass) as pipelined neighbour-to-neighbour
// rings, one per slice dimension the group spans, all of them busy at once,
// with the combine inside the collective:
//
//  - each member's share is cut into D parts (D = the dimensions the group
//    spans); part j is reduce-scattered along the dimensions in the order j,
//    j + 1, ... (mod D): after the phase along dimension d a chip keeps the
//    chunks whose coordinate along d is its own, reduced over d; the next
//    phase reduces those along the next dimension (the mirror of
//    GridAllGather.h, so each part uses a different dimension's links);
//  - along a wrapping dimension half of a part goes each way round the ring
//    (n - 1 steps: receive a partial sum, add this chip's contribution, pass
//    it on); along a line every partial sum flows from both ends towards its
//    owner (the left and right sums meet there);
//  - a step's block is cut into pieces of at most a few hundred KiB; each
//    piece is combined on the VPU the moment it has arrived (the arrived
//    partial sum DMAed into VMEM, this chip's contribution loaded into one of
//    two own buffers during the previous combine, a vector loop, the sum sent
//    to the neighbour straight from VMEM) while the next pieces are on the
//    wire;
//  - a partial sum is sent straight into a landing slot in its receiver's
//    VMEM (each stream has R slots there, a piece's slot its arrival number
//    mod R), so the combine reads it from VMEM and only this chip's
//    contribution is loaded from HBM (loading both, each byte received was
//    loaded twice: on v4 4x4x4 six links need ~514 B/cycle of loads). The
//    receiver returns a credit (sync.remote to the sender, a flag per
//    dimension and direction, counted cumulatively) once its combine has
//    read a slot; the sender waits for the credit of arrival n - R before it
//    sends arrival n. R is the least count for which that credit comes from
//    an action strictly earlier in the order every chip follows (plus one
//    of slack), so every wait is for an earlier action: deadlock-free by
//    construction. Streams whose slots do not fit VMEM (phase by phase,
//    first come) land in per-(phase, direction) HBM buffers of the
//    collective's own instead, as before;
//  - sends are paced per link (when the landing slots' flags are reserved):
//    each counts on the sent flag of its (dimension, direction), and waits
//    until the link's previous piece has left, so one piece at a time is on
//    each link and pieces arrive a piece's time apart (sent at once they
//    share the link and all arrive at the step's end); a ring's later
//    phases run in at least two pieces where a block's transfer is at least
//    half a hop;
//  - with paced links, where the first phase's landing slots in step order
//    (a step's pieces + 2 per stream) do not fit VMEM, every ring runs in
//    rounds (piece q's step k in round k + q): a piece is combined one round
//    after it was sent, so a stream needs about a ring's size of slots;
//  - on rings with own loads ahead a final's store is not waited for: it
//    counts on its epoch's sent flag, and a later phase's first read of
//    the work buffer drains it;
//  - there a part's results between phases stay in VMEM where they fit
//    after the phase's landing slots, every part's or none (a kept layout: the chunks over the
//    dimensions still to reduce, each the part's bytes): the finals store
//    VMEM -> VMEM, the next phase reads them there; the first phase's finals'
//    own blocks are loaded into that layout at the start, so its finals touch
//    no HBM (they came after the phase's last sends, the links idle);
//  - a chip starts once each neighbour has signalled that it is ready, as
//    the grid all-gather does.
//
// The groups must be whole sub-grids of the slice (gridGatherDims); element
// types f32, bf16 (combined in f32, rounded to bf16 after every step, as the
// reference evaluator does) and s32, ops add, multiply, maximum, minimum.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "compiler/hlo/HloOpcode.h"
#include "compiler/hlo/Shape.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/DmaDescriptor.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

inline constexpr std::string_view kGridReduceScatterTarget = "tpusim$grid-reduce-scatter";
// The custom call's attribute naming the combine (an HLO opcode name: add, maximum, ...).
inline constexpr std::string_view kGridReduceOpAttr = "tpusim_reducer";

struct GridReduceFlags {
  int ready = 0;
  int sent[2] = {0, 0};  // sends of even / odd epochs of VMEM slots
  int local = 0;
  int firstStream = 0;  // firstStream - i for stream i (GridAllGather.h's kGridGatherStreamFlags)
  // Credits of the VMEM landing slots: firstCredit - (2 x grid dimension
  // index + (direction < 0)) per (dimension, direction) of the partial sums'
  // flow (gridReduceCreditFlags of them); -1: none reserved, every piece
  // lands in HBM and the sends are not paced.
  int firstCredit = -1;
};

// Flags the rings need for their VMEM landing slots: a credit flag per grid
// dimension and direction of the flow, one counting the own pieces' loads
// (issued several actions ahead; firstCredit - 2 x gridDims), and a sent flag
// per dimension and direction (firstCredit - 2 x gridDims - 1 - the credit's
// index): each link's sends are paced on its own flag; and one counting the
// first phase's kept blocks loaded ahead (firstCredit - 4 x gridDims - 1).
inline int gridReduceCreditFlags(size_t gridDims) { return 4 * int(gridDims) + 2; }

struct GridReduce {
  DeviceGroups groups;
  std::vector<int> slice;     // the slice's dimensions
  std::vector<int> gridDims;  // slice dimensions the groups span (gridGatherDims)
  uint64_t chunk = 0;         // bytes of each member's share (the result)
  uint64_t operand = 0, result = 0;
  hlo::PrimitiveType type = hlo::PrimitiveType::F32;
  hlo::HloOpcode op = hlo::HloOpcode::Add;
  // Set: one ring over the members in this order (slots, a Hamiltonian cycle:
  // HamiltonianRing.h); slice is then {members} and gridDims {0}, and a
  // device's coordinate is its position in the ring.
  std::vector<int> ringOrder;
};

// Is (type, op) combined by the vector code here?
bool gridReduceSupports(hlo::PrimitiveType type, hlo::HloOpcode op);

// The algorithms of the primitive: the pipelined rings above, the direct
// exchange along each line for mid sizes (LineExchangeReduce.h), or the
// rings' code on one ring over a Hamiltonian cycle of a 2-D slice
// (HamiltonianRing.h).
enum class GridReduceAlgorithm { Rings, LineExchange, HamiltonianRing };

// The one with the lower estimate of those that fit.
GridReduceAlgorithm chooseGridReduce(const GridReduce& g, const target::ChipConfig& chip);

// Can either be emitted on `chip` (32-bit addresses with the scratch
// buffers, pieces that fit VMEM, parts on element boundaries)?
bool gridReduceScatterFits(const GridReduce& g, const target::ChipConfig& chip);

// Estimated cycles of the chosen one (rings: the slowest part's phases:
// steps x (hop + block / link) plus the combine of each piece).
double gridReduceScatterCycles(const GridReduce& g, const target::ChipConfig& chip);

// HBM scratch buffers the emitted code needs, each `members x chunk` bytes:
// a work buffer (the partial results between phases) and a landing buffer
// per (phase, direction).
int gridReduceScratchBuffers(const GridReduce& g);

// The slice as the grid algorithms walk it: each grid dimension's slot stride
// (the product of the later grid dimensions' sizes), the device count and
// every device's coordinates. Shared by the pipelined rings and the line exchange.
struct GridGeometry {
  std::map<int, int64_t> stride;
  int64_t devices = 0;
  std::vector<std::vector<int>> coords;
};
GridGeometry gridGeometry(const GridReduce& g);

// The descriptor of a block of `inner` bytes of each chunk over the `later`
// grid dimensions (the last one innermost), between a buffer laid out as the
// operand (a `strided` side: the dimensions' slot strides x g.chunk) and a
// dense one. Shared by the pipelined rings and the line exchange.
isa::DmaDescriptor gridChunkDescriptor(const GridReduce& g, const std::map<int, int64_t>& stride,
                                       const std::vector<int>& later, uint64_t inner,
                                       isa::MemorySpace src, isa::MemorySpace dst, bool srcStrided,
                                       bool dstStrided);

// Emits the collective; `scratch` holds gridReduceScratchBuffers addresses.
void emitGridReduceScatter(ControlCode& code, const GridReduce& g, const target::ChipConfig& chip,
                           const std::vector<uint64_t>& scratch, const GridReduceFlags& flags);

}  // namespace tpusim::lower
