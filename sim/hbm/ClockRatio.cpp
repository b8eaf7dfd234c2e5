#include "sim/hbm/ClockRatio.h"

#include <limits>
#include <numeric>

namespace tpusim::sim::hbm {

ClockRatio::ClockRatio(uint64_t coreHz, uint64_t hbmHz) : coreHzFull_(coreHz), hbmHzFull_(hbmHz) {
  uint64_t g = std::gcd(coreHz, hbmHz);
  core_ = coreHz / g;
  hbm_ = hbmHz / g;
}

uint64_t ClockRatio::ceilMulDiv(uint64_t x, uint64_t mul, uint64_t div) {
  // 64-bit arithmetic when it cannot overflow (every realistic cycle count):
  // a 128-bit division is a library call, taken once per HBM request.
  uint64_t p64;
  if (!__builtin_mul_overflow(x, mul, &p64) && p64 <= std::numeric_limits<uint64_t>::max() - div)
    return (p64 + div - 1) / div;
  unsigned __int128 p = (unsigned __int128)x * mul;
  unsigned __int128 q = (p + div - 1) / div;
  // Saturate: "never" (UINT64_MAX) must stay "never" in either clock.
  if (q > std::numeric_limits<uint64_t>::max()) return std::numeric_limits<uint64_t>::max();
  return uint64_t(q);
}

}  // namespace tpusim::sim::hbm
