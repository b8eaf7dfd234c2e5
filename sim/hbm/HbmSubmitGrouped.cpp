// HbmModel::submitGrouped: how the fast model (hbm.model = "fast") hands a
// request's bursts to groups of pseudo-channels (PcGroups.h). Pseudo-channels
// that get the same bursts form a class; a group must lie within one class
// before it gets them (else it splits), so that its members stay identical.
#include <algorithm>
#include <stdexcept>

#include "sim/hbm/HbmModel.h"

namespace tpusim::sim::hbm {

void HbmModel::submitGrouped(uint32_t slot, const HbmRequest& r, uint64_t arrival) {
  // The request's bursts by pseudo-channel, each one's in burst order.
  // (Elements are filled in place: building a struct on the stack and
  // copying it in stalls on store forwarding, a measurable cost per burst.)
  const uint64_t burst = map_.burstBytes();
  const uint64_t first = r.address / burst, last = (r.address + r.bytes - 1) / burst;
  if (submitChannelLine(slot, r, arrival, first, last)) return;
  touches_.resize(size_t(last - first + 1));
  BurstLocation loc = map_.locate(first * burst);
  bool sorted = true, oneBankRow = true;
  for (size_t k = 0; k < touches_.size(); ++k, map_.next(loc)) {
    Touch& t = touches_[k];
    t.pc = burstAt(loc, slot, r.isWrite, arrival, &t.burst);
    if (k > 0) {
      const Touch& p = touches_[k - 1];
      sorted = sorted && p.pc < t.pc;  // also: no pseudo-channel twice
      oneBankRow = oneBankRow && p.burst.bank == t.burst.bank && p.burst.row == t.burst.row;
    }
  }
  if (!sorted)
    std::stable_sort(touches_.begin(), touches_.end(),
                     [](const Touch& a, const Touch& b) { return a.pc < b.pc; });
  touched_.clear();
  for (uint32_t i = 0; i < touches_.size(); ++i) {
    if (touched_.empty() || touched_.back().pc != touches_[i].pc) {
      TouchedPc& t = touched_.emplace_back();
      t.pc = touches_[i].pc;
      t.begin = i;
      t.cls = 0;
    }
    touched_.back().end = i + 1;
  }

  // The steady state of a stream: one burst per pseudo-channel, all alike
  // (same bank, hence bank group, and row), to exactly the members of one
  // group. Nothing splits, nothing can merge (one leader is touched): what
  // the general path below does, without its bookkeeping.
  if (sorted && oneBankRow) {
    const uint32_t leader = groups_.leader(touched_[0].pc);
    bool exact = groups_.size(leader) == touched_.size();
    for (size_t i = 1; exact && i < touched_.size(); ++i)
      exact = groups_.leader(touched_[i].pc) == leader;
    if (exact) {
      pcs_[leader].push(touches_[0].burst);  // the same burst for every member
      requests_[slot].remaining += groups_.size(leader);
      activate(leader);
      return;
    }
  }

  // Classes. Kind, arrival and request are the request's: compare bank and row.
  classFirst_.clear();
  if (sorted && oneBankRow) {  // the common case: one burst per pseudo-channel, all alike
    classFirst_.push_back(0);
    for (const TouchedPc& t : touched_) classOf_[t.pc] = 0;
  } else {
    auto same = [&](const TouchedPc& a, const TouchedPc& b) {
      if (a.end - a.begin != b.end - b.begin) return false;
      for (uint32_t i = 0; i < a.end - a.begin; ++i) {
        const PcBurst &x = touches_[a.begin + i].burst, &y = touches_[b.begin + i].burst;
        if (x.bank != y.bank || x.row != y.row) return false;
      }
      return true;
    };
    for (uint32_t i = 0; i < touched_.size(); ++i) {
      TouchedPc& t = touched_[i];
      uint32_t c = 0;
      while (c < classFirst_.size() && !same(touched_[classFirst_[c]], t)) ++c;
      if (c == classFirst_.size()) classFirst_.push_back(i);
      t.cls = c;
      classOf_[t.pc] = int32_t(c);
    }
  }

  // Split every touched group that is not within one class.
  const uint64_t stamp = requests_[slot].sequence;
  for (const TouchedPc& t : touched_) {
    uint32_t leader = groups_.leader(t.pc);
    if (seen_[leader] == stamp) continue;
    seen_[leader] = stamp;
    splitUneven(leader);
  }
  for (uint32_t c = 0; c < classFirst_.size(); ++c) {
    mergeIdle(c);
    mergeTwins(c);
  }

  for (const TouchedPc& t : touched_) {
    if (!groups_.isLeader(t.pc)) continue;
    for (uint32_t i = t.begin; i < t.end; ++i) pcs_[t.pc].push(touches_[i].burst);
    requests_[slot].remaining += groups_.size(t.pc) * (t.end - t.begin);
    activate(t.pc);
  }
  for (const TouchedPc& t : touched_) classOf_[t.pc] = -1;
}

bool HbmModel::submitChannelLine(uint32_t slot, const HbmRequest& r, uint64_t arrival,
                                 uint64_t first, uint64_t last) {
  // The steady state of a stream interleaved over channels, found without
  // locating every burst: bursts of one channel line differ only in their
  // channel (AddressMap::channelLine), so they go to consecutive channels'
  // pseudo-channels of one index, all alike. When those are exactly one
  // group, this is the shortcut of submitGrouped's general path, below.
  const uint64_t line = map_.channelLine();
  if (line < 2 || first / line != last / line) return false;
  const uint32_t n = uint32_t(last - first + 1);
  PcBurst b;
  const uint32_t pc0 = burstAt(locateInLine(first), slot, r.isWrite, arrival, &b);
  const int64_t leader = lineLeader(pc0, n);
  if (leader >= 0) {
    pcs_[uint32_t(leader)].push(b);  // the same burst for every member
    requests_[slot].remaining += n;
    activate(uint32_t(leader));
    return true;
  }
  // Several whole groups (a line whose parts came in different cycles): the
  // general path would split none of them, merge the idle ones with the same
  // future (mergeIdle) and push the burst to each leader, in this order.
  const std::vector<uint32_t>* leaders;
  if (!groupsWithinLine(pc0, n, &leaders)) return false;
  part_.clear();
  for (uint32_t l : *leaders)
    if (!pcs_[l].hasWork()) part_.push_back(l);
  if (part_.size() >= 2 && mergeIdleLeaders() && !groupsWithinLine(pc0, n, &leaders))
    throw std::logic_error("HbmModel: a merge left a line's groups");
  if (leaders->size() >= 2 && mergeTwinLeaders(*leaders) && !groupsWithinLine(pc0, n, &leaders))
    throw std::logic_error("HbmModel: a merge of twins left a line's groups");
  for (uint32_t l : *leaders) {
    pcs_[l].push(b);
    requests_[slot].remaining += groups_.size(l);
    activate(l);
  }
  return true;
}

int64_t HbmModel::lineLeader(uint32_t pc0, uint32_t n) {
  // Whether those n pseudo-channels are exactly one group: remembered per
  // first pseudo-channel and line length until the groups change.
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  LineGroup& known = lineGroups_[pc0];
  if (known.changes != groups_.changes() || known.bursts != n) {
    known.changes = groups_.changes();
    known.bursts = n;
    const uint32_t leader = groups_.leader(pc0);
    bool exact = groups_.size(leader) == n;
    for (uint32_t k = 1; exact && k < n; ++k) exact = groups_.leader(pc0 + k * stride) == leader;
    known.leader = exact ? int64_t(leader) : -1;
  }
  return known.leader;
}

void HbmModel::splitUneven(uint32_t leader) {
  const int32_t own = classOf_[leader];
  while (true) {
    // The members of the first other class (-1: untouched) become a group.
    const std::vector<uint32_t>& members = groups_.members(leader);
    auto other = std::find_if(members.begin(), members.end(),
                              [&](uint32_t m) { return classOf_[m] != own; });
    if (other == members.end()) return;
    const int32_t cls = classOf_[*other];
    part_.clear();
    for (auto it = other; it != members.end(); ++it)
      if (classOf_[*it] == cls) part_.push_back(*it);
    groups_.split(leader, part_, pcs_);
    seen_[part_.front()] = seen_[leader];
    if (isActive_[leader]) activate(part_.front());
  }
}

void HbmModel::mergeIdle(uint32_t cls) {
  part_.clear();
  for (const TouchedPc& t : touched_)
    if (t.cls == cls && groups_.isLeader(t.pc) && !pcs_[t.pc].hasWork()) part_.push_back(t.pc);
  if (part_.size() >= 2) mergeIdleLeaders();
}

void HbmModel::mergeTwins(uint32_t cls) {
  classLeaders_.clear();
  for (const TouchedPc& t : touched_)
    if (t.cls == cls && groups_.isLeader(t.pc)) classLeaders_.push_back(t.pc);
  if (classLeaders_.size() >= 2) mergeTwinLeaders(classLeaders_);
}

bool HbmModel::mergeIdleLeaders() {
  // Idle pseudo-channels lag behind; bring them to now (only refreshes happen).
  const uint64_t hbmNow = clocks_.hbmAtOrAfterCore(now_);
  for (uint32_t pc : part_) {
    issued_.clear();
    pcs_[pc].advance(hbmNow, issued_);
    if (!issued_.empty()) throw std::logic_error("HbmModel: an idle pseudo-channel issued a burst");
  }
  bool merged = false;
  for (size_t i = 1; i < part_.size(); ++i)
    if (pcs_[part_[0]].sameFutureAs(pcs_[part_[i]])) {
      groups_.merge(part_[0], part_[i], pcs_);
      merged = true;
    }
  return merged;
}

}  // namespace tpusim::sim::hbm
