// Machine code of the SPMD primitives every collective is expanded into (the
// spmd-collectives pass, compiler/passes/SpmdCollectives.cpp): every chip
// runs the same code and finds its own part in per-device SMEM tables indexed
// by `chip.id`.
//
//  - partition-id, replica-id, custom-call "tpusim$device-id": chip.id into
//    the 4-byte result.
//  - collective-permute (one array): after a barrier, a source `dma.remote`s
//    its operand into its target's result buffer (the same HBM address on
//    every chip); a device no pair targets gets zeros.
//  - custom-call "tpusim$ring-permute" (one array [2, ...], source_target_pairs
//    a ring: every device one source and one target): row 0 goes to the
//    target's row 0, row 1 to the source's row 1, both at once, after a
//    handshake with the two neighbours instead of a barrier (each tells the
//    devices that send to it that it is ready, and sends once both it sends
//    to are).
//  - all-gather along dimension 0 (one array; the one-shot exchange): after a
//    barrier, every member `dma.remote`s its operand to slot `position` of
//    every other member's result and copies it into its own.
//  - custom-call "tpusim$grid-reduce-scatter" (operand [n, k]: row p is the
//    contribution to member p's share; result [1, k]: this member's reduced
//    share; attribute tpusim_reducer=add|multiply|maximum|minimum;
//    replica_groups): the pipelined per-dimension rings with the combine on
//    the VPU (GridReduceScatter.h).
//
// Synchronization: flags the kernels never get (spmdReservedFlags, at the
// top of core.sync_flags). The barrier (every chip `sync.remote`s every other
// chip's barrier flag, then waits for n - 1) makes sure that no data of a
// collective arrives before its receiver has finished everything before it
// (so the result buffer is free, and the arrival flag counts only this
// collective's transfers): a chip passes barrier k only once every chip has
// reached it, so counting on one flag across barriers is safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

// Flags reserved for the collectives (the top ones of core.sync_flags; the
// kernels' code generator gets the rest): none without a primitive that
// synchronizes; else the barrier, arrival, sent, ready, async-copy and
// ring-ready flags, kAsyncSlotFlags per async slot after the first
// (spmdAsyncSlots), plus the
// stream flags of the largest grid (2 D^2 for D slice dimensions,
// GridAllGather.h) an all-gather or grid reduce-scatter of the module can
// take. compileModule and ModuleLowerer both reserve this many.
constexpr int kSpmdBaseFlags = 6;
int spmdReservedFlags(const hlo::HloModule& module, const target::ChipConfig& chip);

inline constexpr std::string_view kRingPermuteTarget = "tpusim$ring-permute";
// The async pairs (the spmd-collectives pass makes them from
// collective-permute-start / -done, and inside the expansion of an
// all-gather-start / all-reduce-start / reduce-scatter pair: its all-gathers,
// its ring steps' permutes and ring permutes). The start (operand x, result
// the destination buffer) runs the barrier (the ring permute: its handshake)
// and issues the sends; the done (operands: the start, x; its result is the
// start's buffer; one target for every start) waits for the sends to leave
// and the data to arrive. Work lowered between the two runs while the
// transfer is in flight (LoweringOrder.h puts the independent work there).
// Up to kMaxAsyncInFlight pairs are in flight at once, each on a slot of
// flags of its own (a start with every slot busy waits for the oldest pair
// first); any other collective, or control flow, waits for all of them
// (drainAsyncCollectives). An all-gather start the estimate gives the grid
// rings sends the first blocks (GridAllGather.h, beginGridAllGather); its
// done forwards the rest, which needs the scalar unit for every block.
inline constexpr std::string_view kPermuteStartTarget = "tpusim$permute-start";
inline constexpr std::string_view kRingPermuteStartTarget = "tpusim$ring-permute-start";
inline constexpr std::string_view kPermuteDoneTarget = "tpusim$permute-done";
inline constexpr std::string_view kAllGatherStartTarget = "tpusim$all-gather-start";
inline constexpr std::string_view kAllGatherDoneTarget = "tpusim$all-gather-done";
constexpr int kMaxAsyncInFlight = 3;
// Flags of each async slot after the first (which uses the base flags).
constexpr int kAsyncSlotFlags = 4;
// Slots of flags the module's async pairs get (1..kMaxAsyncInFlight; 1 with
// fewer than two async starts in a computation).
int spmdAsyncSlots(const hlo::HloModule& module);

// Is `inst` one of the primitives above?
bool isSpmdPrimitive(const hlo::HloInstruction& inst);

struct SpmdLowering {
  int64_t devices = 1;
  int syncFlags = 32;     // core.sync_flags
  int reservedFlags = 0;  // spmdReservedFlags: the top ones are the collectives'
  int asyncSlots = 1;     // spmdAsyncSlots
  // The preset and the slice the module runs on (spmdSlice); without a
  // preset every all-gather is the one-shot exchange.
  const target::ChipConfig* chip = nullptr;
  std::vector<int> slice;
  // HBM bytes of the module's own, zero-filled (for a permute's zeros).
  std::function<uint64_t(uint64_t bytes)> allocateZeros;
  // HBM bytes of the module's own, uninitialized (a collective's scratch).
  std::function<uint64_t(uint64_t bytes)> allocateScratch;
  // The async pairs in flight, oldest first: their start, slot of flags,
  // the sends to wait for and the arrivals, on the devices whose entry in the
  // SMEM table of targets / of sources is set (every device when the word is
  // -1), and the local copies.
  struct Pending {
    const hlo::HloInstruction* start = nullptr;
    int slot = 0;
    int64_t targetWord = -1, sourceWord = -1, sends = 0, arrivals = 0, copies = 0;
    // A grid all-gather's forwarding and waits (beginGridAllGather), emitted
    // first; only one grid pair is in flight (they share the stream flags).
    std::function<void(ControlCode&)> rest;
  };
  std::vector<Pending> pending;
};

// Emits the waits of every async pair in flight.
void drainAsyncCollectives(ControlCode& code, SpmdLowering& spmd);
// Emits the waits of the pair `start` began, if it is in flight.
void finishAsyncCollective(ControlCode& code, SpmdLowering& spmd, const hlo::HloInstruction* start);

// Emits the primitive's code; throws CannotLower for what it cannot lower.
void lowerSpmdPrimitive(ControlCode& code, const hlo::HloInstruction& inst,
                        const std::vector<uint64_t>& operands, uint64_t result, SpmdLowering& spmd);

}  // namespace tpusim::lower
