// HbmModel::mergeTwinLeaders (hbm.model = "fast"): a "busy merge" of groups.
// The parts of one channel line that came in different cycles are groups of
// their own (PcGroups.h), and idle groups merge again only when both are
// idle (sameFutureAs). Groups that keep taking the same bursts, though, are
// often in the same state while busy too (the twins of docs/performance.md,
// "simspeed5"): the same queue, burst for burst and request for request, and
// the same timing. Such a pair does exactly the same from now on given the
// same bursts, and a burst issued by the merged group counts for both
// groups' members at once (HbmModel::advanceTo, issueRunBurst), as two
// issues in the same cycle did; so one leader simulates both.
#include <algorithm>

#include "sim/hbm/HbmModel.h"

namespace tpusim::sim::hbm {

bool HbmModel::mergeTwinLeaders(const std::vector<uint32_t>& leaders) {
  twins_.clear();
  bool merged = false;
  for (uint32_t l : leaders) {
    bool twin = false;
    for (uint32_t kept : twins_)
      if (pcs_[kept].time() == pcs_[l].time() && pcs_[kept].hasWork() == pcs_[l].hasWork() &&
          pcs_[kept].sameStateAs(pcs_[l])) {
        groups_.merge(kept, l, pcs_);
        if (isActive_[l]) {
          // Its bursts are the kept leader's now (advanceTo must not issue them twice).
          isActive_[l] = 0;
          active_.erase(std::lower_bound(active_.begin(), active_.end(), l));
        }
        twin = merged = true;
        break;
      }
    if (!twin) twins_.push_back(l);
  }
  return merged;
}

}  // namespace tpusim::sim::hbm
