// Counters one TensorCore accumulates during a run. Plain integers only: the
// stats writer (sim/chip) turns them into JSON with derived utilizations.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <vector>

#include "isa/Isa.h"
#include "sim/core/StallCause.h"

namespace tpusim::sim {

// Per debug-map op (index = DebugEntry index; the last entry is "no op").
struct OpStats {
  int64_t cycles = 0;  // cycles from each of its bundles' issue to the next issue
  int64_t bundles = 0;
  double flops = 0;       // MXU MACs * 2 plus one per element of f32 vector arithmetic
  double mxuFlops = 0;    // the MXU's share of `flops` (the rest ran on the VPU)
  int64_t vmemBytes = 0;  // vector loads and stores
  int64_t dmaBytes = 0;   // bytes of DMAs it issued
  // The HBM side of those DMAs (a DMA's bytes count where its source or
  // destination is HBM), for the profiler's roofline (sim/prof).
  int64_t hbmBytesRead = 0, hbmBytesWritten = 0;
  // Slot use, for what bounds the op: vector ALU ops, the EUP's busy cycles
  // (transcendentals), vector loads and stores.
  int64_t valuOps = 0, transcendentalBusy = 0, vldOps = 0, vstOps = 0;
  // Cycles its bundles stalled before issue, by cause (part of `cycles`).
  std::array<int64_t, kNumStallCauses> stalls{};
};

struct CoreStats {
  int64_t haltCycle = -1;  // cycle at which the halt completed
  int64_t bundlesIssued = 0;
  std::array<int64_t, kNumStallCauses> stalls{};
  // Busy cycles per unit.
  std::array<int64_t, isa::kMaxMxus> mxuLhsBusy{};     // LHS port occupied (8 per mm/mma)
  std::array<int64_t, isa::kMaxMxus> mxuWeightBusy{};  // weight port occupied
  std::array<int64_t, isa::kMaxMxus> mxuMacs{};
  int64_t valuOps = 0;  // vector ALU ops issued (each takes one slot-cycle)
  int64_t transcendentalOps = 0;
  int64_t transcendentalBusy = 0;
  int64_t xluOps = 0;
  int64_t xluBusy = 0;  // unit-cycles (summed over XLUs and the transpose unit)
  int64_t vldOps = 0, vstOps = 0;
  int64_t vmemBytesRead = 0, vmemBytesWritten = 0;
  int64_t smemAccesses = 0;
  int64_t scalarOps = 0;
  int64_t dmaIssued = 0;
  int64_t dmaBytes = 0;
  // Timing mode: branches (and loop counts) decided by a value that depends
  // on SMEM a DMA fills only in functional mode: the run's control flow, and
  // so its cycles, may differ from a functional run. The first one in words.
  int64_t unmovedSmemBranches = 0;
  std::string firstUnmovedSmemBranch;
  // Timing mode: DMAs whose descriptor (addresses, sizes) depends on such a
  // value, e.g. a gather whose row indices are an input: their addresses, and
  // so the HBM timing, may differ from a functional run.
  int64_t unmovedSmemDmas = 0;
  std::string firstUnmovedSmemDma;
  std::set<std::string> opsOnUnmovedData;  // debug-map ops of those branches and DMAs
  std::vector<OpStats> ops;                // debugMap.size() + 1 entries
};

}  // namespace tpusim::sim
