// One HBM pseudo-channel: its banks (open-row state and timing), its data bus,
// its refresh schedule and its FR-FCFS scheduler. Plain C++, HBM clock cycles.
//
// Commands: one row command (ACT, PRE, REF) and one column command (RD, WR) per
// cycle, as HBM has separate row and column command buses. Open-page policy:
// a row stays open until a conflicting request, the starvation limit or a
// refresh closes it.
//
// Scheduler (each cycle):
//  1. refresh: when the refresh of a bank (per_bank) or of all banks (all_bank)
//     is due, that bank takes no new ACT or column command; it is precharged
//     as soon as tRAS/tRTP/tWR allow, then refreshed after tRP; per_bank
//     refreshes banks round-robin every tREFI / banks cycles, busy tRFCsb.
//  2. column command: the oldest queued burst whose row is open and whose
//     timing (tRCD, tCCD_S/L, tWTR, read/write turnaround, data bus) allows it
//     now ("first ready": row hits go ahead of older misses).
//  3. row command: for the oldest request of each bank whose row is not open,
//     the oldest that can issue now: PRE of the open row (only when no queued
//     burst hits it, or the bank's oldest request has been passed by
//     `starvation_limit` younger row hits), or ACT (tRP, tRRD_S/L, tFAW).
// The queue holds hbm.queue_depth bursts in arrival order; later arrivals wait
// in a FIFO. Pseudo-channels share no command bus here (each has its own).
// When nothing can issue, time jumps to the earliest cycle at which a command
// could, so idle and waiting stretches cost no per-cycle work.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/hbm/HbmStats.h"
#include "sim/hbm/HbmTiming.h"

namespace tpusim::sim::hbm {

struct PcBurst {
  uint32_t request = 0;              // the owning request's slot in HbmModel
  uint32_t bankGroup = 0, bank = 0;  // bank: index within the pseudo-channel, in bank group
                                     // bank / banks_per_group
  uint32_t row = 0;
  bool write = false;
  uint64_t arrival = 0;  // HBM cycle at which the scheduler may see it
};

struct IssuedBurst {
  uint32_t request;
  uint64_t dataEnd;  // HBM cycle at which its last data beat has been transferred
};

class PseudoChannel {
 public:
  // skipQuietRowScans: remember the result of a row-command scan that found
  // nothing to issue (the earliest cycle one could) until something it read
  // changes, instead of scanning the banks again every cycle; also sleep past
  // cycles at which nothing can issue (push, advanceSteps). Same commands and
  // cycles; the fast HBM model turns it on, the detailed one keeps plain stepping.
  explicit PseudoChannel(const HbmTiming& timing, bool skipQuietRowScans = false);

  // Bursts must arrive no earlier than time().
  void push(const PcBurst& burst);
  bool hasWork() const { return queued_ > 0 || inboxHead_ < inbox_.size(); }
  uint64_t time() const { return time_; }

  // Simulates HBM cycles [time(), limit); every column command issued is
  // appended to `issued`.
  void advance(uint64_t limit, std::vector<IssuedBurst>& issued) {
    // Asleep until limit or later: what the loop of advanceSteps would do.
    if (wakeAt_ >= int64_t(limit) && hasWork()) {
      time_ = std::max<uint64_t>(time_, limit);
      return;
    }
    advanceSteps(limit, issued);
  }

  const HbmChannelStats& stats() const { return stats_; }
  void setStats(const HbmChannelStats& stats) { stats_ = stats; }

  // Whether this and `other`, both without work and at the same time(), will
  // do exactly the same (commands, cycles) from now on given the same bursts:
  // timestamps already in the past compare equal (PseudoChannelEquivalence.cpp).
  bool sameFutureAs(const PseudoChannel& other) const;
  // Whether this and `other`, both at the same time(), with work or not, will
  // do exactly the same (commands, cycles, and the requests of the bursts they
  // issue) from now on given the same bursts: the same queue and inbox in age
  // order, burst for burst (slot numbers and age values aside), and the
  // same timing as sameFutureAs compares it (PseudoChannelEquivalence.cpp).
  bool sameStateAs(const PseudoChannel& other) const;

 private:
  enum Kind : uint8_t { Hit, Miss, Conflict };
  // A queued burst. Queue entries live in a fixed slab; each bank keeps its
  // entries in a singly linked list in age order, so that scheduling costs
  // O(banks) per cycle rather than O(queue entries).
  struct Entry {
    PcBurst burst;
    uint64_t age = 0;       // admission order
    uint32_t bypassed = 0;  // younger bursts to the same bank that were served first
    int32_t next = -1;      // next (younger) entry of the same bank
    // Neighbours in the queue's age order (all banks): the fast model's
    // column pick looks at the oldest entries first (oldestReadyHit).
    int32_t older = -1, younger = -1;
    Kind kind = Hit;
  };
  struct Bank {
    bool open = false;
    bool refreshDue = false;
    uint32_t row = 0;
    int64_t readyAct = 0;  // tRP after PRE, end of refresh
    int64_t readyPre = 0;  // tRAS after ACT, tRTP after RD, tWR after write data
    int64_t readyCol = 0;  // tRCD after ACT
    int32_t head = -1, tail = -1;
    uint32_t hits = 0;       // queued entries for the open row
    uint32_t writeHits = 0;  // those of them that are writes
    uint32_t group = 0;      // its bank group (bank / banks_per_group)
    // The head entry's age (when head >= 0), so that the scans compare ages
    // without loading the entry (a cache miss per bank and scan).
    uint64_t headAge = 0;
  };

  // One scheduling decision at time_; returns true when a command issued
  // (*rowUsed: a row command among them). *next: a cycle before which no
  // command but those issued now (and, after a column command, the next
  // column command) can issue, unless bursts waiting in the inbox get in.
  bool step(std::vector<IssuedBurst>& issued, int64_t* next, bool* rowUsed);
  // No column command can issue before this (tCCD_S, tWTR, turnaround, bus).
  int64_t columnBound() const {
    return std::max(colReady_, std::min(std::max(readReady_, busFree_ - t_.tCL),
                                        std::max(writeReady_, busFree_ - t_.tCWL)));
  }
  // No column command can issue before this: not before the first bank with
  // row hits is ready for one (tRCD, bank-group tCCD_L) and for the kind of
  // its hits (readAt / writeAt: tCCD_S, tWTR, turnaround, bus; a bank
  // streaming reads waits for the write-to-read turnaround even when writes
  // could go now), so that the step after a column command is not one that
  // finds the other hits waiting (a lower bound: starved banks count too).
  // Never below min(readAt, writeAt), i.e. columnBound().
  int64_t banksColumnBound(int64_t readAt, int64_t writeAt) const {
    const int64_t shared = std::min(readAt, writeAt);
    int64_t banksAt = kNever;
    for (size_t w = 0; w < hitBanks_.size(); ++w)
      for (uint64_t m = hitBanks_[w]; m != 0; m &= m - 1) {
        const Bank& b = banks_[w * 64 + size_t(__builtin_ctzll(m))];
        const int64_t kindAt = b.writeHits == 0 ? readAt : b.writeHits == b.hits ? writeAt : shared;
        const int64_t at = std::max({b.readyCol, colReadyGroup_[b.group], kindAt});
        if (at <= shared) return shared;  // it cannot be later
        banksAt = std::min(banksAt, at);
      }
    return banksAt == kNever ? shared : banksAt;
  }
  bool stepColumn(std::vector<IssuedBurst>& issued, int64_t* next);
  // The slot of the oldest row hit the column scheduler may serve, when it is
  // also ready now (and so what stepColumn's scan would pick), else -1.
  int32_t oldestReadyHit(int64_t readAt, int64_t writeAt) const;
  bool stepRow(int64_t* next);
  bool stepRefresh(int64_t* next);
  bool starved(const Bank& b) const;
  // The timestamps of sameFutureAs (banks, bank groups, bus, tFAW), each as of time_.
  bool sameTimingAs(const PseudoChannel& other) const;
  void advanceSteps(uint64_t limit, std::vector<IssuedBurst>& issued);
  // push: whether `burst`, arriving before wakeAt_, can lead to no command before it.
  bool quietUntilWake(const PcBurst& burst) const;
  // After a column command: whether the bursts the free slots let in can lead
  // to no command before wakeAt_.
  bool admissionsQuiet() const;
  // push into a pseudo-channel without work: the first cycle a command can issue.
  int64_t firstCommandAlone(const PcBurst& burst) const;
  void admitArrivals();
  void skipIdle(uint64_t limit);
  bool skipRefreshesClosedForm(uint64_t limit);

  int64_t earliestActivate(uint32_t bank, uint32_t group) const;
  // The earliest cycle at which the bank's row command (PRE or ACT for its
  // oldest burst) can issue; kNever when it wants none now. The row scan's
  // result is the minimum over banks; rowQuietUntil_ takes a bank's bound
  // when only that bank changed, instead of scanning all of them again.
  int64_t rowCommandBound(uint32_t bank) const {
    // What stepRow's scan finds for this bank alone (inline: mostly the first tests).
    const Bank& b = banks_[bank];
    if (b.head < 0 || b.refreshDue) return kNever;
    const Entry& h = slots_[size_t(b.head)];
    if (!b.open) return earliestActivate(bank, h.burst.bankGroup);
    if (b.row == h.burst.row || (b.hits > 0 && !starved(b))) return kNever;
    return b.readyPre;
  }
  void issueColumn(int32_t slot, int32_t previous, std::vector<IssuedBurst>& issued);
  // What stepRow's scan reports as its next when no bank can issue now: the
  // earliest cycle of any bank's row command (kNever: none wants one).
  int64_t rowScanBound() const {
    int64_t at = kNever;
    for (size_t w = 0; w < rowBanks_.size(); ++w)
      for (uint64_t m = rowBanks_[w]; m != 0; m &= m - 1)
        at = std::min(at, rowCommandBound(uint32_t(w * 64 + size_t(__builtin_ctzll(m)))));
    return at;
  }
  void activate(uint32_t bank, uint32_t group, uint32_t row);
  void precharge(uint32_t bank);
  void refresh(uint32_t bank);  // all banks when bank == kAllBanks
  void syncBank(uint32_t bank) {
    const Bank& b = banks_[bank];
    const uint64_t bit = uint64_t(1) << (bank % 64);
    const bool hit = b.open && b.hits > 0 && !b.refreshDue;
    const bool row =
        b.head >= 0 && !b.refreshDue && !(b.open && b.row == slots_[size_t(b.head)].burst.row);
    hitBanks_[bank / 64] = (hitBanks_[bank / 64] & ~bit) | (hit ? bit : 0);
    rowBanks_[bank / 64] = (rowBanks_[bank / 64] & ~bit) | (row ? bit : 0);
  }
  int64_t refreshDueAt() const { return (int64_t(refreshIndex_) + 1) * t_.refreshInterval; }

  static constexpr uint32_t kAllBanks = ~0u;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  HbmTiming t_;
  uint64_t time_ = 0;
  // No command can issue before wakeAt_ unless a burst arrives (push lowers it).
  int64_t wakeAt_ = 0;
  // Arrives later than time_, or waits for queue space: inbox_[inboxHead_..]
  // in arrival order (a vector with a moving front, compacted when drained).
  std::vector<PcBurst> inbox_;
  size_t inboxHead_ = 0;
  std::vector<Entry> slots_;  // queue_depth entries
  std::vector<int32_t> freeSlots_;
  size_t queued_ = 0;
  uint64_t nextAge_ = 0;
  int32_t oldest_ = -1, youngest_ = -1;  // ends of the age order of queued entries
  std::vector<Bank> banks_;
  // One bit per bank with queued entries (bank i: word i / 64, bit i % 64), so
  // that the schedulers visit only those banks, still in index order.
  std::vector<uint64_t> busyBanks_;
  // The same for the banks each scheduler may pick (syncBank keeps them):
  // hitBanks_, open with queued row hits and no refresh due (column
  // commands); rowBanks_, queued entries, no refresh due and an oldest entry
  // that the open row (if any) does not serve (row commands).
  std::vector<uint64_t> hitBanks_, rowBanks_;
  std::vector<int64_t> colReadyGroup_, actReadyGroup_;
  int64_t colReady_ = 0, actReady_ = 0;
  int64_t readReady_ = 0, writeReady_ = 0;  // tWTR, read-to-write turnaround
  int64_t busFree_ = 0;                     // data bus
  std::array<int64_t, 4> lastActs_{};       // for tFAW, oldest first
  uint64_t actCount_ = 0;
  uint64_t refreshIndex_ = 0;  // refreshes issued so far (or skipped past while idle)
  bool skipQuietRowScans_;
  // stepRow can issue nothing before this cycle and reports it as its next
  // (kNever: no bank wants a row command): the result of its last scan, kept
  // until something that scan read changes (0 then).
  int64_t rowQuietUntil_ = 0;
  // After a column command the fast model wakes at columnBound(), or at
  // banksColumnBound() while that pays: from a step there that issued
  // nothing (columnWake_: the wake was set after a column command) until it
  // last found no later cycle. Either is a lower bound: only the cost differs.
  bool boundBanks_ = false, columnWake_ = false;
  HbmChannelStats stats_;
  // The sum of a hash of every burst queued or in the inbox (request, bank,
  // row, direction): equal for equal contents in any order, so that
  // sameStateAs rejects most pairs without walking their queues.
  uint64_t burstSum_ = 0;
  static uint64_t burstHash(const PcBurst& b) {
    uint64_t x = (uint64_t(b.request) << 32 | b.row) ^
                 (uint64_t(b.bank) << 1 | b.write) * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 32);
  }
};

}  // namespace tpusim::sim::hbm
