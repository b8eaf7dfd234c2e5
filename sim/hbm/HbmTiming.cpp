#include "sim/hbm/HbmTiming.h"

#include <algorithm>

namespace tpusim::sim::hbm {

HbmTiming HbmTiming::fromConfig(const target::HbmConfig& c) {
  HbmTiming t{};
  t.tRCD = c.tRCD;
  t.tCL = c.tCL;
  t.tCWL = c.tCWL;
  t.tRP = c.tRP;
  t.tRAS = c.tRAS;
  t.tRRD_S = c.tRRD_S;
  t.tRRD_L = c.tRRD_L;
  t.tFAW = c.tFAW;
  t.tCCD_S = c.tCCD_S;
  t.tCCD_L = c.tCCD_L;
  t.tWR = c.tWR;
  t.tWTR = c.tWTR;
  t.tRTP = c.tRTP;
  t.tREFI = c.tREFI;
  t.tRFC = c.tRFC;
  t.tRFCsb = c.tRFCsb;
  t.burstCycles = c.burstCycles();
  t.burstBytes = c.burst_bytes;
  t.tRTW = std::max<int64_t>(1, c.tCL + t.burstCycles + 1 - c.tCWL);
  t.bankGroups = int(c.bank_groups);
  t.banksPerGroup = int(c.banks_per_group);
  t.banks = t.bankGroups * t.banksPerGroup;
  t.refresh = c.refresh == "all_bank" ? RefreshMode::AllBank
              : c.refresh == "none"   ? RefreshMode::None
                                      : RefreshMode::PerBank;
  t.refreshInterval =
      t.refresh == RefreshMode::PerBank ? std::max<int64_t>(1, c.tREFI / t.banks) : c.tREFI;
  t.queueDepth = int(c.queue_depth);
  t.starvationLimit = uint32_t(c.starvation_limit);
  return t;
}

}  // namespace tpusim::sim::hbm
