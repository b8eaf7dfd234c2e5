// Exact conversion between core cycles and SystemC time. Cycle c starts at
// floor(c * 1e12 / clockHz) ps; the cycle of a time T is the first cycle that
// starts at or after T, so cycleAtOrAfter(timeOf(c)) == c for every c.
#pragma once

#include <systemc>

#include <cstdint>

namespace tpusim::sim {

class CycleClock {
 public:
  explicit CycleClock(double clockHz) : hz_(static_cast<unsigned __int128>(clockHz)) {}

  sc_core::sc_time timeOf(int64_t cycle) const {
    unsigned __int128 ps = static_cast<unsigned __int128>(cycle) * kPsPerSecond / hz_;
    return sc_core::sc_time::from_value(static_cast<uint64_t>(ps * psTicks()));
  }
  int64_t cycleAtOrAfter(const sc_core::sc_time& t) const {
    unsigned __int128 ps = t.value() / psTicks();
    return static_cast<int64_t>((ps * hz_ + kPsPerSecond - 1) / kPsPerSecond);
  }
  int64_t now() const { return cycleAtOrAfter(sc_core::sc_time_stamp()); }

 private:
  static constexpr unsigned __int128 kPsPerSecond = 1000000000000ull;
  // SystemC time ticks per picosecond (1 with the default 1 ps resolution).
  static uint64_t psTicks() {
    return static_cast<uint64_t>(sc_core::sc_time(1, sc_core::SC_PS).value());
  }
  unsigned __int128 hz_;
};

}  // namespace tpusim::sim
