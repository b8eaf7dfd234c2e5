#include "sim/hbm/PseudoChannel.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace tpusim::sim::hbm {

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
}

PseudoChannel::PseudoChannel(const HbmTiming& timing) : t_(timing) {
  banks_.resize(t_.banks);
  colReadyGroup_.assign(t_.bankGroups, 0);
  actReadyGroup_.assign(t_.bankGroups, 0);
  bankHasHit_.resize(t_.banks);
  bankCapped_.resize(t_.banks);
  bankSeen_.resize(t_.banks);
  queue_.reserve(t_.queueDepth);
}

void PseudoChannel::push(const PcBurst& burst) {
  // Keep the inbox in arrival order (stable for equal arrivals).
  auto it = inbox_.end();
  while (it != inbox_.begin() && std::prev(it)->arrival > burst.arrival) --it;
  inbox_.insert(it, burst);
}

void PseudoChannel::admitArrivals() {
  while (!inbox_.empty() && inbox_.front().arrival <= time_ &&
         queue_.size() < size_t(t_.queueDepth)) {
    queue_.push_back(Entry{inbox_.front()});
    inbox_.pop_front();
  }
}

void PseudoChannel::advance(uint64_t limit, std::vector<IssuedBurst>& issued) {
  while (time_ < limit) {
    if (!hasWork()) {
      skipIdle(limit);
      return;
    }
    int64_t next = kNever;
    if (step(issued, &next)) {
      ++time_;
    } else {
      time_ = std::min<uint64_t>(std::max<int64_t>(next, int64_t(time_) + 1), limit);
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
    bank.refreshDue = true;
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

bool PseudoChannel::step(std::vector<IssuedBurst>& issued, int64_t* outNext) {
  admitArrivals();
  int64_t now = int64_t(time_);
  int64_t next = kNever;
  bool rowUsed = stepRefresh(&next);

  std::fill(bankHasHit_.begin(), bankHasHit_.end(), 0);
  std::fill(bankCapped_.begin(), bankCapped_.end(), 0);
  for (const Entry& e : queue_) {
    const Bank& b = banks_[e.burst.bank];
    if (!b.open) continue;
    if (e.burst.row == b.row)
      bankHasHit_[e.burst.bank] = 1;
    else if (e.bypassed >= t_.starvationLimit)
      bankCapped_[e.burst.bank] = 1;
  }

  // Column command: the oldest ready row hit.
  bool colUsed = false;
  for (size_t i = 0; i < queue_.size(); ++i) {
    const Entry& e = queue_[i];
    const Bank& b = banks_[e.burst.bank];
    if (!b.open || b.row != e.burst.row || b.refreshDue || bankCapped_[e.burst.bank]) continue;
    int64_t t = earliestColumn(e);
    if (t <= now) {
      issueColumn(i, issued);
      colUsed = true;
      break;
    }
    next = std::min(next, t);
  }

  // Row command: the oldest request of each bank whose row is not open.
  if (!rowUsed) {
    std::fill(bankSeen_.begin(), bankSeen_.end(), 0);
    for (Entry& e : queue_) {
      uint32_t bi = e.burst.bank;
      if (bankSeen_[bi]) continue;
      bankSeen_[bi] = 1;
      Bank& b = banks_[bi];
      if (b.refreshDue || (b.open && b.row == e.burst.row)) continue;
      if (b.open) {
        if (bankHasHit_[bi] && !bankCapped_[bi]) continue;  // let the row hits drain first
        if (b.readyPre <= now) {
          precharge(bi);
          e.kind = Conflict;
          rowUsed = true;
          break;
        }
        next = std::min(next, b.readyPre);
      } else {
        int64_t t = earliestActivate(bi, e.burst.bankGroup);
        if (t <= now) {
          activate(bi, e.burst.bankGroup, e.burst.row);
          if (e.kind == Hit) e.kind = Miss;
          rowUsed = true;
          break;
        }
        next = std::min(next, t);
      }
    }
  }

  // A burst that is waiting only for queue space gets in when a column command frees one.
  if (!inbox_.empty() && queue_.size() < size_t(t_.queueDepth))
    next = std::min<int64_t>(next, int64_t(inbox_.front().arrival));
  *outNext = next;
  return rowUsed || colUsed;
}

int64_t PseudoChannel::earliestColumn(const Entry& e) const {
  const Bank& b = banks_[e.burst.bank];
  int64_t t = std::max({b.readyCol, colReady_, colReadyGroup_[e.burst.bankGroup]});
  if (e.burst.write) return std::max({t, writeReady_, busFree_ - t_.tCWL});
  return std::max({t, readReady_, busFree_ - t_.tCL});
}

int64_t PseudoChannel::earliestActivate(uint32_t bank, uint32_t group) const {
  int64_t t = std::max({banks_[bank].readyAct, actReady_, actReadyGroup_[group]});
  if (actCount_ >= lastActs_.size()) t = std::max(t, lastActs_[0] + t_.tFAW);
  return t;
}

void PseudoChannel::issueColumn(size_t index, std::vector<IssuedBurst>& issued) {
  int64_t now = int64_t(time_);
  Entry e = queue_[index];
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
  // Older requests to this bank for another row have now been passed once more.
  for (size_t j = 0; j < index; ++j) {
    Entry& o = queue_[j];
    if (o.burst.bank == e.burst.bank && o.burst.row != e.burst.row) ++o.bypassed;
  }
  issued.push_back(IssuedBurst{e.burst.request, uint64_t(dataEnd)});
  queue_.erase(queue_.begin() + std::ptrdiff_t(index));
}

void PseudoChannel::activate(uint32_t bank, uint32_t group, uint32_t row) {
  int64_t now = int64_t(time_);
  Bank& b = banks_[bank];
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
}

void PseudoChannel::precharge(uint32_t bank) {
  Bank& b = banks_[bank];
  b.open = false;
  b.readyAct = std::max(b.readyAct, int64_t(time_) + t_.tRP);
  ++stats_.precharges;
}

void PseudoChannel::refresh(uint32_t bank) {
  int64_t now = int64_t(time_);
  bool all = bank == kAllBanks;
  int64_t busy = all ? t_.tRFC : t_.tRFCsb;
  for (uint32_t b = all ? 0 : bank; b < (all ? uint32_t(t_.banks) : bank + 1); ++b) {
    banks_[b].readyAct = now + busy;
    banks_[b].refreshDue = false;
    stats_.refreshCycles += uint64_t(busy);
  }
  ++refreshIndex_;
  ++stats_.refreshes;
}

}  // namespace tpusim::sim::hbm
