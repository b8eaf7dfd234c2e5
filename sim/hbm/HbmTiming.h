// The HBM parameters the timing model uses, in HBM clock cycles, derived once
// from target::HbmConfig (isa/target/HbmConfig.h documents every field).
#pragma once

#include <cstdint>

#include "isa/target/HbmConfig.h"

namespace tpusim::sim::hbm {

enum class RefreshMode { PerBank, AllBank, None };

struct HbmTiming {
  int64_t tRCD, tCL, tCWL, tRP, tRAS, tRRD_S, tRRD_L, tFAW, tCCD_S, tCCD_L, tWR, tWTR, tRTP;
  int64_t tREFI, tRFC, tRFCsb;
  // Read-to-write turnaround on the data bus: the write's data may start one
  // idle cycle after the read data ends (tCL + burst + 1 - tCWL, at least 1).
  int64_t tRTW;
  int64_t burstCycles;  // data-bus cycles of one burst
  int64_t burstBytes;
  RefreshMode refresh;
  int64_t refreshInterval;  // cycles between refresh commands of one pseudo-channel
  int banks;                // per pseudo-channel
  int banksPerGroup, bankGroups;
  int queueDepth;
  uint32_t starvationLimit;

  static HbmTiming fromConfig(const target::HbmConfig& c);
};

}  // namespace tpusim::sim::hbm
