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
  // Field by field, modulo 2^64 (so that a - b + b == a for any a, b).
  HbmChannelStats minus(const HbmChannelStats& o) const {
    HbmChannelStats d = *this;
    d.readBursts -= o.readBursts;
    d.writeBursts -= o.writeBursts;
    d.bytesRead -= o.bytesRead;
    d.bytesWritten -= o.bytesWritten;
    d.busyCycles -= o.busyCycles;
    d.rowHits -= o.rowHits;
    d.rowMisses -= o.rowMisses;
    d.rowConflicts -= o.rowConflicts;
    d.activates -= o.activates;
    d.precharges -= o.precharges;
    d.refreshes -= o.refreshes;
    d.refreshCycles -= o.refreshCycles;
    return d;
  }
};

}  // namespace tpusim::sim::hbm
