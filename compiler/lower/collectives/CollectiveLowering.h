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
// Synchronization: flags the kernels never get (kFlags reserved at the top
// of core.sync_flags). The barrier (every chip `sync.remote`s every other
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
#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

// Flags reserved for the collectives (the top ones); the kernels' code
// generator gets core.sync_flags - kSpmdReservedFlags when devices > 1.
// The barrier, arrival and sent flags, and the grid all-gather's ready and
// stream flags (GridAllGather.h).
constexpr int kSpmdReservedFlags = 4 + kGridGatherStreamFlags;

inline constexpr std::string_view kRingPermuteTarget = "tpusim$ring-permute";
// The async pair of a collective-permute (the spmd-collectives pass makes
// them from collective-permute-start / -done): the start (operand x, result
// the destination buffer) runs the barrier and sends; the done (operands: the
// start, x; its result is the start's buffer) waits for the sends to leave
// and the data to arrive. Work lowered between the two runs while the
// transfer is in flight. Only one pair is in flight at a time: any other
// collective, or control flow, waits for it first (drainAsyncCollectives).
inline constexpr std::string_view kPermuteStartTarget = "tpusim$permute-start";
inline constexpr std::string_view kPermuteDoneTarget = "tpusim$permute-done";

// Is `inst` one of the primitives above?
bool isSpmdPrimitive(const hlo::HloInstruction& inst);

struct SpmdLowering {
  int64_t devices = 1;
  int syncFlags = 32;  // core.sync_flags
  // The preset and the slice the module runs on (spmdSlice); without a
  // preset every all-gather is the one-shot exchange.
  const target::ChipConfig* chip = nullptr;
  std::vector<int> slice;
  // HBM bytes of the module's own, zero-filled (for a permute's zeros).
  std::function<uint64_t(uint64_t bytes)> allocateZeros;
  // HBM bytes of the module's own, uninitialized (a collective's scratch).
  std::function<uint64_t(uint64_t bytes)> allocateScratch;
  // The async permute in flight: its SMEM tables of targets and sources and
  // the descriptors per transfer (0 when none is).
  struct Pending {
    int64_t targetWord = -1, sourceWord = -1, descriptors = 0;
  } pending;
};

// Emits the waits of the async permute in flight, if any.
void drainAsyncCollectives(ControlCode& code, SpmdLowering& spmd);

// Emits the primitive's code; throws CannotLower for what it cannot lower.
void lowerSpmdPrimitive(ControlCode& code, const hlo::HloInstruction& inst,
                        const std::vector<uint64_t>& operands, uint64_t result, SpmdLowering& spmd);

}  // namespace tpusim::lower
