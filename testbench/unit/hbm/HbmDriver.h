// Test helper: drives an HbmModel like a DMA engine would, keeping up to
// `window` requests in flight and submitting the next one the cycle after a
// completion frees a slot. Returns every completion in order.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/hbm/HbmModel.h"

namespace tpusim::sim::hbm::test {

struct DriveResult {
  std::vector<HbmCompletion> completions;
  uint64_t lastCycle = 0;  // cycle of the last completion
};

inline DriveResult drive(HbmModel& model, const std::vector<uint64_t>& addresses, uint32_t bytes,
                         bool write, size_t window, uint64_t start = 0) {
  DriveResult r;
  size_t next = 0, inFlight = 0;
  std::vector<HbmCompletion> done;
  uint64_t now = std::max(start, model.now());
  model.advanceTo(now, done);
  while (next < addresses.size() || inFlight > 0) {
    while (next < addresses.size() && inFlight < window) {
      model.submit(HbmRequest{next, addresses[next], bytes, write, now});
      ++next;
      ++inFlight;
    }
    done.clear();
    uint64_t t = model.nextEventCycle();
    model.advanceTo(t + 1, done);
    now = t + 1;
    for (const HbmCompletion& c : done) {
      r.completions.push_back(c);
      r.lastCycle = c.cycle;
      --inFlight;
    }
  }
  return r;
}

inline std::vector<uint64_t> sequential(uint64_t base, uint64_t count, uint64_t stride) {
  std::vector<uint64_t> a(count);
  for (uint64_t i = 0; i < count; ++i) a[i] = base + i * stride;
  return a;
}

}  // namespace tpusim::sim::hbm::test
