// HbmModel::submitBatch: a DMA descriptor's requests of one cycle, handed
// over at once. In the fast model a batch within one channel line whose
// requests share no burst is what a line run of those requests would be
// (HbmRuns.cpp): one burst for each pseudo-channel of its bursts, the same
// bank, row and arrival, pushed to the leader of the line's group (or of each
// of the groups that are exactly those pseudo-channels). Only the bookkeeping
// differs: the batch is one record, not one request state per request plus a
// run record and a chain, and when the last group issues its burst it is one
// completion for all its requests (they complete together: same last data).
// Only when the line's group splits while the burst is queued does the
// record count bursts per request (as issueRunBurst does for a run's parts).
//
// Why it is exact: every pseudo-channel gets the burst it gets when the
// requests come one by one, at the same arrival, after the same earlier
// bursts (a held-back run is flushed first); a run of the same requests might
// have taken in neighbours (requests before or after them in the same line),
// so the leaders may differ, but groups are only a way to simulate identical
// pseudo-channels once (PcGroups.h), so the commands and cycles cannot. The
// completions keep the requests' sequences (consecutive), so they come in the
// same (cycle, submission) order. testbench/unit/hbm checks both.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/hbm/HbmModel.h"

namespace tpusim::sim::hbm {

void HbmModel::submitBatch(uint64_t id, uint64_t address, const uint32_t* bytes, uint32_t count,
                           bool isWrite, uint64_t arrivalCycle) {
  if (count == 0) throw std::logic_error("HbmModel::submitBatch: a batch of 0 requests");
  if (arrivalCycle < now_)
    throw std::logic_error("HbmModel::submitBatch: batch arrives at cycle " +
                           std::to_string(arrivalCycle) + ", before the model's time " +
                           std::to_string(now_));
  if (fast_ && submitBatchRecord(id, address, bytes, count, isWrite, arrivalCycle)) return;
  uint64_t at = address;
  for (uint32_t i = 0; i < count; ++i) {
    submitOne(HbmRequest{id, at, bytes[i], isWrite, arrivalCycle}, i);
    at += bytes[i];
  }
}

bool HbmModel::submitBatchRecord(uint64_t id, uint64_t address, const uint32_t* bytes,
                                 uint32_t count, bool isWrite, uint64_t arrivalCycle) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (bytes[i] == 0) throw std::logic_error("HbmModel::submitBatch: request of 0 bytes");
    // A request that starts within the previous one's last burst would give
    // that pseudo-channel a second burst: one by one.
    if (i > 0 && !batchable(address, address + total, address + total)) return false;
    total += bytes[i];
  }
  const uint64_t first = burstOf(address), last = burstOf(address + total - 1);
  if (!batchable(address, address, address + total - 1)) return false;
  flushRun();
  const uint32_t n = uint32_t(last - first + 1);
  const BurstLocation& loc = locateInLine(first);
  PcBurst b;
  const uint64_t arrival = hbmAtOrAfter(arrivalCycle);
  const uint32_t pc0 = burstAt(loc, 0, isWrite, arrival, &b);
  int64_t leader = lineLeader(pc0, n);
  if (leader < 0 && mergeIdleLine(pc0, n)) leader = lineLeader(pc0, n);
  const std::vector<uint32_t>* leaders = &runLeaders_;
  runLeaders_.clear();
  if (leader >= 0)
    runLeaders_.push_back(uint32_t(leader));
  else if (!groupsWithinLine(pc0, n, &leaders))
    return false;  // a group reaches beyond the line's part: one by one (which splits it)
  const uint32_t record = allocateRequest(HbmRequest{id, address, uint32_t(total), isWrite, 0});
  RequestState& rec = requests_[record];
  rec.sequence = sequence_ - 1;
  sequence_ += count - 1;  // the requests' sequences: rec.sequence + i
  rec.isBatch = true;
  rec.count = rec.unreported = count;
  rec.remaining = n;
  rec.firstChannel = uint32_t(inLine(first));
  if (batchParts_.size() <= record) batchParts_.resize(record + 1);
  BatchParts& parts = batchParts_[record];
  parts.split = false;
  parts.ends.resize(count);
  uint64_t at = address;
  for (uint32_t i = 0; i < count; ++i) {
    at += bytes[i];
    parts.ends[i] = uint32_t(burstOf(at - 1) - first + 1);
  }
  if (outstanding_ == 0) lastProgress_ = std::max(lastProgress_, arrival);
  outstanding_ += count;
  b.request = record;
  for (uint32_t l : *leaders) {
    pcs_[l].push(b);  // the same burst for every member
    activate(l);
  }
  return true;
}

void HbmModel::issueBatchBurst(uint32_t pc, uint32_t record, uint64_t dataEnd) {
  RequestState& rec = requests_[record];
  BatchParts& parts = batchParts_[record];
  const uint32_t members = groups_.size(pc);
  if (!parts.split && members == rec.remaining) {
    // Every pseudo-channel issued it at once: every request is done.
    rec.remaining = 0;
    addPending(Pending{coreAtOrAfter(dataEnd), rec.sequence, record, 0, rec.count});
    return;
  }
  // The line's group split while the burst was queued: count the group's
  // channels per request (the batch's channels start at its first one).
  const uint32_t stride = uint32_t(config_.pseudo_channels);
  if (!parts.split) {
    parts.split = true;
    parts.left.resize(rec.count);
    parts.dataEnd.assign(rec.count, 0);
    for (uint32_t i = 0; i < rec.count; ++i)
      parts.left[i] = parts.ends[i] - (i ? parts.ends[i - 1] : 0);
  }
  // The group's channels (all of one pseudo-channel index) per request: as a
  // mask when they fit, else member by member.
  const uint32_t base = rec.firstChannel;
  auto issue = [&](uint32_t i, uint32_t n) {
    parts.dataEnd[i] = std::max(parts.dataEnd[i], dataEnd);
    parts.left[i] -= n;
    if (parts.left[i] == 0)
      addPending(Pending{coreAtOrAfter(parts.dataEnd[i]), rec.sequence + i, record, i, 1});
  };
  if (config_.channels <= 64) {
    const uint64_t mask = channelMask(pc) >> base;
    uint32_t begin = 0;
    for (uint32_t i = 0; i < rec.count; ++i) {
      const uint32_t end = parts.ends[i];
      const uint64_t below = end >= 64 ? ~uint64_t(0) : (uint64_t(1) << end) - 1;
      const uint32_t n = bitCount(mask & below & ~((uint64_t(1) << begin) - 1));
      if (n > 0) issue(i, n);
      begin = end;
    }
  } else {
    for (uint32_t m : groups_.members(pc)) {
      const uint32_t c = m / stride - base;
      uint32_t i = 0;  // the request whose channels hold c
      while (parts.ends[i] <= c) ++i;
      issue(i, 1);
    }
  }
  rec.remaining -= members;
}

}  // namespace tpusim::sim::hbm
