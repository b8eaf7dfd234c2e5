#include "sim/hbm/HbmModel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace tpusim::sim::hbm {

namespace {
uint64_t wholeHz(double hz, const char* field) {
  if (!(hz >= 1.0) || hz > 1e12 || std::floor(hz) != hz)
    throw std::invalid_argument(std::string(field) + ": " + std::to_string(hz) +
                                " Hz must be a whole number of Hz between 1 and 1e12");
  return uint64_t(hz);
}
}  // namespace

HbmModel::HbmModel(const target::HbmConfig& config, double coreClockHz)
    : config_(config),
      timing_(HbmTiming::fromConfig(config)),
      map_(config),
      clocks_(wholeHz(coreClockHz, "core.clock_hz"), wholeHz(config.clock_hz, "hbm.clock_hz")),
      fast_(config.model != "detailed"),
      groups_(size_t(config.channels * config.pseudo_channels)) {
  if (config.model != "fast" && config.model != "detailed")
    throw std::invalid_argument("hbm.model: \"" + config.model +
                                "\" must be \"fast\" or \"detailed\"");
  size_t n = size_t(config.channels * config.pseudo_channels);
  pcs_.reserve(n);
  for (size_t i = 0; i < n; ++i) pcs_.emplace_back(timing_, fast_);
  isActive_.assign(n, 0);
  classOf_.assign(n, -1);
  seen_.assign(n, ~uint64_t(0));
  lineGroups_.resize(n);
  auto log2Exact = [](uint64_t v) { return v > 0 && (v & (v - 1)) == 0 ? __builtin_ctzll(v) : -1; };
  burstShift_ = log2Exact(map_.burstBytes());
  lineShift_ = log2Exact(map_.channelLine());
  lineUnions_.resize(n);
  channelMasks_.resize(n);
  pcMasks_.resize(n);
  // Line pairs: a run's offsets (two lines of channels) and a leader's
  // members as 64-bit masks.
  pairsPossible_ = map_.channelLine() == uint64_t(config_.channels) && lineShift_ >= 0 && n <= 64 &&
                   2 * map_.channelLine() <= 64 && config_.pseudo_channels >= 2;
  // linePair's arithmetic holds when the pseudo-channel digit is right above
  // the channel digit: checked against the map on the first lines and a spread of others.
  for (uint64_t line = 0; pairsPossible_ && line < 4096; line += line < 64 ? 1 : 61)
    pairsPossible_ = linePair(line) == linePairByLocation(line);
}

double HbmModel::peakBytesPerCoreCycle() const {
  return double(config_.channels) * double(config_.pseudo_channels) *
         double(config_.bus_bytes_per_clock) * double(clocks_.hbmHz()) / double(clocks_.coreHz());
}

uint32_t HbmModel::takeRequestSlot() {
  if (freeRequests_.empty()) {
    requests_.emplace_back();
    return uint32_t(requests_.size() - 1);
  }
  const uint32_t slot = freeRequests_.back();
  freeRequests_.pop_back();
  return slot;
}

uint32_t HbmModel::allocateRequest(const HbmRequest& r) {
  const uint32_t slot = takeRequestSlot();
  RequestState& s = requests_[slot];
  s.id = r.id;
  s.sequence = sequence_++;
  s.remaining = 0;
  s.dataEnd = 0;
  s.nextInRun = kNoRequest;
  s.isRun = false;
  s.pair = false;
  return slot;
}

void HbmModel::submit(const HbmRequest& r) {
  if (r.arrivalCycle < now_)
    throw std::logic_error("HbmModel::submit: request arrives at cycle " +
                           std::to_string(r.arrivalCycle) + ", before the model's time " +
                           std::to_string(now_));
  if (r.bytes == 0) throw std::logic_error("HbmModel::submit: request of 0 bytes");
  uint32_t slot = allocateRequest(r);
  uint64_t arrival = hbmAtOrAfter(r.arrivalCycle);
  if (outstanding_ == 0) lastProgress_ = std::max(lastProgress_, arrival);
  if (fast_) {
    const uint64_t first = burstOf(r.address), last = burstOf(r.address + r.bytes - 1);
    const uint64_t line = map_.channelLine();
    if (!run_.empty() && runJoins(r, arrival, first, last)) {
      addRunPart(slot, r, arrival, first, last);
      runLast_ = last;
    } else {
      flushRun();
      if (line >= 2 && runStarts(first, last)) {
        addRunPart(slot, r, arrival, first, last);
        runFirst_ = first;
        runLast_ = last;
      } else {
        submitGrouped(slot, r, arrival);
      }
    }
  } else {
    uint64_t burst = map_.burstBytes();
    uint64_t first = r.address / burst, last = (r.address + r.bytes - 1) / burst;
    BurstLocation loc = map_.locate(first * burst);
    for (uint64_t b = first; b <= last; ++b, map_.next(loc)) {
      PcBurst pb;
      uint32_t pc = burstAt(loc, slot, r.isWrite, arrival, &pb);
      pcs_[pc].push(pb);
      ++requests_[slot].remaining;
      activate(pc);
    }
  }
  ++outstanding_;
}

uint32_t HbmModel::burstAt(const BurstLocation& loc, uint32_t slot, bool write, uint64_t arrival,
                           PcBurst* out) const {
  out->request = slot;
  out->bankGroup = loc.bankGroup;
  out->bank = loc.bankGroup * uint32_t(config_.banks_per_group) + loc.bank;
  out->row = loc.row;
  out->write = write;
  out->arrival = arrival;
  return loc.channel * uint32_t(config_.pseudo_channels) + loc.pseudoChannel;
}

void HbmModel::activate(uint32_t pc) {
  if (isActive_[pc]) return;
  // Kept in index order, so that simulation order never depends on the
  // order in which pseudo-channels became active.
  isActive_[pc] = 1;
  earliestActive_ = std::min(earliestActive_, pcs_[pc].time());
  active_.insert(std::lower_bound(active_.begin(), active_.end(), pc), pc);
}

uint64_t HbmModel::nextEventCycle() const {
  uint64_t next = std::numeric_limits<uint64_t>::max();
  if (pendingHead_ < pending_.size()) next = pending_[pendingHead_].cycle;
  // A burst not yet issued completes no earlier than one column latency from now.
  int64_t minLatency = std::min(timing_.tCL, timing_.tCWL) + timing_.burstCycles;
  // A run not yet handed over: one column latency after its arrival.
  if (!run_.empty())
    next = std::min(next, clocks_.coreAtOrAfterHbm(run_[0].arrival + uint64_t(minLatency)));
  // The conversion is monotonic: convert the earliest pseudo-channel time once.
  if (!active_.empty()) {
#ifndef NDEBUG  // debug builds check the kept minimum against the loop it replaces
    uint64_t earliest = std::numeric_limits<uint64_t>::max();
    for (uint32_t pc : active_) earliest = std::min(earliest, pcs_[pc].time());
    if (earliest != earliestActive_) throw std::logic_error("HbmModel: earliestActive_");
#endif
    next = std::min(next, clocks_.coreAtOrAfterHbm(earliestActive_ + uint64_t(minLatency)));
  }
  // Cycles >= now_ are not simulated yet, so a completion can still happen at now_.
  if (next != std::numeric_limits<uint64_t>::max()) next = std::max(next, now_);
  return next;
}

// A burst waits at most the queue ahead of it (queue_depth bursts, each a row
// cycle and a refresh): far below this. Longer means the timing leaves no time
// for work, which would otherwise spin forever.
constexpr uint64_t kNoProgressLimit = uint64_t(1) << 24;

void HbmModel::advanceTo(uint64_t cycle, std::vector<HbmCompletion>& done) {
  if (cycle <= now_) return;
  if (!run_.empty()) flushRun();
  uint64_t hbmLimit = clocks_.hbmAtOrAfterCore(cycle);
  size_t kept = 0;
  for (uint32_t pc : active_) {
    issued_.clear();
    pcs_[pc].advance(hbmLimit, issued_);
    if (!issued_.empty()) {
      lastProgress_ = std::max(lastProgress_, issued_.back().dataEnd);
      // The burst was issued by every member of the group at once.
      const uint32_t members = groups_.size(pc);
      for (const IssuedBurst& b : issued_) {
        RequestState& s = requests_[b.request];
        if (s.isRun) {
          issueRunBurst(pc, b.request, b.dataEnd);
          continue;
        }
        s.dataEnd = std::max(s.dataEnd, b.dataEnd);
        s.remaining -= members;
        if (s.remaining == 0) addPending(Pending{coreAtOrAfter(s.dataEnd), s.sequence, b.request});
      }
    }
    if (pcs_[pc].hasWork())
      active_[kept++] = pc;
    else
      isActive_[pc] = 0;
  }
  active_.resize(kept);
  earliestActive_ = active_.empty() ? ~uint64_t(0) : hbmLimit;  // advance reaches the limit
  if (hbmLimit >= lastProgress_ + kNoProgressLimit) checkProgress(hbmLimit);
  while (pendingHead_ < pending_.size() && pending_[pendingHead_].cycle < cycle) {
    const Pending p = pending_[pendingHead_++];
    done.push_back(HbmCompletion{requests_[p.slot].id, p.cycle});
    freeRequests_.push_back(p.slot);
    --outstanding_;
  }
  now_ = cycle;
}

void HbmModel::addPending(const Pending& p) {
  // Bursts issue in time order and complete a fixed latency later, so a new
  // completion nearly always goes at or near the end.
  if (pendingHead_ == pending_.size()) {
    pending_.clear();
    pendingHead_ = 0;
  } else if (pendingHead_ >= 64 && 2 * pendingHead_ >= pending_.size()) {
    // Drop the reported front (amortized O(1) per completion).
    pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(pendingHead_));
    pendingHead_ = 0;
  }
  size_t at = pending_.size();
  while (at > pendingHead_ && pending_[at - 1] > p) --at;
  if (at == pending_.size())
    pending_.push_back(p);
  else
    pending_.insert(pending_.begin() + std::ptrdiff_t(at), p);
}

void HbmModel::checkProgress(uint64_t hbmLimit) {
  if (active_.empty() || hbmLimit < lastProgress_ + kNoProgressLimit) return;
  throw HbmNoProgress(
      "the HBM model made no progress: " + std::to_string(outstanding_) +
      " request(s) pending, no burst issued for " + std::to_string(hbmLimit - lastProgress_) +
      " HBM cycles (since HBM cycle " + std::to_string(lastProgress_) +
      "); check the refresh timing (hbm.refresh, hbm.tREFI, hbm.tRFC, hbm.tRFCsb) and the "
      "bank timing against each other");
}

void HbmModel::catchUp(uint64_t hbmLimit) {
  for (size_t pc = 0; pc < pcs_.size(); ++pc) {
    // Active ones are already at hbmLimit; the members of a group follow its leader.
    if (isActive_[pc] || !groups_.isLeader(uint32_t(pc))) continue;
    issued_.clear();
    pcs_[pc].advance(hbmLimit, issued_);
  }
}

std::vector<HbmChannelStats> HbmModel::channelStats() {
  flushRun();
  catchUp(clocks_.hbmAtOrAfterCore(now_));
  std::vector<HbmChannelStats> out(size_t(config_.channels));
  for (size_t pc = 0; pc < pcs_.size(); ++pc)
    out[pc / size_t(config_.pseudo_channels)].add(groups_.stats(uint32_t(pc), pcs_));
  return out;
}

size_t HbmModel::simulatedPseudoChannels() const {
  size_t n = 0;
  for (size_t pc = 0; pc < pcs_.size(); ++pc) n += groups_.isLeader(uint32_t(pc));
  return n;
}

HbmChannelStats HbmModel::totalStats() {
  HbmChannelStats total;
  for (const HbmChannelStats& c : channelStats()) total.add(c);
  return total;
}

}  // namespace tpusim::sim::hbm
