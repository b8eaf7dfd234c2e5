// PseudoChannel::sameFutureAs: the test that lets the fast HBM model
// (HbmModel, hbm.model = "fast") simulate two idle pseudo-channels as one.
// Every timestamp of the state is only ever compared with the current time or
// raised with max() to a time >= now, so a value <= now behaves like now
// itself: compare max(value, now), not the value.
#include <algorithm>

#include "sim/hbm/PseudoChannel.h"

namespace tpusim::sim::hbm {

bool PseudoChannel::sameFutureAs(const PseudoChannel& o) const {
  if (hasWork() || o.hasWork() || time_ != o.time_ || refreshIndex_ != o.refreshIndex_)
    return false;
  const int64_t now = int64_t(time_);
  auto live = [now](int64_t t) { return std::max(t, now); };
  // push() lowers wakeAt_ to the arrival: only a wake-up still ahead matters.
  if (live(wakeAt_) != live(o.wakeAt_)) return false;
  for (size_t i = 0; i < banks_.size(); ++i) {
    const Bank &a = banks_[i], &b = o.banks_[i];
    if (a.open != b.open || a.refreshDue != b.refreshDue || (a.open && a.row != b.row) ||
        live(a.readyAct) != live(b.readyAct) || live(a.readyPre) != live(b.readyPre) ||
        live(a.readyCol) != live(b.readyCol))
      return false;
  }
  for (size_t g = 0; g < colReadyGroup_.size(); ++g)
    if (live(colReadyGroup_[g]) != live(o.colReadyGroup_[g]) ||
        live(actReadyGroup_[g]) != live(o.actReadyGroup_[g]))
      return false;
  if (live(colReady_) != live(o.colReady_) || live(actReady_) != live(o.actReady_) ||
      live(readReady_) != live(o.readReady_) || live(writeReady_) != live(o.writeReady_))
    return false;
  // The bus binds a command only through busFree_ - tCL / - tCWL.
  const int64_t bus = now + std::min(t_.tCL, t_.tCWL);
  if (std::max(busFree_, bus) != std::max(o.busFree_, bus)) return false;
  // tFAW: entry i binds the next ACT once actCount_ + i >= 4 (it rotates to
  // the front); before that, or once in the past, it binds nothing.
  for (size_t i = 0; i < lastActs_.size(); ++i) {
    auto bound = [&](const PseudoChannel& p) {
      return p.actCount_ + i >= lastActs_.size() ? live(p.lastActs_[i] + t_.tFAW) : now;
    };
    if (bound(*this) != bound(o)) return false;
  }
  return true;
}

}  // namespace tpusim::sim::hbm
