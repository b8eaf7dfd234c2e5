// Groups of pseudo-channels that the fast HBM model (hbm.model = "fast")
// simulates as one: every member of a group is in the same state as its
// leader (one of its members), and only the leader's PseudoChannel is
// kept up to date. Stats stay per pseudo-channel: a member's are its
// leader's plus an offset (what it had done apart from the leader), kept
// modulo 2^64 so that splits and merges are exact.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/hbm/HbmStats.h"
#include "sim/hbm/PseudoChannel.h"

namespace tpusim::sim::hbm {

class PcGroups {
 public:
  explicit PcGroups(size_t pseudoChannels);  // each its own group

  uint32_t leader(uint32_t pc) const { return leader_[pc]; }
  bool isLeader(uint32_t pc) const { return leader_[pc] == pc; }
  // Ascending; only for a leader.
  const std::vector<uint32_t>& members(uint32_t leader) const { return members_[leader]; }
  uint32_t size(uint32_t leader) const { return uint32_t(members_[leader].size()); }
  HbmChannelStats stats(uint32_t pc, const std::vector<PseudoChannel>& pcs) const;
  // Splits and merges so far: a lookup of the groups stays valid while this does not change.
  uint64_t changes() const { return changes_; }

  // Moves `part` (ascending members of `leader`'s group, without the leader)
  // into a group of its own led by part[0], whose state becomes the leader's.
  void split(uint32_t leader, const std::vector<uint32_t>& part, std::vector<PseudoChannel>& pcs);
  // Moves every member of `other`'s group into `leader`'s; the two leaders
  // must have the same future (PseudoChannel::sameFutureAs).
  void merge(uint32_t leader, uint32_t other, const std::vector<PseudoChannel>& pcs);

 private:
  std::vector<uint32_t> leader_;
  std::vector<std::vector<uint32_t>> members_;  // by leader; empty for the others
  std::vector<HbmChannelStats> offset_;         // pc's stats minus its leader's
  uint64_t changes_ = 0;
};

}  // namespace tpusim::sim::hbm
