#include "sim/hbm/PcGroups.h"

#include <algorithm>
#include <iterator>

namespace tpusim::sim::hbm {

PcGroups::PcGroups(size_t n) : leader_(n), members_(n), offset_(n) {
  for (size_t pc = 0; pc < n; ++pc) {
    leader_[pc] = uint32_t(pc);
    members_[pc] = {uint32_t(pc)};
  }
}

HbmChannelStats PcGroups::stats(uint32_t pc, const std::vector<PseudoChannel>& pcs) const {
  HbmChannelStats s = pcs[leader_[pc]].stats();
  s.add(offset_[pc]);
  return s;
}

void PcGroups::split(uint32_t leader, const std::vector<uint32_t>& part,
                     std::vector<PseudoChannel>& pcs) {
  ++changes_;
  const uint32_t head = part.front();
  const HbmChannelStats headOffset = offset_[head];
  pcs[head] = pcs[leader];
  HbmChannelStats s = pcs[leader].stats();
  s.add(headOffset);
  pcs[head].setStats(s);
  for (uint32_t m : part) {
    offset_[m] = offset_[m].minus(headOffset);
    leader_[m] = head;
  }
  std::vector<uint32_t>& rest = members_[leader];
  std::vector<uint32_t> kept;
  kept.reserve(rest.size() - part.size());
  std::set_difference(rest.begin(), rest.end(), part.begin(), part.end(), std::back_inserter(kept));
  rest = std::move(kept);
  members_[head] = part;
}

void PcGroups::merge(uint32_t leader, uint32_t other, const std::vector<PseudoChannel>& pcs) {
  ++changes_;
  const HbmChannelStats d = pcs[other].stats().minus(pcs[leader].stats());
  for (uint32_t m : members_[other]) {
    offset_[m].add(d);
    leader_[m] = leader;
  }
  std::vector<uint32_t> all;
  all.reserve(members_[leader].size() + members_[other].size());
  std::merge(members_[leader].begin(), members_[leader].end(), members_[other].begin(),
             members_[other].end(), std::back_inserter(all));
  members_[leader] = std::move(all);
  members_[other].clear();
}

}  // namespace tpusim::sim::hbm
