// The share of the HBM peak a block DMA of strided runs reaches, derived from
// the preset's HBM organisation (hbm.address_mapping and address_hash, bank
// groups, row size) and timing (tCCD_S / tCCD_L, tRRD_S, tFAW, tRAS + tRP),
// for the tiling model's pricing of a dot's operand blocks.
//
// A block of `rows` runs of `run` bytes, `stride` bytes apart, is cut into
// bursts and each burst located by the machine model's address map
// (isa/target/HbmAddressMap.h, the one the HBM model uses). Each pseudo-channel's
// bursts, in the order the DMA issues them, are taken in windows of the bursts
// the DMA keeps in flight per pseudo-channel (dma.max_outstanding_requests x
// dma.request_bytes / bursts / pseudo-channels): a window costs the largest of
//  - its bursts x max(tCCD_S, one burst on the bus): the data bus;
//  - the bursts of its busiest bank group x tCCD_L: one bank group alone
//    serves half the bus on the real-chip presets (a 1 KiB run on v5e's
//    4 KiB line reaches one bank group per pseudo-channel: 50%);
//  - its row activations x max(tRRD_S, tFAW / 4), and its busiest bank's
//    activations x (tRAS + tRP): runs that open a DRAM row each;
// and a block takes its busiest pseudo-channel's time (channels a run does not
// reach idle), times the share refresh leaves (1 - tRFCsb / tREFI per bank). The efficiency is the
// block's bytes over that time at the peak, averaged over the first few N blocks of the row (block
// j starts at j x run: their runs meet other bank groups). Measured against the simulator
// (tpusim-hbm-bench --pattern dma-block; docs/performance.md, "hbmbg").
#pragma once

#include <cstdint>
#include <memory>

#include "isa/target/DmaConfig.h"
#include "isa/target/HbmAddressMap.h"
#include "isa/target/HbmConfig.h"

namespace tpusim::kernels::tiling {

class HbmRunModel {
 public:
  // Throws std::invalid_argument naming the field for a malformed hbm.address_mapping.
  HbmRunModel(const target::HbmConfig& hbm, const target::DmaConfig& dma);
  // In (0, 1]; memoized (process-wide, thread-safe).
  double efficiency(int64_t run, int64_t stride, int64_t rows) const;

 private:
  double compute(int64_t run, int64_t stride, int64_t rows) const;
  target::AddressMap map_;
  uint32_t pseudoChannels_ = 1, banksPerGroup_ = 1;
  size_t pcs_ = 1, groups_ = 1, banks_ = 1;
  double colS_ = 2, colL_ = 4, act_ = 7, rowCycle_ = 76, busBytes_ = 16, refresh_ = 1;
  int64_t window_ = 64;  // bursts per pseudo-channel in flight
  uint64_t key_ = 0;     // the parameters, for the memo
};

}  // namespace tpusim::kernels::tiling
