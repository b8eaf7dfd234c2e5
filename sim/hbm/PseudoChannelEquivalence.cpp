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
  return sameTimingAs(o);
}

bool PseudoChannel::sameTimingAs(const PseudoChannel& o) const {
  const int64_t now = int64_t(time_);
  auto live = [now](int64_t t) { return std::max(t, now); };
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

bool PseudoChannel::sameStateAs(const PseudoChannel& o) const {
  // Cheap differences first: this runs on leaders that take the same burst.
  // (Twins that lag each other by a burst differ in the sums of their bursts.)
  if (burstSum_ != o.burstSum_ || time_ != o.time_ || queued_ != o.queued_ ||
      refreshIndex_ != o.refreshIndex_ ||
      inbox_.size() - inboxHead_ != o.inbox_.size() - o.inboxHead_)
    return false;
  const int64_t now = int64_t(time_);
  auto live = [now](int64_t t) { return std::max(t, now); };
  if (live(wakeAt_) != live(o.wakeAt_)) return false;
  // The queue in age order: a bank's list is its entries in age order, so
  // the same age order with the same entries is the same bank lists too
  // (slot numbers and age values are only names and order).
  for (int32_t i = oldest_, j = o.oldest_; i >= 0 || j >= 0;
       i = slots_[size_t(i)].younger, j = o.slots_[size_t(j)].younger) {
    if (i < 0 || j < 0) return false;
    const Entry &a = slots_[size_t(i)], &b = o.slots_[size_t(j)];
    if (a.burst.request != b.burst.request || a.burst.bank != b.burst.bank ||
        a.burst.row != b.burst.row || a.burst.write != b.burst.write || a.bypassed != b.bypassed ||
        a.kind != b.kind)
      return false;
  }
  for (size_t k = 0; k < inbox_.size() - inboxHead_; ++k) {
    const PcBurst &a = inbox_[inboxHead_ + k], &b = o.inbox_[o.inboxHead_ + k];
    if (a.request != b.request || a.bank != b.bank || a.row != b.row || a.write != b.write ||
        a.arrival != b.arrival)
      return false;
  }
  return sameTimingAs(o);
}

}  // namespace tpusim::sim::hbm
