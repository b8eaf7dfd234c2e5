// Counters of the HBM model. Cycles are HBM clock cycles.
#pragma once

#include <cstdint>

namespace tpusim::sim::hbm {

struct HbmChannelStats {
  uint64_t readBursts = 0, writeBursts = 0;
  uint64_t bytesRead = 0, bytesWritten = 0;  // whole bursts moved on the data bus
  uint64_t busyCycles = 0;                   // data-bus cycles (summed over pseudo-channels)
  // Per burst, what its bank needed when the scheduler first served it:
  uint64_t rowHits = 0;       // the row was already open
  uint64_t rowMisses = 0;     // the bank was closed: activate
  uint64_t rowConflicts = 0;  // another row was open: precharge + activate
  uint64_t activates = 0, precharges = 0;
  uint64_t refreshes = 0;      // refresh commands (per-bank or all-bank)
  uint64_t refreshCycles = 0;  // bank-cycles spent refreshing (tRFCsb or tRFC each)

  void add(const HbmChannelStats& o) {
    readBursts += o.readBursts;
    writeBursts += o.writeBursts;
    bytesRead += o.bytesRead;
    bytesWritten += o.bytesWritten;
    busyCycles += o.busyCycles;
    rowHits += o.rowHits;
    rowMisses += o.rowMisses;
    rowConflicts += o.rowConflicts;
    activates += o.activates;
    precharges += o.precharges;
    refreshes += o.refreshes;
    refreshCycles += o.refreshCycles;
  }
};

}  // namespace tpusim::sim::hbm
