#include "sim/hbm/PseudoChannel.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace tpusim::sim::hbm {

PseudoChannel::PseudoChannel(const HbmTiming& timing, bool skipQuietRowScans)
    : t_(timing), skipQuietRowScans_(skipQuietRowScans) {
  banks_.resize(t_.banks);
  for (size_t i = 0; i < banks_.size(); ++i)
    banks_[i].group = uint32_t(i / size_t(t_.banksPerGroup));
  busyBanks_.assign((size_t(t_.banks) + 63) / 64, 0);
  hitBanks_ = rowBanks_ = busyBanks_;
  colReadyGroup_.assign(t_.bankGroups, 0);
  actReadyGroup_.assign(t_.bankGroups, 0);
  slots_.resize(size_t(t_.queueDepth));
  for (int32_t i = t_.queueDepth - 1; i >= 0; --i) freeSlots_.push_back(i);
}

void PseudoChannel::push(const PcBurst& burst) {
  const bool wasIdle = !hasWork();
  burstSum_ += burstHash(burst);
  // Keep the inbox in arrival order (stable for equal arrivals).
  if (inboxHead_ == inbox_.size()) {
    inbox_.clear();
    inboxHead_ = 0;
  } else if (inboxHead_ >= 64 && 2 * inboxHead_ >= inbox_.size()) {
    // Drop the admitted front (amortized O(1) per burst).
    inbox_.erase(inbox_.begin(), inbox_.begin() + std::ptrdiff_t(inboxHead_));
    inboxHead_ = 0;
  }
  size_t at = inbox_.size();
  while (at > inboxHead_ && inbox_[at - 1].arrival > burst.arrival) --at;
  const bool last = at == inbox_.size();
  if (last)
    inbox_.push_back(burst);
  else
    inbox_.insert(inbox_.begin() + std::ptrdiff_t(at), burst);
  if (skipQuietRowScans_ && wasIdle) {
    wakeAt_ = firstCommandAlone(burst);
    return;
  }
  if (int64_t(burst.arrival) >= wakeAt_) return;
  if (skipQuietRowScans_ && last && quietUntilWake(burst)) return;
  wakeAt_ = int64_t(burst.arrival);
}

int64_t PseudoChannel::firstCommandAlone(const PcBurst& burst) const {
  // Without work, the next command is a refresh (due, or one in progress) or
  // one for this burst, the only one: its column command when it hits the
  // open row, else the PRE of that row or its ACT. Until the earlier of those
  // nothing changes, so the steps before it (at time_, at the arrival) would
  // issue nothing: wake up at it. (Without work, wakeAt_ may be stale.)
  const int64_t now = int64_t(time_);
  int64_t refreshAt = std::numeric_limits<int64_t>::max();
  if (t_.refresh != RefreshMode::None) {
    const uint32_t due = uint32_t(refreshIndex_ % uint64_t(t_.banks));
    if (banks_[t_.refresh == RefreshMode::PerBank ? due : 0].refreshDue) return now;
    refreshAt = refreshDueAt();
  }
  const Bank& b = banks_[burst.bank];
  int64_t at;
  if (b.open && b.row == burst.row)
    at = std::max({b.readyCol, colReadyGroup_[burst.bankGroup], colReady_,
                   burst.write ? std::max(writeReady_, busFree_ - t_.tCWL)
                               : std::max(readReady_, busFree_ - t_.tCL)});
  else
    at = b.open ? b.readyPre : earliestActivate(burst.bank, burst.bankGroup);
  at = std::max(at, int64_t(burst.arrival));
  return std::max(now, std::min(at, refreshAt));
}

bool PseudoChannel::quietUntilWake(const PcBurst& burst) const {
  // No command issues in [time_, wakeAt_), so the state at the burst's arrival
  // is the state now. Admitted at its arrival, could the burst lead to a
  // command before wakeAt_? If not, admitting it at wakeAt_ instead (behind
  // the same inbox entries, so with the same age order) changes nothing, and
  // the step at its arrival, which would issue nothing, is not needed.
  if (freeSlots_.empty()) return true;  // it gets in when a column command frees a slot
  const Bank& b = banks_[burst.bank];
  if (b.refreshDue) return true;  // the bank takes no command before its refresh
  if (b.open && b.row == burst.row) {
    // A row hit: its own column command (hits ahead of other rows only
    // ever delay that bank's row commands).
    if (starved(b)) return true;
    const int64_t bankAt = std::max(b.readyCol, colReadyGroup_[burst.bankGroup]);
    const int64_t kindAt = burst.write ? std::max({colReady_, writeReady_, busFree_ - t_.tCWL})
                                       : std::max({colReady_, readReady_, busFree_ - t_.tCL});
    return std::max(bankAt, kindAt) >= wakeAt_;
  }
  if (b.head >= 0) return true;  // not the bank's oldest: its row command is the head's
  // The bank's oldest: a PRE of the open row, or an ACT.
  const int64_t rowAt = b.open ? b.readyPre : earliestActivate(burst.bank, burst.bankGroup);
  return rowAt >= wakeAt_;
}

bool PseudoChannel::admissionsQuiet() const {
  // The bursts that the free slots let in before wakeAt_, in inbox order:
  // each as if pushed now (quietUntilWake; those behind the first see the
  // state before it, which only makes the answer "not quiet" more often).
  size_t slots = freeSlots_.size();
  for (size_t i = inboxHead_; i < inbox_.size() && slots > 0; ++i, --slots) {
    if (int64_t(inbox_[i].arrival) >= wakeAt_) return true;
    if (!quietUntilWake(inbox_[i])) return false;
  }
  return true;
}

void PseudoChannel::admitArrivals() {
  while (inboxHead_ < inbox_.size() && inbox_[inboxHead_].arrival <= time_ && !freeSlots_.empty()) {
    int32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    // Field by field: a whole Entry built on the stack and copied in stalls
    // on store forwarding (its 16-byte loads read several smaller stores),
    // the costliest instruction of the step in `perf annotate`.
    Entry& e = slots_[size_t(slot)];
    e.burst = inbox_[inboxHead_++];
    e.age = nextAge_++;
    e.bypassed = 0;
    e.next = -1;
    e.younger = -1;
    e.kind = Hit;
    e.older = youngest_;
    (youngest_ >= 0 ? slots_[size_t(youngest_)].younger : oldest_) = slot;
    youngest_ = slot;
    ++queued_;
    Bank& b = banks_[e.burst.bank];
    const bool newOldest = b.tail < 0;
    if (newOldest) {
      b.head = slot;
      b.headAge = e.age;
      busyBanks_[e.burst.bank / 64] |= uint64_t(1) << (e.burst.bank % 64);
    } else {
      slots_[size_t(b.tail)].next = slot;
    }
    b.tail = slot;
    const bool hit = b.open && b.row == e.burst.row;
    const bool firstHit = hit && b.hits++ == 0;
    b.writeHits += hit && e.burst.write;
    // The masks read the head, the open row, the hit count's sign and the
    // refresh flag: behind others, only a first hit changes them.
    if (newOldest || firstHit) syncBank(e.burst.bank);
    // A bank's row command is its oldest burst's: a burst behind others
    // changes none (a hit only adds to the hits its PRE waits for), and a new
    // oldest one brings its bank's bound into the last scan's result.
    if (newOldest) rowQuietUntil_ = std::min(rowQuietUntil_, rowCommandBound(e.burst.bank));
  }
}

void PseudoChannel::advanceSteps(uint64_t limit, std::vector<IssuedBurst>& issued) {
  while (time_ < limit) {
    if (!hasWork()) {
      skipIdle(limit);
      return;
    }
    if (wakeAt_ > int64_t(time_)) {  // nothing can issue before wakeAt_
      time_ = std::min<uint64_t>(uint64_t(wakeAt_), limit);
      continue;
    }
    int64_t next = kNever;
    bool rowUsed = false;
    const size_t issuedBefore = issued.size();
    const bool used = step(issued, &next, &rowUsed);
    // A burst that waits only for queue space gets in when a column command frees one.
    const bool admits = inboxHead_ < inbox_.size() && !freeSlots_.empty();
    if (used) {
      // After a column command alone, the scans' bounds still hold (issuing
      // only delays other commands) and the next column command waits for
      // tCCD_S / the bus: no command before those (the fast model; the
      // detailed one steps the next cycle and finds that out). Bursts let in
      // meanwhile (the slot it freed) wake it earlier only when they could
      // lead to a command before that. After a row and a column command the
      // row scan's bound changed: it is taken now (rowScanBound: what the
      // scan of the next step would keep), with the refresh's, and the wake
      // set the same way (the next cycle when a row command can go then or a
      // refresh is under way). A row command alone sets no wake.
      columnWake_ = false;
      int64_t others = next;  // no command but a column one before this
      const bool both = rowUsed && issued.size() > issuedBefore;
      if (skipQuietRowScans_ && both) {
        rowQuietUntil_ = rowScanBound();
        others = t_.refresh == RefreshMode::None ? rowQuietUntil_
                                                 : std::min(rowQuietUntil_, refreshDueAt());
      }
      if (skipQuietRowScans_ && (!rowUsed || both)) {
        const int64_t readAt = std::max({colReady_, readReady_, busFree_ - t_.tCL});
        const int64_t writeAt = std::max({colReady_, writeReady_, busFree_ - t_.tCWL});
        const int64_t shared = std::min(readAt, writeAt);  // columnBound()
        int64_t bound = shared;
        if (boundBanks_) {
          bound = banksColumnBound(readAt, writeAt);
          boundBanks_ = bound > shared;
        }
        wakeAt_ = std::min(others, bound);
        columnWake_ = true;
        if (admits && int64_t(inbox_[inboxHead_].arrival) < wakeAt_ && !admissionsQuiet())
          wakeAt_ = int64_t(inbox_[inboxHead_].arrival);
      }
      ++time_;
    } else {
      if (columnWake_) boundBanks_ = true;  // the wake after a column command was too early
      columnWake_ = false;
      if (admits) next = std::min<int64_t>(next, int64_t(inbox_[inboxHead_].arrival));
      wakeAt_ = std::max<int64_t>(next, int64_t(time_) + 1);
      time_ = std::min<uint64_t>(uint64_t(wakeAt_), limit);
    }
  }
}

void PseudoChannel::skipIdle(uint64_t limit) {
  // Only refresh happens while idle: jump from one refresh command to the next.
  while (time_ < limit) {
    if (t_.refresh == RefreshMode::None) {
      time_ = limit;
      return;
    }
    int64_t due = refreshDueAt();
    if (int64_t(time_) <= due && skipRefreshesClosedForm(limit)) return;
    if (int64_t(time_) < due) {
      time_ = std::min<uint64_t>(due, limit);
      continue;
    }
    int64_t next = kNever;
    if (stepRefresh(&next))
      ++time_;
    else
      time_ = std::min<uint64_t>(std::max<int64_t>(next, int64_t(time_) + 1), limit);
  }
}

bool PseudoChannel::skipRefreshesClosedForm(uint64_t limit) {
  // Valid when every bank is closed and free by the next due refresh: then
  // each refresh issues exactly when due, one bank (or all) at a time, and the
  // state after the last one before `limit` follows arithmetically.
  int64_t due = refreshDueAt();
  for (const Bank& b : banks_)
    if (b.open || b.refreshDue || b.readyAct > due) return false;
  const int64_t interval = t_.refreshInterval;
  const uint64_t lastIndex = limit == 0 ? 0 : (limit - 1) / uint64_t(interval);  // k + 1 <= this
  if (lastIndex >= refreshIndex_ + 1) {
    uint64_t n = lastIndex - refreshIndex_;  // refreshes k = refreshIndex_ .. lastIndex - 1
    uint64_t lastK = lastIndex - 1;
    if (t_.refresh == RefreshMode::AllBank) {
      for (Bank& b : banks_) b.readyAct = int64_t(lastK + 1) * interval + t_.tRFC;
      stats_.refreshCycles += n * uint64_t(t_.tRFC) * uint64_t(t_.banks);
    } else {
      const uint64_t nb = uint64_t(t_.banks);
      for (uint64_t b = 0; b < nb; ++b) {
        // The last k <= lastK with k % banks == b, if it is a refresh of this window.
        if (lastK % nb < b && lastK < nb) continue;
        uint64_t k = lastK - ((lastK % nb + nb - b) % nb);
        if (k < refreshIndex_) continue;
        banks_[b].readyAct = int64_t(k + 1) * interval + t_.tRFCsb;
      }
      stats_.refreshCycles += n * uint64_t(t_.tRFCsb);
    }
    stats_.refreshes += n;
    refreshIndex_ += n;
  }
  time_ = limit;
  return true;
}

bool PseudoChannel::stepRefresh(int64_t* next) {
  if (t_.refresh == RefreshMode::None) return false;
  int64_t now = int64_t(time_);
  int64_t due = refreshDueAt();
  if (now < due) {
    *next = std::min(*next, due);
    return false;
  }
  uint32_t first = 0, last = uint32_t(t_.banks);
  if (t_.refresh == RefreshMode::PerBank) {
    first = uint32_t(refreshIndex_ % uint64_t(t_.banks));
    last = first + 1;
  }
  int64_t ready = 0;
  bool allClosed = true;
  for (uint32_t b = first; b < last; ++b) {
    Bank& bank = banks_[b];
    if (!bank.refreshDue) rowQuietUntil_ = 0;
    bank.refreshDue = true;
    syncBank(b);
    if (bank.open) {
      allClosed = false;
      if (bank.readyPre <= now) {
        precharge(b);
        return true;
      }
      *next = std::min(*next, bank.readyPre);
    } else {
      ready = std::max(ready, bank.readyAct);
    }
  }
  if (!allClosed) return false;
  if (ready <= now) {
    refresh(t_.refresh == RefreshMode::PerBank ? first : kAllBanks);
    return true;
  }
  *next = std::min(*next, ready);
  return false;
}

bool PseudoChannel::step(std::vector<IssuedBurst>& issued, int64_t* outNext, bool* outRowUsed) {
  admitArrivals();
  int64_t next = kNever;
  bool rowUsed = false;
  if (t_.refresh != RefreshMode::None) {
    const int64_t due = refreshDueAt();
    if (int64_t(time_) < due)
      next = due;  // what stepRefresh finds before the refresh is due
    else
      rowUsed = stepRefresh(&next);
  }
  bool colUsed = stepColumn(issued, &next);
  if (!rowUsed) rowUsed = stepRow(&next);
  *outRowUsed = rowUsed;
  *outNext = next;
  return rowUsed || colUsed;
}

bool PseudoChannel::starved(const Bank& b) const {
  // The bank's oldest request wants another row and has been passed by
  // `starvation_limit` younger row hits: the open row must close for it.
  if (b.head < 0 || !b.open) return false;
  const Entry& h = slots_[size_t(b.head)];
  return h.burst.row != b.row && h.bypassed >= t_.starvationLimit;
}

bool PseudoChannel::stepColumn(std::vector<IssuedBurst>& issued, int64_t* next) {
  const int64_t now = int64_t(time_);
  // Constraints shared by every read (or every write) of this pseudo-channel.
  const int64_t readAt = std::max({colReady_, readReady_, busFree_ - t_.tCL});
  const int64_t writeAt = std::max({colReady_, writeReady_, busFree_ - t_.tCWL});
  if (std::min(readAt, writeAt) > now) {
    *next = std::min(*next, std::min(readAt, writeAt));
    return false;
  }
  // The oldest ready row hit over all banks.
  if (skipQuietRowScans_) {
    const int32_t pick = oldestReadyHit(readAt, writeAt);
    if (pick >= 0) {
      const Bank& b = banks_[slots_[size_t(pick)].burst.bank];
      int32_t previous = -1;  // older entries of its bank are for other rows: few
      for (int32_t i = b.head; i != pick; i = slots_[size_t(i)].next) previous = i;
      issueColumn(pick, previous, issued);
      return true;
    }
  }
  int32_t best = -1, bestPrevious = -1;
  uint64_t bestAge = ~uint64_t(0);
  for (size_t w = 0; w < hitBanks_.size(); ++w)
    for (uint64_t m = hitBanks_[w]; m != 0; m &= m - 1) {
      Bank& b = banks_[w * 64 + size_t(__builtin_ctzll(m))];
      int32_t head = b.head;
      // Every entry of the bank is younger than the best hit so far: none
      // can win. (Its bound on *next is not needed either: a column command
      // issues, and the next one waits for columnBound(), which bounds it.)
      if (b.headAge > bestAge) continue;
      if (starved(b)) continue;  // open, with hits, no refresh due: hitBanks_
      // Every hit of a bank shares its tRCD and bank-group tCCD_L constraints.
      int64_t bankAt = std::max(b.readyCol, colReadyGroup_[b.group]);
      bool readOk = std::max(bankAt, readAt) <= now, writeOk = std::max(bankAt, writeAt) <= now;
      if (!readOk && !writeOk) {
        *next = std::min(*next, std::max(bankAt, std::min(readAt, writeAt)));
        continue;
      }
      // Only hits of the kind that is not ready (a bank streaming reads and
      // writes to one row): what the walk below finds, without walking. (The
      // fast model; the detailed one walks, so the equality tests check this.)
      if (skipQuietRowScans_ && !(readOk && b.hits > b.writeHits) &&
          !(writeOk && b.writeHits > 0)) {
        *next = std::min(*next, std::max(bankAt, readOk ? writeAt : readAt));
        continue;
      }
      int32_t previous = -1;
      bool found = false;
      for (int32_t i = head; i >= 0; previous = i, i = slots_[size_t(i)].next) {
        const Entry& e = slots_[size_t(i)];
        if (e.burst.row != b.row || !(e.burst.write ? writeOk : readOk)) continue;
        found = true;
        if (e.age < bestAge) {
          best = i;
          bestPrevious = previous;
          bestAge = e.age;
        }
        break;  // the younger hits of this bank are younger than this one
      }
      // Only hits of the other kind, which is not ready yet.
      if (!found) *next = std::min(*next, std::max(bankAt, readOk ? writeAt : readAt));
    }
  if (best < 0) return false;
  issueColumn(best, bestPrevious, issued);
  return true;
}

int32_t PseudoChannel::oldestReadyHit(int64_t readAt, int64_t writeAt) const {
  // The first entry in age order that is a row hit of a bank the scan visits
  // (hitBanks_: open, with hits, no refresh due; not starved) is the oldest
  // hit of all, and the first of its bank's list for the open row (the older
  // entries of its bank are for other rows). Ready now, it is the scan's
  // pick; not ready, a younger hit may be, and the scan decides. The walk
  // gives up after a few entries that are not hits (bursts waiting for a row).
  constexpr int kWalk = 4;
  const int64_t now = int64_t(time_);
  int32_t i = oldest_;
  for (int n = 0; i >= 0 && n < kWalk; ++n, i = slots_[size_t(i)].younger) {
    const Entry& e = slots_[size_t(i)];
    const uint32_t bank = e.burst.bank;
    if (!((hitBanks_[bank / 64] >> (bank % 64)) & 1)) continue;
    const Bank& b = banks_[bank];
    if (e.burst.row != b.row || starved(b)) continue;
    const int64_t bankAt = std::max(b.readyCol, colReadyGroup_[e.burst.bankGroup]);
    return std::max(bankAt, e.burst.write ? writeAt : readAt) <= now ? i : -1;
  }
  return -1;
}

bool PseudoChannel::stepRow(int64_t* next) {
  const int64_t now = int64_t(time_);
  if (now < rowQuietUntil_) {  // the scan below would find what the last one did
    *next = std::min(*next, rowQuietUntil_);
    return false;
  }
  int64_t rowNext = kNever;
  // The oldest request of each bank decides that bank's row command; the
  // oldest bank whose command can issue now gets the row command bus.
  int bestBank = -1;
  bool bestIsPre = false;
  uint64_t bestAge = ~uint64_t(0);
  for (size_t w = 0; w < rowBanks_.size(); ++w)
    for (uint64_t m = rowBanks_[w]; m != 0; m &= m - 1) {
      const size_t bi = w * 64 + size_t(__builtin_ctzll(m));
      const Bank& b = banks_[bi];
      // Queued entries, no refresh due, the oldest not served by the open row: rowBanks_.
      if (b.headAge > bestAge) continue;
      if (b.open) {
        if (b.hits > 0 && !starved(b)) continue;  // let the row hits drain first
        if (b.readyPre > now) {
          rowNext = std::min(rowNext, b.readyPre);
          continue;
        }
        bestIsPre = true;
      } else {
        int64_t t = earliestActivate(uint32_t(bi), b.group);
        if (t > now) {
          rowNext = std::min(rowNext, t);
          continue;
        }
        bestIsPre = false;
      }
      bestBank = int(bi);
      bestAge = b.headAge;
    }
  *next = std::min(*next, rowNext);
  if (bestBank < 0) {
    if (skipQuietRowScans_) rowQuietUntil_ = rowNext;
    return false;
  }
  Bank& b = banks_[size_t(bestBank)];
  Entry& h = slots_[size_t(b.head)];
  if (bestIsPre) {
    precharge(uint32_t(bestBank));
    h.kind = Conflict;
  } else {
    activate(uint32_t(bestBank), h.burst.bankGroup, h.burst.row);
    if (h.kind == Hit) h.kind = Miss;
  }
  return true;
}

int64_t PseudoChannel::earliestActivate(uint32_t bank, uint32_t group) const {
  int64_t t = std::max({banks_[bank].readyAct, actReady_, actReadyGroup_[group]});
  if (actCount_ >= lastActs_.size()) t = std::max(t, lastActs_[0] + t_.tFAW);
  return t;
}

void PseudoChannel::issueColumn(int32_t slot, int32_t previous, std::vector<IssuedBurst>& issued) {
  int64_t now = int64_t(time_);
  Entry& e = slots_[size_t(slot)];
  Bank& b = banks_[e.burst.bank];
  int64_t dataEnd;
  if (e.burst.write) {
    dataEnd = now + t_.tCWL + t_.burstCycles;
    readReady_ = std::max(readReady_, dataEnd + t_.tWTR);
    b.readyPre = std::max(b.readyPre, dataEnd + t_.tWR);
    ++stats_.writeBursts;
    stats_.bytesWritten += uint64_t(t_.burstBytes);
  } else {
    dataEnd = now + t_.tCL + t_.burstCycles;
    writeReady_ = std::max(writeReady_, now + t_.tRTW);
    b.readyPre = std::max(b.readyPre, now + t_.tRTP);
    ++stats_.readBursts;
    stats_.bytesRead += uint64_t(t_.burstBytes);
  }
  busFree_ = dataEnd;
  colReady_ = now + t_.tCCD_S;
  colReadyGroup_[e.burst.bankGroup] = now + t_.tCCD_L;
  stats_.busyCycles += uint64_t(t_.burstCycles);
  (e.kind == Hit ? stats_.rowHits : e.kind == Miss ? stats_.rowMisses : stats_.rowConflicts) += 1;
  // The older entries of this bank (those before it in the list) for another
  // row have been passed once more.
  for (int32_t i = b.head; i != slot; i = slots_[size_t(i)].next) {
    Entry& o = slots_[size_t(i)];
    if (o.burst.row != e.burst.row) ++o.bypassed;
  }
  burstSum_ -= burstHash(e.burst);
  IssuedBurst& out = issued.emplace_back();  // in place: see admitArrivals
  out.request = e.burst.request;
  out.dataEnd = uint64_t(dataEnd);
  // Unlink.
  if (previous < 0) {
    b.head = e.next;
    if (b.head < 0)
      busyBanks_[e.burst.bank / 64] &= ~(uint64_t(1) << (e.burst.bank % 64));
    else
      b.headAge = slots_[size_t(b.head)].age;
  } else {
    // An older burst for another row was passed, and the bank has a hit less.
    slots_[size_t(previous)].next = e.next;
    rowQuietUntil_ = 0;
  }
  if (b.tail == slot) b.tail = previous;
  (e.older >= 0 ? slots_[size_t(e.older)].younger : oldest_) = e.younger;
  (e.younger >= 0 ? slots_[size_t(e.younger)].older : youngest_) = e.older;
  --b.hits;
  b.writeHits -= e.burst.write;
  syncBank(e.burst.bank);
  // The bank was open on e's row, so the last row scan skipped it; its next
  // oldest burst (if any) now decides its row command. (The command only
  // delayed this bank's PRE: every other bank's bound still holds.)
  if (previous < 0) rowQuietUntil_ = std::min(rowQuietUntil_, rowCommandBound(e.burst.bank));
  --queued_;
  freeSlots_.push_back(slot);
}

void PseudoChannel::activate(uint32_t bank, uint32_t group, uint32_t row) {
  int64_t now = int64_t(time_);
  Bank& b = banks_[bank];
  rowQuietUntil_ = 0;
  b.open = true;
  b.row = row;
  b.readyCol = now + t_.tRCD;
  b.readyPre = std::max(b.readyPre, now + t_.tRAS);
  actReady_ = now + t_.tRRD_S;
  actReadyGroup_[group] = now + t_.tRRD_L;
  std::rotate(lastActs_.begin(), lastActs_.begin() + 1, lastActs_.end());
  lastActs_.back() = now;
  ++actCount_;
  ++stats_.activates;
  b.hits = b.writeHits = 0;
  for (int32_t i = b.head; i >= 0; i = slots_[size_t(i)].next)
    if (slots_[size_t(i)].burst.row == row) {
      ++b.hits;
      b.writeHits += slots_[size_t(i)].burst.write;
    }
  syncBank(bank);
}

void PseudoChannel::precharge(uint32_t bank) {
  Bank& b = banks_[bank];
  rowQuietUntil_ = 0;
  b.open = false;
  b.hits = b.writeHits = 0;
  syncBank(bank);
  b.readyAct = std::max(b.readyAct, int64_t(time_) + t_.tRP);
  ++stats_.precharges;
}

void PseudoChannel::refresh(uint32_t bank) {
  int64_t now = int64_t(time_);
  bool all = bank == kAllBanks;
  rowQuietUntil_ = 0;
  int64_t busy = all ? t_.tRFC : t_.tRFCsb;
  for (uint32_t b = all ? 0 : bank; b < (all ? uint32_t(t_.banks) : bank + 1); ++b) {
    banks_[b].readyAct = now + busy;
    banks_[b].refreshDue = false;
    syncBank(b);
    stats_.refreshCycles += uint64_t(busy);
  }
  ++refreshIndex_;
  ++stats_.refreshes;
}

}  // namespace tpusim::sim::hbm
