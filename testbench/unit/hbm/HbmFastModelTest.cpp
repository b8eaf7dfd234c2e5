// The fast HBM model (hbm.model = "fast", pseudo-channels simulated in
// groups) against the detailed one (every pseudo-channel simulated): on the
// same calls they must give the same completions (id and cycle) and the
// same per-channel stats, on random request
// streams over every preset and over refresh modes, queue depths and
// starvation limits that make conflicts, refresh and queue overflow common.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <random>
#include <sstream>

#include "isa/target/ChipLoader.h"
#include "sim/hbm/HbmModel.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::hbm;

namespace {

std::string describe(const HbmChannelStats& s) {
  std::ostringstream o;
  o << "rd " << s.readBursts << " wr " << s.writeBursts << " B " << s.bytesRead << "/"
    << s.bytesWritten << " busy " << s.busyCycles << " hit/miss/conf " << s.rowHits << "/"
    << s.rowMisses << "/" << s.rowConflicts << " act " << s.activates << " pre " << s.precharges
    << " ref " << s.refreshes << " refcyc " << s.refreshCycles;
  return o.str();
}

// Both models, driven by the same calls; every answer is compared.
struct Pair {
  HbmModel detailed, fast;
  size_t minGroups = ~size_t(0);

  static target::HbmConfig with(target::HbmConfig c, const char* model) {
    c.model = model;
    return c;
  }
  Pair(const target::HbmConfig& c, double coreHz)
      : detailed(with(c, "detailed"), coreHz), fast(with(c, "fast"), coreHz) {}

  // Submission order per outstanding id, for the order of completions.
  std::map<uint64_t, uint64_t> submitted;
  uint64_t submissions = 0, lastCycle = 0, lastSubmission = 0;
  bool reported = false;

  void submit(const HbmRequest& r) {
    detailed.submit(r);
    fast.submit(r);
    submitted[r.id] = submissions++;
  }
  // A lower bound that may differ (idle pseudo-channels catch up at other
  // times): both are honoured by driving both models to the smaller one.
  uint64_t nextEventCycle() {
    uint64_t a = detailed.nextEventCycle(), b = fast.nextEventCycle();
    REQUIRE((a == UINT64_MAX) == (b == UINT64_MAX));
    return std::min(a, b);
  }
  std::vector<HbmCompletion> advanceTo(uint64_t cycle) {
    std::vector<HbmCompletion> a, b;
    detailed.advanceTo(cycle, a);
    fast.advanceTo(cycle, b);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("completion " << i << " before cycle " << cycle);
      REQUIRE(a[i].id == b[i].id);
      REQUIRE(a[i].cycle == b[i].cycle);
      // Both models report in (cycle, submission) order (HbmModel.h; the
      // models share that code, so it is checked here, not by comparing them).
      const uint64_t order = submitted.at(a[i].id);
      submitted.erase(a[i].id);
      if (reported)
        REQUIRE((a[i].cycle > lastCycle || (a[i].cycle == lastCycle && order > lastSubmission)));
      reported = true;
      lastCycle = a[i].cycle;
      lastSubmission = order;
    }
    minGroups = std::min(minGroups, fast.simulatedPseudoChannels());
    return a;
  }
  // Runs both models until every request in `owner` (id -> stream) completed.
  void drain(std::map<uint64_t, size_t>& owner, uint64_t& now) {
    while (!owner.empty()) {
      now = std::max(now + 1, nextEventCycle() + 1);
      for (const HbmCompletion& done : advanceTo(now)) owner.erase(done.id);
    }
  }
  void compareStats() {
    std::vector<HbmChannelStats> a = detailed.channelStats(), b = fast.channelStats();
    REQUIRE(a.size() == b.size());
    for (size_t ch = 0; ch < a.size(); ++ch) {
      INFO("channel " << ch);
      REQUIRE(describe(a[ch]) == describe(b[ch]));
    }
  }
};

// Streams of requests: each has a base, a stride, a size, a direction and a
// window of requests in flight; some pause for long stretches (idle
// pseudo-channels refresh and regroup).
struct Stream {
  uint64_t next = 0, stride = 0;
  uint32_t bytes = 0;
  bool write = false;
  uint32_t window = 0, inFlight = 0;
  uint64_t left = 0;
  bool randomAddress = false;
};

size_t runRandom(const target::HbmConfig& config, double coreHz, uint64_t seed, uint64_t requests) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  Pair p(config, coreHz);
  const uint64_t capacity = uint64_t(config.capacity_bytes);
  const uint64_t rowSpan = uint64_t(config.row_bytes) * uint64_t(config.channels) *
                           uint64_t(config.pseudo_channels) * uint64_t(config.bank_groups);
  std::vector<Stream> streams(1 + pick(4));
  auto restart = [&](Stream& s) {
    s.bytes = uint32_t(std::array<uint64_t, 6>{32, 64, 256, 512, 512, 2048}[pick(6)]);
    if (pick(4) == 0) s.bytes = uint32_t(1 + pick(1500));         // misaligned sizes
    s.stride = pick(3) == 0 ? rowSpan * (1 + pick(3)) : s.bytes;  // bank conflicts or a stream
    s.next = pick(capacity / 2);
    if (pick(2) == 0) s.next -= s.next % 512;
    s.write = pick(2) == 0;
    s.window = uint32_t(1 + pick(64));
    s.left = 1 + pick(200);
    s.randomAddress = pick(6) == 0;
  };
  for (Stream& s : streams) restart(s);
  std::map<uint64_t, size_t> owner;  // request id -> stream
  uint64_t now = 0, id = 0, pauseUntil = 0;
  while (id < requests || !owner.empty()) {
    if (now >= pauseUntil && id < requests)
      for (size_t i = 0; i < streams.size(); ++i) {
        Stream& s = streams[i];
        while (s.inFlight < s.window && s.left > 0 && pick(8) != 0) {
          uint64_t address = s.randomAddress ? pick(capacity - 4096) : s.next % (capacity - 4096);
          p.submit(HbmRequest{id, address, s.bytes, s.write, now + pick(3) * pick(40)});
          owner[id++] = i;
          s.next += s.stride;
          ++s.inFlight;
          --s.left;
        }
        if (s.left == 0 && s.inFlight == 0) restart(s);
      }
    uint64_t t = p.nextEventCycle();
    uint64_t to = t == UINT64_MAX ? now + 1 + pick(20000) : std::max(t + 1, now + 1);
    if (pick(5) == 0) to = std::min<uint64_t>(to, now + 1 + pick(4));  // submit between events
    if (pick(60) == 0) pauseUntil = now + pick(30000);  // every stream idle for a while
    now = to;
    for (const HbmCompletion& c : p.advanceTo(now)) {
      --streams[owner.at(c.id)].inFlight;
      owner.erase(c.id);
    }
    if (pick(50) == 0) p.compareStats();
  }
  p.compareStats();
  return p.minGroups;
}

}  // namespace

TEST_CASE("fast and detailed HBM models agree on random request streams, every preset",
          "[hbm][sanitize]") {
  for (const char* name : {"v4", "v5e", "v5p", "v6e", "tiny8", "tiny16"}) {
    target::ChipConfig chip = target::loadChip(name);
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      INFO(name << " seed " << seed);
      size_t groups = runRandom(chip.hbm, chip.core.clock_hz, seed, 3000);
      // The fast model did group pseudo-channels at some point.
      CHECK(groups < size_t(chip.hbm.channels * chip.hbm.pseudo_channels));
    }
  }
}

TEST_CASE("fast and detailed HBM models agree under refresh, conflicts and full queues",
          "[hbm][sanitize]") {
  target::ChipConfig chip = target::loadChip("v5e");
  struct Variant {
    const char* refresh;
    int64_t queueDepth, starvation, tREFI;
    bool slow;  // long tFAW, tWTR, tWR, tRTP, tRAS: state that outlives a burst
  };
  for (Variant v : {Variant{"all_bank", 64, 16, 6240, false},
                    Variant{"per_bank", 4, 2, 6240, false}, Variant{"none", 8, 1, 6240, false},
                    Variant{"all_bank", 2, 4, 1200, false}, Variant{"per_bank", 16, 3, 400, false},
                    Variant{"per_bank", 64, 16, 6240, true}, Variant{"none", 8, 4, 6240, true}}) {
    target::HbmConfig c = chip.hbm;
    c.refresh = v.refresh;
    c.queue_depth = v.queueDepth;
    c.starvation_limit = v.starvation;
    c.tREFI = v.tREFI;
    c.tRFC = std::min<int64_t>(c.tRFC, v.tREFI / 2);
    c.tRFCsb = std::min<int64_t>(c.tRFCsb, v.tREFI / 2);
    if (v.slow) {
      c.tRRD_S = 2;
      c.tRRD_L = 3;
      c.tFAW = 160;
      c.tWTR = 45;
      c.tWR = 70;
      c.tRTP = 35;
      c.tRAS = 120;
      c.tCWL = 2;
    }
    for (uint64_t seed = 11; seed <= 14; ++seed) {
      INFO(v.refresh << " queue " << v.queueDepth << " starvation " << v.starvation << " tREFI "
                     << v.tREFI << (v.slow ? " slow" : "") << " seed " << seed);
      runRandom(c, chip.core.clock_hz, seed, 2000);
    }
  }
}

TEST_CASE("pseudo-channels whose last activates still bind tFAW are not merged",
          "[hbm][sanitize]") {
  // Every channel opens row 0 of bank A; channels 8-15 then also open rows
  // 1, 2 and 0 again (three more activates); all go idle until everything
  // but tFAW is in the past, with the same row open everywhere. Then all 16
  // channels get a burst to bank B: channels 8-15 wait for tFAW, 0-7 do not.
  // Merged with channel 0 as leader, the request would complete too early.
  target::HbmConfig c = target::loadChip("v5e").hbm;
  c.address_mapping = "ro-ba-co-bg-pc-ch";
  c.address_hash = "none";  // addresses below name banks by the plain digits
  c.refresh = "none";
  c.tRRD_S = c.tRRD_L = 2;
  c.tFAW = 600;
  Pair p(c, 1.5e9);
  auto address = [&](uint64_t row, uint64_t bankGroup, uint64_t channel) {
    uint64_t index =
        (row * uint64_t(c.banks_per_group * c.columnsPerRow() * c.bank_groups) + bankGroup) *
            uint64_t(c.pseudo_channels * c.channels) +
        channel;
    return index * uint64_t(c.burst_bytes);
  };
  uint64_t now = 0;
  auto runUntilIdle = [&]() {
    while (!p.detailed.idle()) {
      now = std::max(now + 1, p.nextEventCycle() + 1);
      p.advanceTo(now);
    }
  };
  p.submit(HbmRequest{0, address(0, 0, 0), 32 * 16, false, 0});  // bank A, every channel
  runUntilIdle();
  uint64_t id = 1;
  for (uint64_t row : {1, 2, 0}) {
    p.submit(HbmRequest{id++, address(row, 0, 8), 32 * 8, false, now});  // channels 8-15
    runUntilIdle();
  }
  now += 100;
  p.advanceTo(now);
  uint64_t start = now;
  p.submit(HbmRequest{id, address(0, 1, 0), 32 * 16, false, now});  // bank B, every channel
  runUntilIdle();
  INFO("took " << now - start);
  CHECK(now - start > 200);  // tFAW, not a plain activate (about 50 cycles)
  p.compareStats();
}

TEST_CASE("requests within one channel line agree, whole lines and parts of lines",
          "[hbm][sanitize]") {
  // The fast model hands a request that stays within one channel line (its
  // bursts differ only in their channel) to a group without locating every
  // burst, when the group is exactly those channels. Whole-line streams take
  // that path; half and quarter lines first split the groups (and then take
  // it with the smaller groups); idle stretches merge them again. Refresh
  // and a shallow queue keep the pseudo-channels' schedules busy meanwhile.
  target::ChipConfig chip = target::loadChip("v5e");
  for (const char* refresh : {"per_bank", "all_bank"}) {
    target::HbmConfig c = chip.hbm;
    c.refresh = refresh;
    c.queue_depth = 8;
    c.tREFI = 1200;
    c.tRFC = std::min<int64_t>(c.tRFC, 500);
    Pair p(c, chip.core.clock_hz);
    const uint64_t line = uint64_t(c.burst_bytes * c.channels);
    std::mt19937_64 rng(7);
    uint64_t now = 0, id = 0, address = line * 1000;
    size_t outstanding = 0;
    for (int phase = 0; phase < 12; ++phase) {
      // Whole lines, halves, quarters, single bursts, then random parts of lines.
      const uint64_t part = phase % 5 == 4 ? 0 : line >> (2 * (phase % 5));
      const bool write = phase % 3 == 1;
      for (int i = 0; i < 400; ++i) {
        uint64_t bytes = part != 0 ? part : 1 + rng() % line;
        uint64_t offset = part != 0 ? 0 : rng() % (line - bytes + 1);
        p.submit(HbmRequest{id++, address + offset, uint32_t(bytes), write, now});
        ++outstanding;
        address += part != 0 ? part : line;
        if (i % 4 == 3) {  // a few requests per cycle, as the DMA engine issues them
          now = std::max(now + 1, std::min(p.nextEventCycle(), now + 3));
          outstanding -= p.advanceTo(now).size();
        }
      }
      while (outstanding > 0) {  // drain, then idle (groups merge again)
        now = std::max(now + 1, p.nextEventCycle() + 1);
        outstanding -= p.advanceTo(now).size();
      }
      now += 3000;
      p.advanceTo(now);
      p.compareStats();
    }
    // The whole-line phases ran grouped: the 32 pseudo-channels as one group
    // (four whole lines per cycle: line pairs, so both indices take one run).
    CHECK(p.minGroups == 1);
  }
}

TEST_CASE("long sequential runs interleaved with conflicts, refresh and idle gaps agree",
          "[hbm][sanitize]") {
  // Long row-hit runs (whole channel lines, one after another, reads or
  // writes, with as many in flight as the DMA engine allows: full queues and
  // a backlog) broken by requests to other rows of the same banks (conflicts),
  // by refreshes (short tREFI) and by idle gaps of every length, so that
  // bursts arrive at sleeping pseudo-channels (which wake only when the burst
  // could lead to a command before their wake-up), at pseudo-channels without
  // work (woken at the burst's first command or the next refresh, due or in
  // progress) and one cycle after a column command (the next wake-up follows
  // tCCD and the bus). Presets with the bank hash (v5e, v6e).
  for (const char* name : {"v5e", "v6e"})
    for (const char* refresh : {"per_bank", "all_bank"})
      for (int64_t depth : {64, 4}) {
        target::ChipConfig chip = target::loadChip(name);
        target::HbmConfig c = chip.hbm;
        c.refresh = refresh;
        c.queue_depth = depth;
        c.tREFI = 900;
        c.tRFC = std::min<int64_t>(c.tRFC, 300);
        c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
        INFO(name << " " << refresh << " queue " << depth);
        Pair p(c, chip.core.clock_hz);
        const uint64_t line = uint64_t(c.burst_bytes * c.channels);
        const uint64_t rowSpan = uint64_t(c.row_bytes) * uint64_t(c.channels) *
                                 uint64_t(c.pseudo_channels) * uint64_t(c.bank_groups);
        std::mt19937_64 rng(uint64_t(depth) * 31 + uint64_t(refresh[0]));
        uint64_t now = 0, id = 0, address = rowSpan * 64;
        size_t outstanding = 0;
        for (int run = 0; run < 24; ++run) {
          const bool write = rng() % 3 == 0;
          const uint64_t length = 64 + rng() % 1500, window = 1 + rng() % 512;
          for (uint64_t i = 0; i < length; ++i) {
            uint64_t at = address;
            if (rng() % 16 == 0) at += rowSpan * (1 + rng() % 3);  // another row, same bank
            p.submit(HbmRequest{id++, at, uint32_t(line), write, now + (rng() % 8 == 0)});
            ++outstanding;
            address += line;
            // Keep at most `window` in flight; move on every request or few.
            while (outstanding >= window || rng() % 3 == 0) {
              now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 4));
              outstanding -= p.advanceTo(now).size();
              if (outstanding < window) break;
            }
          }
          if (rng() % 2 == 0) {  // drain, then idle across zero or more refreshes
            while (outstanding > 0) {
              now = std::max(now + 1, p.nextEventCycle() + 1);
              outstanding -= p.advanceTo(now).size();
            }
            now += rng() % 4 == 0 ? rng() % 8 : rng() % 5000;
            p.advanceTo(now);
          }
          if (rng() % 4 == 0) address += rowSpan * (1 + rng() % 5);  // a new row
          p.compareStats();
        }
        while (outstanding > 0) {
          now = std::max(now + 1, p.nextEventCycle() + 1);
          outstanding -= p.advanceTo(now).size();
        }
        p.compareStats();
      }
}

TEST_CASE("runs of requests within one channel line agree, also when the line splits meanwhile",
          "[hbm][sanitize]") {
  // Consecutive requests with the same direction and arrival whose bursts
  // follow each other within one channel line (a descriptor cut into
  // requests smaller than a line) reach the fast model's pseudo-channels as
  // one burst per pseudo-channel: one for the line's group, which completes
  // each request when the group issues it. Parts of 1 to 8 bursts (some
  // misaligned, sharing a burst with the previous part, which ends the run),
  // runs broken by a change of direction or arrival, and requests to a few
  // channels of the same line or bank meanwhile, which split the line's
  // group while the run's burst waits in a 4-deep queue (each part then
  // completes when the last group holding its channels issues the burst).
  for (const char* name : {"v5e", "v4"})
    for (const char* refresh : {"per_bank", "all_bank"}) {
      target::ChipConfig chip = target::loadChip(name);
      target::HbmConfig c = chip.hbm;
      c.refresh = refresh;
      c.queue_depth = 4;
      c.tREFI = 1000;
      c.tRFC = std::min<int64_t>(c.tRFC, 300);
      c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
      INFO(name << " " << refresh);
      Pair p(c, chip.core.clock_hz);
      const uint64_t burst = uint64_t(c.burst_bytes), bursts = uint64_t(c.channels);
      const uint64_t line = burst * bursts;
      const uint64_t rowSpan = uint64_t(c.row_bytes) * uint64_t(c.channels) *
                               uint64_t(c.pseudo_channels) * uint64_t(c.bank_groups);
      std::mt19937_64 rng(uint64_t(refresh[0]) * 7 + uint64_t(name[1]));
      uint64_t now = 0, id = 0, address = rowSpan * 40;
      size_t outstanding = 0;
      for (int cycle = 0; cycle < 1500; ++cycle) {
        const bool write = rng() % 4 == 0;
        for (int r = 0, runs = 1 + int(rng() % 3); r < runs; ++r) {
          // One line cut into parts, from a random first burst.
          uint64_t at = address + burst * (rng() % 4 == 0 ? rng() % bursts : 0);
          const uint64_t end = address + line;
          while (at < end) {
            uint64_t bytes = burst * (1 + rng() % 8);
            if (rng() % 10 == 0) bytes -= 1 + rng() % (burst - 1);  // ends mid-burst
            bytes = std::min(bytes, end - at);
            const bool flip = rng() % 25 == 0, later = rng() % 25 == 0;
            p.submit(HbmRequest{id++, at, uint32_t(bytes), write != flip, now + later});
            ++outstanding;
            at += bytes;
            if (rng() % 8 == 0) {  // a few channels of this line, or another row of its bank
              const uint64_t other = rng() % 2 == 0 ? address : address + rowSpan * (1 + rng() % 2);
              p.submit(HbmRequest{id++, other + burst * (rng() % bursts),
                                  uint32_t(burst * (1 + rng() % 3)), rng() % 2 == 0, now});
              ++outstanding;
            }
          }
          address += rng() % 3 == 0 ? rowSpan + line : line;
        }
        now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 6));
        outstanding -= p.advanceTo(now).size();
        if (rng() % 200 == 0) {  // drain and idle: the groups merge again
          while (outstanding > 0) {
            now = std::max(now + 1, p.nextEventCycle() + 1);
            outstanding -= p.advanceTo(now).size();
          }
          now += rng() % 3000;
          p.advanceTo(now);
          p.compareStats();
        }
      }
      while (outstanding > 0) {
        now = std::max(now + 1, p.nextEventCycle() + 1);
        outstanding -= p.advanceTo(now).size();
      }
      p.compareStats();
    }
}

TEST_CASE("runs over a line whose pseudo-channels are several groups agree", "[hbm][sanitize]") {
  // Streams of rows smaller than a channel line (a descriptor's 128-byte
  // rows, four to a v5e line), started a few per cycle in round robin over
  // the streams with a window of requests in flight: the parts of one line
  // arrive in different cycles, so its pseudo-channels drift into several
  // groups, and a later run over the line (two or three rows in one cycle)
  // covers several whole groups, each taking the run's burst for its
  // members. Requests that straddle those groups (rows at odd offsets)
  // make runs whose groups reach beyond them (one by one, splitting),
  // and groups also split while a run's burst waits (4-deep queues).
  for (const char* name : {"v5e", "v6e"})
    for (int depth : {4, 64}) {
      target::ChipConfig chip = target::loadChip(name);
      target::HbmConfig c = chip.hbm;
      c.queue_depth = depth;
      c.tREFI = 1200;
      c.tRFC = std::min<int64_t>(c.tRFC, 300);
      c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
      INFO(name << " queue " << depth);
      Pair p(c, chip.core.clock_hz);
      const uint64_t burst = uint64_t(c.burst_bytes), line = burst * uint64_t(c.channels);
      const uint64_t rowSpan = uint64_t(c.row_bytes) * uint64_t(c.channels) *
                               uint64_t(c.pseudo_channels) * uint64_t(c.bank_groups);
      std::mt19937_64 rng(uint64_t(depth) * 31 + uint64_t(name[1]));
      struct Row {
        uint64_t next;
        uint32_t bytes;
        bool write;
      };
      std::vector<Row> streams;
      for (int s = 0; s < 4; ++s)
        streams.push_back(Row{rowSpan * uint64_t(8 + 3 * s) + line * uint64_t(rng() % 64),
                              uint32_t(line / 4), s == 3});
      std::map<uint64_t, size_t> owner;
      uint64_t now = 0, id = 0;
      size_t turn = 0;
      const size_t window = 24;
      for (int cycle = 0; cycle < 2500; ++cycle) {
        // A few rows this cycle, one stream at a time, up to the window.
        for (int k = 0, n = int(rng() % 5); k < n && owner.size() < window; ++k) {
          const size_t s = turn++ % streams.size();
          Row& row = streams[s];
          const int rows = 1 + int(rng() % 3);  // consecutive rows of that stream: a run
          for (int r = 0; r < rows && owner.size() < window; ++r) {
            uint32_t bytes = row.bytes;
            if (rng() % 12 == 0) bytes = uint32_t(burst * (1 + rng() % 6));  // straddles groups
            p.submit(HbmRequest{id, row.next, bytes, row.write, now});
            owner[id++] = s;
            row.next += bytes;
            if (rng() % 40 == 0) row.next += rowSpan;  // another row of the banks
          }
        }
        now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 3));
        for (const HbmCompletion& done : p.advanceTo(now)) owner.erase(done.id);
        if (rng() % 300 == 0) {  // drain and idle: the groups merge again
          p.drain(owner, now);
          now += rng() % 2000;
          p.advanceTo(now);
          p.compareStats();
        }
      }
      p.drain(owner, now);
      p.compareStats();
    }
}

TEST_CASE("oldest-hit column picks and per-bank row bounds agree under bank-group conflicts",
          "[hbm][sanitize]") {
  // The fast model picks the oldest queued row hit without a scan when it is
  // ready (PseudoChannel::oldestReadyHit) and keeps the row scan's result
  // across admissions and column commands, taking in one bank's bound
  // (rowCommandBound). Streams here meet in two bank groups of one
  // pseudo-channel index: the oldest hit often waits for tCCD_L or tRCD
  // while a younger one in the other group is ready; rows change under
  // queued hits (PREs wait for hits to drain or for starvation); reads and
  // writes mix (the oldest hit's kind is not ready while the other is).
  for (const char* name : {"v5e", "v6e"})
    for (int variant = 0; variant < 4; ++variant) {
      target::ChipConfig chip = target::loadChip(name);
      target::HbmConfig c = chip.hbm;
      c.address_mapping = "ro-ba-co-bg-pc-ch";
      c.address_hash = "none";  // addresses below name banks by the plain digits
      c.queue_depth = std::array<int64_t, 4>{8, 64, 3, 16}[size_t(variant)];
      c.starvation_limit = std::array<int64_t, 4>{2, 16, 1, 4}[size_t(variant)];
      c.refresh = variant == 3 ? "all_bank" : "per_bank";
      c.tREFI = 1500;
      c.tRFC = std::min<int64_t>(c.tRFC, 300);
      c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
      if (variant == 1) c.tCCD_L = 7;  // the bank group binds longer than the bus
      INFO(name << " variant " << variant);
      Pair p(c, chip.core.clock_hz);
      const uint64_t cols = uint64_t(c.columnsPerRow());
      auto address = [&](uint64_t row, uint64_t bank, uint64_t col, uint64_t bankGroup) {
        uint64_t index =
            (((row * uint64_t(c.banks_per_group) + bank) * cols + col) * uint64_t(c.bank_groups) +
             bankGroup) *
            uint64_t(c.pseudo_channels * c.channels);
        return index * uint64_t(c.burst_bytes);
      };
      std::mt19937_64 rng(uint64_t(variant) * 97 + uint64_t(name[1]));
      struct Walk {
        uint64_t row, bank, col, bankGroup;
        bool write;
      };
      std::vector<Walk> walks;
      for (uint64_t s = 0; s < 5; ++s)
        walks.push_back(Walk{rng() % 3, s % 2, rng() % cols, (s / 2) % 2, s == 4});
      std::map<uint64_t, size_t> owner;
      uint64_t now = 0, id = 0;
      const size_t window = 8 + size_t(variant) * 12;
      for (int cycle = 0; cycle < 3000; ++cycle) {
        for (int k = 0, n = int(rng() % 4); k < n && owner.size() < window; ++k) {
          const size_t s = size_t(rng() % walks.size());
          Walk& w = walks[s];
          // One to four channels of a line (each a burst of the same bank and row).
          const uint32_t bytes = uint32_t(c.burst_bytes) * uint32_t(1 + rng() % 4);
          p.submit(HbmRequest{id, address(w.row, w.bank, w.col, w.bankGroup), bytes, w.write,
                              now + (rng() % 4 == 0 ? rng() % 30 : 0)});
          owner[id++] = s;
          w.col = (w.col + 1) % cols;
          if (rng() % 25 == 0) w.row = (w.row + 1 + rng() % 2) % 4;  // a conflict in its bank
          if (rng() % 30 == 0) w.write = !w.write;
        }
        now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 3));
        for (const HbmCompletion& done : p.advanceTo(now)) owner.erase(done.id);
        if (rng() % 400 == 0) {  // drain and idle
          p.drain(owner, now);
          now += rng() % 3000;
          p.advanceTo(now);
          p.compareStats();
        }
      }
      p.drain(owner, now);
      p.compareStats();
    }
}

TEST_CASE("the bank-readiness wake agrees when banks wait for the read/write turnaround",
          "[hbm][sanitize]") {
  // After a column command the fast model may sleep until the first bank
  // with row hits is ready for one of the kind it holds
  // (PseudoChannel::banksColumnBound: a bank of reads waits for the
  // write-to-read turnaround even when writes could go). Here banks of one
  // pseudo-channel index hold only reads, only writes, or both to one open
  // row, so after each command one kind waits for tWTR or the read-to-write
  // turnaround while the other may go; tWTR and tCL are stretched in some
  // variants so that the turnaround, not tCCD, binds.
  for (const char* name : {"v5e", "v6e"})
    for (int variant = 0; variant < 4; ++variant) {
      target::ChipConfig chip = target::loadChip(name);
      target::HbmConfig c = chip.hbm;
      c.address_mapping = "ro-ba-co-bg-pc-ch";
      c.address_hash = "none";  // addresses below name banks by the plain digits
      c.queue_depth = std::array<int64_t, 4>{64, 16, 4, 32}[size_t(variant)];
      c.starvation_limit = std::array<int64_t, 4>{16, 4, 1, 8}[size_t(variant)];
      c.refresh = variant == 3 ? "all_bank" : "per_bank";
      c.tREFI = 2000;
      c.tRFC = std::min<int64_t>(c.tRFC, 300);
      c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
      if (variant == 1) c.tWTR = 40;          // reads wait long after writes
      if (variant == 2) c.tCL = c.tCWL + 30;  // writes wait long after reads (tRTW)
      INFO(name << " variant " << variant);
      Pair p(c, chip.core.clock_hz);
      const uint64_t cols = uint64_t(c.columnsPerRow());
      auto address = [&](uint64_t row, uint64_t bank, uint64_t col, uint64_t bankGroup) {
        uint64_t index =
            (((row * uint64_t(c.banks_per_group) + bank) * cols + col) * uint64_t(c.bank_groups) +
             bankGroup) *
            uint64_t(c.pseudo_channels * c.channels);
        return index * uint64_t(c.burst_bytes);
      };
      std::mt19937_64 rng(uint64_t(variant) * 131 + uint64_t(name[1]) + 7);
      // kind: 0 reads, 1 writes, 2 both (to the same row of the same bank).
      struct Walk {
        uint64_t row, bank, col, bankGroup;
        int kind;
      };
      std::vector<Walk> walks;
      for (uint64_t s = 0; s < 6; ++s)
        walks.push_back(Walk{rng() % 2, s % 3, rng() % cols, (s / 3) % 2, int(s % 3)});
      std::map<uint64_t, size_t> owner;
      uint64_t now = 0, id = 0;
      const size_t window = 12 + size_t(variant) * 16;
      for (int cycle = 0; cycle < 3000; ++cycle) {
        for (int k = 0, n = int(rng() % 5); k < n && owner.size() < window; ++k) {
          const size_t s = size_t(rng() % walks.size());
          Walk& w = walks[s];
          const bool write = w.kind == 2 ? rng() % 2 == 0 : w.kind == 1;
          const uint32_t bytes = uint32_t(c.burst_bytes) * uint32_t(1 + rng() % 4);
          p.submit(HbmRequest{id, address(w.row, w.bank, w.col, w.bankGroup), bytes, write,
                              now + (rng() % 5 == 0 ? rng() % 20 : 0)});
          owner[id++] = s;
          w.col = (w.col + 1) % cols;
          if (rng() % 40 == 0) w.row = (w.row + 1) % 3;  // a conflict in its bank
          if (rng() % 60 == 0) w.kind = int(rng() % 3);
        }
        now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 3));
        for (const HbmCompletion& done : p.advanceTo(now)) owner.erase(done.id);
        if (rng() % 500 == 0) {  // drain and idle
          p.drain(owner, now);
          now += rng() % 3000;
          p.advanceTo(now);
          p.compareStats();
        }
      }
      p.drain(owner, now);
      p.compareStats();
    }
}

TEST_CASE("column picks agree when banks mix reads and writes to one row behind other rows",
          "[hbm][sanitize]") {
  // The fast model's column pick (the oldest-hit shortcut, the scan that
  // skips a bank holding only hits of a kind that is not ready) against the
  // detailed model's walk of every bank's queue. Here four banks in two bank
  // groups of one pseudo-channel index each hold reads and writes mixed at
  // random to their open row, behind older bursts for other rows: an ACT
  // finds several queued hits of both kinds, the oldest hit of one kind
  // often waits for the turnaround or tCCD_L while a younger hit of the
  // other kind, or of another bank, goes, and heads for other rows starve
  // (limits 1-16) while hits queue behind them. In
  // variants 5 and 6 rows change every few bursts, so that a step often
  // issues a row and a column command and the next row command (an ACT
  // after tRRD, another bank's PRE) follows within a few cycles: the wake
  // set after such a step (PseudoChannel::rowScanBound) must not pass it.
  for (const char* name : {"v5e", "v6e"})
    for (int variant = 0; variant < 7; ++variant) {
      target::ChipConfig chip = target::loadChip(name);
      target::HbmConfig c = chip.hbm;
      c.address_mapping = "ro-ba-co-bg-pc-ch";
      c.address_hash = "none";  // addresses below name banks by the plain digits
      c.queue_depth = std::array<int64_t, 7>{64, 12, 4, 32, 24, 16, 48}[size_t(variant)];
      c.starvation_limit = std::array<int64_t, 7>{16, 3, 1, 6, 2, 1, 4}[size_t(variant)];
      c.refresh = variant == 3 ? "all_bank" : variant == 5 ? "none" : "per_bank";
      c.tREFI = 2500;
      c.tRFC = std::min<int64_t>(c.tRFC, 300);
      c.tRFCsb = std::min<int64_t>(c.tRFCsb, 120);
      if (variant == 1) c.tWTR = 30;                // reads wait long after writes
      if (variant == 2) c.tCL = c.tCWL + 20;        // writes wait long after reads (tRTW)
      if (variant == 4) c.tCCD_L = 9, c.tRCD = 40;  // the bank and its group bind
      if (variant == 6) c.tRRD_S = c.tRRD_L = 2, c.tRP = 6, c.tRAS = 30;  // rows turn fast
      const uint64_t rowChange = variant >= 5 ? 3 : 12;
      INFO(name << " variant " << variant);
      Pair p(c, chip.core.clock_hz);
      const uint64_t cols = uint64_t(c.columnsPerRow());
      auto address = [&](uint64_t row, uint64_t bank, uint64_t col, uint64_t bankGroup) {
        uint64_t index =
            (((row * uint64_t(c.banks_per_group) + bank) * cols + col) * uint64_t(c.bank_groups) +
             bankGroup) *
            uint64_t(c.pseudo_channels * c.channels);
        return index * uint64_t(c.burst_bytes);
      };
      std::mt19937_64 rng(uint64_t(variant) * 173 + uint64_t(name[1]) + 3);
      struct Walk {
        uint64_t row, bank, col, bankGroup;
      };
      std::vector<Walk> walks;
      for (uint64_t s = 0; s < 4; ++s) walks.push_back(Walk{rng() % 3, s % 2, rng() % cols, s / 2});
      if (variant >= 5)  // two more banks in each group
        for (uint64_t s = 0; s < 4; ++s)
          walks.push_back(Walk{rng() % 3, 2 + s % 2, rng() % cols, s / 2});
      std::map<uint64_t, size_t> owner;
      uint64_t now = 0, id = 0;
      const size_t window = 16 + size_t(variant) * 12;
      for (int cycle = 0; cycle < 4000; ++cycle) {
        for (int k = 0, n = int(rng() % 6); k < n && owner.size() < window; ++k) {
          const size_t s = size_t(rng() % walks.size());
          Walk& w = walks[s];
          const uint32_t bytes = uint32_t(c.burst_bytes) * uint32_t(1 + rng() % 3);
          p.submit(HbmRequest{id, address(w.row, w.bank, w.col, w.bankGroup), bytes, rng() % 2 == 0,
                              now + (rng() % 6 == 0 ? rng() % 25 : 0)});
          owner[id++] = s;
          w.col = (w.col + 1) % cols;
          if (rng() % rowChange == 0) w.row = (w.row + 1 + rng() % 2) % 3;  // a conflict
        }
        now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1 + rng() % 3));
        for (const HbmCompletion& done : p.advanceTo(now)) owner.erase(done.id);
        if (rng() % 500 == 0) {  // drain and idle
          p.drain(owner, now);
          now += rng() % 3000;
          p.advanceTo(now);
          p.compareStats();
        }
      }
      p.drain(owner, now);
      p.compareStats();
    }
}

TEST_CASE("groups in the same state merge while busy (twins), and agree", "[hbm][sanitize]") {
  // Half a line, a request elsewhere (so the halves are no run), the other
  // half: the line's pseudo-channels are two groups in the same state whose
  // queues differ only in the request of the first burst. Whole lines follow
  // every cycle, so neither group idles (an idle merge is not possible);
  // once the halves have issued, the two queues are the same burst for burst
  // and request for request, and the next whole line finds them twins.
  target::ChipConfig chip = target::loadChip("v5e");
  for (int depth : {8, 64}) {
    target::HbmConfig c = chip.hbm;
    c.queue_depth = depth;
    INFO("queue " << depth);
    Pair p(c, chip.core.clock_hz);
    const uint64_t line = uint64_t(c.burst_bytes * c.channels);
    uint64_t now = 0, id = 0;
    const uint64_t base = line * 4096;
    size_t outstanding = 0;
    auto submit = [&](uint64_t address, uint64_t bytes) {
      p.submit(HbmRequest{id++, address, uint32_t(bytes), false, now});
      ++outstanding;
    };
    auto step = [&] {
      now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1));
      outstanding -= p.advanceTo(now).size();
    };
    submit(base, line / 2);
    submit(base + line, c.burst_bytes);  // the next line: the other pseudo-channel index
    submit(base + line / 2, line / 2);
    step();
    const size_t split = p.fast.simulatedPseudoChannels();
    size_t fewest = split;
    for (int i = 1; i <= 60; ++i) {
      submit(base + 2 * line * uint64_t(i), line);
      step();
      // Busy throughout: every line is still queued or in flight.
      if (outstanding > 0) fewest = std::min(fewest, p.fast.simulatedPseudoChannels());
    }
    while (outstanding > 0) step();
    p.compareStats();
    CHECK(fewest < split);
  }
}

TEST_CASE("runs over line pairs agree, and consecutive lines become one group", "[hbm][sanitize]") {
  // A stream of whole lines, one request each, submitted in pairs per cycle:
  // lines L and L + 1 (pseudo-channel indices 0 and 1, same bank and row)
  // form one run, so the two indices' groups take the same run record and
  // merge once their older bursts have drained (twins): one group for every
  // pseudo-channel. Then random requests of 1-3 quarter lines, some over a
  // pair's boundary, some over a boundary that is no pair (L odd), reads and
  // writes, interleaved with other rows; each compared with the detailed model.
  target::ChipConfig chip = target::loadChip("v5e");
  for (int depth : {8, 64}) {
    target::HbmConfig c = chip.hbm;
    c.queue_depth = depth;
    INFO("queue " << depth);
    Pair p(c, chip.core.clock_hz);
    const uint64_t line = uint64_t(c.burst_bytes * c.channels);
    uint64_t now = 0, id = 0;
    size_t outstanding = 0;
    auto submit = [&](uint64_t address, uint64_t bytes, bool write) {
      p.submit(HbmRequest{id++, address, uint32_t(bytes), write, now});
      ++outstanding;
    };
    auto step = [&] {
      now = std::max(now + 1, std::min(p.nextEventCycle(), now + 1));
      outstanding -= p.advanceTo(now).size();
    };
    const uint64_t base = line * 8192;
    size_t fewest = ~size_t(0);
    for (int i = 0; i < 80; ++i) {
      submit(base + 2 * line * uint64_t(i), line, false);
      submit(base + 2 * line * uint64_t(i) + line, line, false);
      step();
      if (outstanding > 0) fewest = std::min(fewest, p.fast.simulatedPseudoChannels());
    }
    CHECK(fewest == 1);
    std::mt19937_64 rng{uint64_t(depth)};
    const uint64_t quarter = line / 4;
    for (int i = 0; i < 400; ++i) {
      const bool write = rng() % 4 == 0;
      uint64_t at = base + line * 512 + quarter * (rng() % 2048);
      for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) {
        const uint64_t bytes = quarter * (1 + rng() % 3);
        submit(at, bytes, write);
        at += bytes;
      }
      if (rng() % 5 == 0) submit(line * (1 + rng() % 4096) * 64, quarter, !write);  // another row
      step();
      if (rng() % 3 == 0) step();
    }
    while (outstanding > 0) step();
    p.compareStats();
  }
}
