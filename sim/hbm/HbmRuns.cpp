// HbmModel's line runs (hbm.model = "fast"): consecutive requests with the
// same direction and arrival whose bursts follow each other within one
// channel line (a DMA descriptor cut into requests smaller than a line, e.g.
// 256-byte rows into 512-byte lines) are handed to the pseudo-channels as
// one burst per pseudo-channel, i.e. one burst for the leader of the line's
// group (or one for each group when the run's pseudo-channels are several
// whole groups: a line whose requests came at different times), instead of
// one per request. Each pseudo-channel gets exactly the
// burst it gets when the requests are submitted one by one, at the same
// arrival and in the same order (nothing else is pushed between them), so
// the commands and cycles are the same; only the bookkeeping of which
// request a pseudo-channel's burst belongs to changes: a run record heads a
// chain of the requests (its parts), and an issue of the run's burst by a
// group completes the parts of the group's channels.
#include <algorithm>
#include <stdexcept>

#include "sim/hbm/HbmModel.h"

namespace tpusim::sim::hbm {

namespace {
// Set bits of x. (__builtin_popcountll is a library call unless the build
// targets a CPU with POPCNT.) A byte table: the masks here are a group's
// channels within a line, so one or two bytes, fewer instructions than the
// dozen of the shift-and-add count.
struct ByteBits {
  uint8_t n[256];
  constexpr ByteBits() : n() {
    for (int i = 1; i < 256; ++i) n[i] = uint8_t(n[i >> 1] + (i & 1));
  }
};
constexpr ByteBits kByteBits;
static_assert(kByteBits.n[0] == 0 && kByteBits.n[0x96] == 4 && kByteBits.n[255] == 8);
uint32_t bitCount(uint64_t x) {
  uint32_t n = 0;
  for (; x != 0; x >>= 8) n += kByteBits.n[x & 255];
  return n;
}
}  // namespace

bool HbmModel::runJoins(const HbmRequest& r, uint64_t arrival, uint64_t first,
                        uint64_t last) const {
  const RunPart& head = run_.front();
  // Bursts strictly after the run's (two requests sharing a burst give that
  // pseudo-channel two bursts), and in the same line.
  return r.isWrite == head.request.isWrite && arrival == head.arrival && first == runLast_ + 1 &&
         lineOf(last) == lineOf(runFirst_);
}

void HbmModel::flushRun() {
  if (run_.empty()) return;
  if (run_.size() == 1) {
    submitGrouped(run_[0].slot, run_[0].request, run_[0].arrival);
    run_.clear();
    return;
  }
  const uint32_t n = uint32_t(runLast_ - runFirst_ + 1);
  const BurstLocation& loc = locateInLine(runFirst_);
  PcBurst b;
  const uint32_t pc0 = burstAt(loc, 0, run_[0].request.isWrite, run_[0].arrival, &b);
  int64_t leader = lineLeader(pc0, n);
  if (leader < 0 && mergeIdleLine(pc0, n)) leader = lineLeader(pc0, n);
  const std::vector<uint32_t>* leaders = &runLeaders_;
  runLeaders_.clear();
  if (leader >= 0) {
    runLeaders_.push_back(uint32_t(leader));
  } else if (!groupsWithinLine(pc0, n, &leaders)) {
    // Some group reaches beyond the run's pseudo-channels: one by one (which splits it).
    for (const RunPart& p : run_) submitGrouped(p.slot, p.request, p.arrival);
    run_.clear();
    return;
  } else if (leaders->size() >= 2 && mergeTwinLeaders(*leaders) &&
             !groupsWithinLine(pc0, n, &leaders)) {
    throw std::logic_error("HbmModel: a merge of twins left a line's groups");
  }
  // The run's record (allocated like a request, but it is none: no sequence).
  uint32_t record;
  if (!freeRequests_.empty()) {
    record = freeRequests_.back();
    freeRequests_.pop_back();
  } else {
    record = uint32_t(requests_.size());
    requests_.emplace_back();
  }
  uint32_t previous = record;
  for (const RunPart& p : run_) {
    RequestState& s = requests_[p.slot];
    s.firstChannel = uint32_t(inLine(p.first));
    s.runBursts = uint32_t(p.last - p.first + 1);
    s.remaining = s.runBursts;
    s.nextInRun = kNoRequest;
    requests_[previous].nextInRun = p.slot;
    previous = p.slot;
  }
  RequestState& rec = requests_[record];
  rec.isRun = true;
  rec.remaining = n;
  rec.dataEnd = 0;
  b.request = record;
  for (uint32_t l : *leaders) {
    pcs_[l].push(b);  // the same burst for every member
    activate(l);
  }
  run_.clear();
}

uint64_t HbmModel::channelMask(uint32_t leader) {
  LeaderMask& known = channelMasks_[leader];
  if (known.changes != groups_.changes()) {
    known.changes = groups_.changes();
    known.mask = 0;
    for (uint32_t m : groups_.members(leader))
      known.mask |= uint64_t(1) << (m / uint32_t(config_.pseudo_channels));
  }
  return known.mask;
}

bool HbmModel::groupsWithinLine(uint32_t pc0, uint32_t n, const std::vector<uint32_t>** leaders) {
  // Whether the n pseudo-channels from pc0 (one index, consecutive channels)
  // are exactly a union of groups; *leaders: theirs. Then each
  // leader takes the run's burst for its members: every pseudo-channel gets
  // the one burst it gets from the requests one by one (all bursts of a line
  // have the same bank and row), and issueRunBurst counts a group's members
  // per part, as for a line that split while its burst waited.
  // Remembered per first pseudo-channel and length until the groups change.
  LineGroups& known = lineUnions_[pc0];
  *leaders = &known.leaders;
  if (known.changes == groups_.changes() && known.bursts == n) return known.exact;
  known.changes = groups_.changes();
  known.bursts = n;
  known.leaders.clear();
  known.exact = unionOfGroups(pc0, n, known.leaders);
  return known.exact;
}

bool HbmModel::unionOfGroups(uint32_t pc0, uint32_t n, std::vector<uint32_t>& leaders) {
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  const uint32_t firstChannel = pc0 / stride, index = pc0 % stride;
  auto within = [&](uint32_t pc) {
    return pc % stride == index && pc / stride >= firstChannel && pc / stride < firstChannel + n;
  };
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t pc = pc0 + k * stride;
    const uint32_t leader = groups_.leader(pc);
    if (!within(leader)) return false;
    if (leader != pc) continue;
    for (uint32_t m : groups_.members(pc))
      if (!within(m)) return false;
    leaders.push_back(pc);
  }
  return true;
}

void HbmModel::issueRunBurst(uint32_t pc, uint32_t record, uint64_t dataEnd) {
  // Group `pc` issued the run's burst. When it is all the run's pseudo-channels
  // that have not issued it yet, every part left is done; otherwise (the
  // group split while the burst was queued) count the group's members per part.
  const uint32_t members = groups_.size(pc);
  const bool all = members == requests_[record].remaining;
  if (all) {
    // The last group to issue it: every part left is done now.
    for (uint32_t x = requests_[record].nextInRun; x != kNoRequest;) {
      RequestState& part = requests_[x];
      const uint32_t next = part.nextInRun;
      part.dataEnd = std::max(part.dataEnd, dataEnd);
      part.remaining = 0;
      part.nextInRun = kNoRequest;
      addPending(Pending{coreAtOrAfter(part.dataEnd), part.sequence, x});
      x = next;
    }
    RequestState& rec = requests_[record];
    rec.nextInRun = kNoRequest;
    rec.remaining = 0;
    rec.isRun = false;
    freeRequests_.push_back(record);
    return;
  }
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  // The group's channels as a mask (all of one pseudo-channel index), when they fit.
  const bool masked = !all && config_.channels <= 64;
  const uint64_t mask = masked ? channelMask(pc) : 0;
  uint32_t previous = record;
  for (uint32_t x = requests_[record].nextInRun; x != kNoRequest;) {
    RequestState& part = requests_[x];
    const uint32_t next = part.nextInRun;
    uint32_t count = part.remaining;
    if (masked) {
      const uint64_t partMask =
          (part.runBursts >= 64 ? ~uint64_t(0) : (uint64_t(1) << part.runBursts) - 1)
          << part.firstChannel;
      count = bitCount(mask & partMask);
    } else if (!all) {
      count = 0;
      for (uint32_t m : groups_.members(pc)) {
        const uint32_t channel = m / stride;
        count += channel >= part.firstChannel && channel < part.firstChannel + part.runBursts;
      }
    }
    if (count > 0) {
      part.dataEnd = std::max(part.dataEnd, dataEnd);
      part.remaining -= count;
    }
    if (part.remaining == 0) {
      addPending(Pending{coreAtOrAfter(part.dataEnd), part.sequence, x});
      requests_[previous].nextInRun = next;  // done: out of the chain
      part.nextInRun = kNoRequest;
    } else {
      previous = x;
    }
    x = next;
  }
  RequestState& rec = requests_[record];
  rec.remaining -= members;
  if (rec.remaining == 0) {
    if (rec.nextInRun != kNoRequest)
      throw std::logic_error("HbmModel: a run ended with parts left");
    rec.isRun = false;
    freeRequests_.push_back(record);
  }
}

bool HbmModel::mergeIdleLine(uint32_t pc0, uint32_t n) {
  // Groups that each lie within the line's n pseudo-channels, all without
  // work and with the same future, become one (what submitGrouped does for
  // the pseudo-channels one request touches).
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  const uint32_t firstChannel = pc0 / stride, index = pc0 % stride;
  part_.clear();
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t pc = pc0 + k * stride;
    const uint32_t leader = groups_.leader(pc);
    if (leader != pc) continue;  // a member: its leader is one of the line's too, or it fails
    if (pcs_[pc].hasWork()) return false;
    for (uint32_t m : groups_.members(pc))
      if (m % stride != index || m / stride < firstChannel || m / stride >= firstChannel + n)
        return false;
    part_.push_back(pc);
  }
  // Every pseudo-channel of the line must be led from within it.
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t leader = groups_.leader(pc0 + k * stride);
    if (std::find(part_.begin(), part_.end(), leader) == part_.end()) return false;
  }
  if (part_.size() < 2) return false;
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
