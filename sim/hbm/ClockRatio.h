// Exact conversion between core cycles and HBM clock cycles. Both clocks are
// taken as whole numbers of Hz and the ratio is kept as a reduced fraction, so
// conversions are exact integer arithmetic (no floating point drift over long
// runs): cycle c of a clock starts at time c / f.
#pragma once

#include <cstdint>

namespace tpusim::sim::hbm {

class ClockRatio {
 public:
  ClockRatio(uint64_t coreHz, uint64_t hbmHz);

  // The first HBM cycle that starts at or after core cycle `core` starts.
  uint64_t hbmAtOrAfterCore(uint64_t core) const { return ceilMulDiv(core, hbm_, core_); }
  // The first core cycle that starts at or after HBM cycle `hbm` starts.
  uint64_t coreAtOrAfterHbm(uint64_t hbm) const { return ceilMulDiv(hbm, core_, hbm_); }

  uint64_t coreHz() const { return coreHzFull_; }
  uint64_t hbmHz() const { return hbmHzFull_; }

 private:
  static uint64_t ceilMulDiv(uint64_t x, uint64_t mul, uint64_t div);

  uint64_t core_, hbm_;  // reduced: hbm_/core_ = hbmHz/coreHz
  uint64_t coreHzFull_, hbmHzFull_;
};

}  // namespace tpusim::sim::hbm
