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

bool HbmModel::runJoins(const HbmRequest& r, uint64_t arrival, uint64_t first, uint64_t last) {
  const RunPart& head = run_.front();
  // Bursts strictly after the run's (two requests sharing a burst give that
  // pseudo-channel two bursts), and in the same line or its pair's second.
  if (r.isWrite != head.request.isWrite || arrival != head.arrival || first != runLast_ + 1)
    return false;
  const uint64_t line0 = lineOf(runFirst_), lineN = lineOf(last);
  return lineN == line0 || (lineN == line0 + 1 && linePair(line0));
}

bool HbmModel::linePair(uint64_t line) {
  // The constructor checked that the pseudo-channel digit is right above the
  // channel digit (pairsPossible_): line L's index is L % pseudo_channels, and
  // L + 1 differs only in it unless it wraps.
  const uint64_t stride = uint64_t(config_.pseudo_channels);
  if (!pairsPossible_ || line % stride == stride - 1) return false;
  pairSecondIndex_ = uint32_t(line % stride + 1);
  return true;
}

bool HbmModel::linePairByLocation(uint64_t line) const {
  const uint64_t bytes = map_.channelLine() * map_.burstBytes();
  const BurstLocation a = map_.locate(line * bytes), b = map_.locate((line + 1) * bytes);
  return a.channel == 0 && b.channel == 0 && a.pseudoChannel == line % config_.pseudo_channels &&
         b.pseudoChannel == a.pseudoChannel + 1 && a.bankGroup == b.bankGroup && a.bank == b.bank &&
         a.row == b.row;
}

uint32_t HbmModel::linkRunParts(uint64_t lineStart) {
  // The run's record (allocated like a request, but it is none: no sequence).
  const uint32_t record = takeRequestSlot();
  uint32_t previous = record;
  for (const RunPart& p : run_) {
    RequestState& s = requests_[p.slot];
    s.firstChannel = uint32_t(p.first - lineStart);
    s.runBursts = uint32_t(p.last - p.first + 1);
    s.remaining = s.runBursts;
    s.nextInRun = kNoRequest;
    requests_[previous].nextInRun = p.slot;
    previous = p.slot;
  }
  return record;
}

void HbmModel::flushRun() {
  if (run_.empty()) return;
  if (run_.size() == 1) {
    submitGrouped(run_[0].slot, run_[0].request, run_[0].arrival);
    run_.clear();
    return;
  }
  if (lineOf(runLast_) != lineOf(runFirst_)) {
    flushPairRun();
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
  const uint32_t record = linkRunParts(lineOf(runFirst_) * map_.channelLine());
  RequestState& rec = requests_[record];
  rec.isRun = true;
  rec.pair = false;
  rec.remaining = n;
  rec.dataEnd = 0;
  b.request = record;
  for (uint32_t l : *leaders) {
    pcs_[l].push(b);  // the same burst for every member
    activate(l);
  }
  run_.clear();
}

void HbmModel::flushPairRun() {
  // A run over a line pair: the first line's channels from the run's first
  // burst at one pseudo-channel index, then the second line's channels up to
  // its last burst at the other. Each pseudo-channel gets one burst, alike
  // for all (linePair), so when they are exactly a union of groups each
  // leader takes one burst for its members, as for a run within one line.
  const uint64_t bursts = map_.channelLine();
  const uint64_t line0 = lineOf(runFirst_);
  if (!linePair(line0)) throw std::logic_error("HbmModel: a run over lines that are no pair");
  const uint32_t n = uint32_t(runLast_ - runFirst_ + 1);
  const BurstLocation& loc = locateInLine(runFirst_);
  PcBurst b;
  const uint32_t pc0 = burstAt(loc, 0, run_[0].request.isWrite, run_[0].arrival, &b);
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  const uint32_t firstIndex = pc0 % stride, firstChannel = pc0 / stride;
  const uint32_t secondIndex = pairSecondIndex_, lastChannel = uint32_t(inLine(runLast_));
  const std::vector<uint32_t>* leaders;
  if (!groupsWithinPair(firstIndex, firstChannel, secondIndex, lastChannel, &leaders)) {
    replayRunByLines();
    return;
  }
  if (leaders->size() >= 2 && mergeTwinLeaders(*leaders) &&
      !groupsWithinPair(firstIndex, firstChannel, secondIndex, lastChannel, &leaders))
    throw std::logic_error("HbmModel: a merge of twins left a line pair's groups");
  const uint32_t record = linkRunParts(line0 * bursts);  // offsets from the first line's start
  RequestState& rec = requests_[record];
  rec.isRun = true;
  rec.pair = true;
  rec.pairFirst = uint8_t(firstIndex);
  rec.pairSecond = uint8_t(secondIndex);
  rec.remaining = n;
  rec.dataEnd = 0;
  b.request = record;
  // Copied: pushes do not change the groups, but the cache entry is a reference.
  runLeaders_.assign(leaders->begin(), leaders->end());
  for (uint32_t l : runLeaders_) {
    pcs_[l].push(b);
    activate(l);
  }
  run_.clear();
}

void HbmModel::replayRunByLines() {
  // What submit does with these parts without line pairs: runs within one
  // line, requests over two lines one by one. (Nothing else was submitted
  // between them, so the pseudo-channels get the same bursts in the same order.)
  std::swap(replay_, run_);
  run_.clear();
  const uint64_t line = map_.channelLine();
  for (const RunPart& p : replay_) {
    if (!run_.empty() && p.request.isWrite == run_.front().request.isWrite &&
        p.arrival == run_.front().arrival && p.first == runLast_ + 1 &&
        lineOf(p.last) == lineOf(runFirst_)) {
      run_.add() = p;  // (a copy: replays are rare, addRunPart stays inline in submit)
      runLast_ = p.last;
      continue;
    }
    flushRun();  // within one line: no pair, no replay
    if (line >= 2 && lineOf(p.first) == lineOf(p.last)) {
      run_.add() = p;
      runFirst_ = p.first;
      runLast_ = p.last;
    } else {
      submitGrouped(p.slot, p.request, p.arrival);
    }
  }
  replay_.clear();
  flushRun();
}

bool HbmModel::groupsWithinPair(uint32_t firstIndex, uint32_t firstChannel, uint32_t secondIndex,
                                uint32_t lastChannel, const std::vector<uint32_t>** leaders) {
  // groupsWithinLine for a line pair: the channels [firstChannel, channels)
  // at firstIndex and [0, lastChannel] at secondIndex.
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  const uint32_t channels = uint32_t(config_.channels);
  const uint32_t pc0 = firstChannel * stride + firstIndex;
  const uint32_t n = channels - firstChannel + lastChannel + 1;
  LineGroups& known = lineUnions_[pc0];
  *leaders = &known.leaders;
  if (known.changes == groups_.changes() && known.bursts == n && known.secondIndex == secondIndex)
    return known.exact;
  known.changes = groups_.changes();
  known.bursts = n;
  known.secondIndex = secondIndex;
  known.leaders.clear();
  auto within = [&](uint32_t pc) {
    const uint32_t index = pc % stride, channel = pc / stride;
    return (index == firstIndex && channel >= firstChannel) ||
           (index == secondIndex && channel <= lastChannel);
  };
  known.exact = true;
  for (uint32_t k = 0; k < n && known.exact; ++k) {
    const uint32_t channel =
        firstChannel + k < channels ? firstChannel + k : firstChannel + k - channels;
    const uint32_t pc = channel * stride + (firstChannel + k < channels ? firstIndex : secondIndex);
    const uint32_t leader = groups_.leader(pc);
    if (!within(leader)) {
      known.exact = false;
      break;
    }
    if (leader != pc) continue;
    for (uint32_t m : groups_.members(pc))
      if (!within(m)) known.exact = false;
    known.leaders.push_back(pc);
  }
  return known.exact;
}

uint64_t HbmModel::pcMask(uint32_t leader) {
  LeaderMask& known = pcMasks_[leader];
  if (known.changes != groups_.changes()) {
    known.changes = groups_.changes();
    known.mask = 0;
    const uint32_t stride = uint32_t(config_.pseudo_channels);
    for (uint32_t m : groups_.members(leader))
      known.mask |= uint64_t(1) << ((m % stride) * uint32_t(config_.channels) + m / stride);
  }
  return known.mask;
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
  if (known.changes == groups_.changes() && known.bursts == n && known.secondIndex == ~0u)
    return known.exact;
  known.changes = groups_.changes();
  known.bursts = n;
  known.secondIndex = ~0u;
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
    rec.pair = false;
    freeRequests_.push_back(record);
    return;
  }
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  // The group's channels as a mask (all of one pseudo-channel index), when
  // they fit; over a line pair, the first line's channels then the second's.
  const RequestState& head = requests_[record];
  const bool masked = !all && (head.pair || config_.channels <= 64);
  uint64_t mask = 0;
  if (head.pair) {
    const uint32_t channels = uint32_t(config_.channels);
    const uint64_t members = pcMask(pc), low = (uint64_t(1) << channels) - 1;
    mask = ((members >> (head.pairFirst * channels)) & low) |
           (((members >> (head.pairSecond * channels)) & low) << channels);
  } else if (masked) {
    mask = channelMask(pc);
  }
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
    rec.pair = false;
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
