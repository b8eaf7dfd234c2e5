// Timing rules of the HBM model, with every expected number derived from the
// config: lone-access latency, tFAW, FR-FCFS reordering, the starvation limit.
#include <catch2/catch.hpp>

#include "sim/hbm/HbmModel.h"
#include "testbench/unit/hbm/HbmDriver.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::hbm;

namespace {

constexpr double kCoreHz = 1.5e9;

// A config whose mapping is fixed so that tests can build addresses: bursts
// interleave over channels, pseudo-channels, bank groups, then columns, banks, rows.
target::HbmConfig testConfig() {
  target::HbmConfig c;
  c.address_mapping = "ro-ba-co-bg-pc-ch";
  return c;
}

// Byte address of (bank group, bank, row, column) in channel 0, pseudo-channel 0.
uint64_t addressOf(const target::HbmConfig& c, uint64_t bg, uint64_t ba, uint64_t row,
                   uint64_t col) {
  uint64_t index = ((row * c.banks_per_group + ba) * c.columnsPerRow() + col) * c.bank_groups + bg;
  index *= uint64_t(c.pseudo_channels * c.channels);
  return index * uint64_t(c.burst_bytes);
}

std::vector<HbmCompletion> runAll(HbmModel& m) {
  std::vector<HbmCompletion> done;
  while (!m.idle()) m.advanceTo(m.nextEventCycle() + 1, done);
  return done;
}

}  // namespace

TEST_CASE("address map decodes the digits in mapping order", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  AddressMap map(c);
  BurstLocation l = map.locate(addressOf(c, 3, 2, 77, 5));
  CHECK(l.channel == 0);
  CHECK(l.pseudoChannel == 0);
  CHECK(l.bankGroup == 3);
  CHECK(l.bank == 2);
  CHECK(l.row == 77);
  CHECK(l.column == 5);
  // Mixed radix: 3 channels is legal and the next burst goes to the next channel.
  c.channels = 3;
  c.address_mapping = "ro-ba-bg-co-pc-ch";
  AddressMap odd(c);
  CHECK(odd.locate(0).channel == 0);
  CHECK(odd.locate(2 * c.burst_bytes).channel == 2);
  CHECK(odd.locate(3 * c.burst_bytes).channel == 0);
  CHECK(odd.locate(3 * c.burst_bytes).pseudoChannel == 1);
  // compose() inverts locate() for every mapping.
  for (const char* mapping : {"ro-ba-co-bg-pc-ch", "ch-pc-ro-bg-ba-co", "co-ro-ch-ba-pc-bg"}) {
    c.address_mapping = mapping;
    AddressMap m(c);
    for (uint64_t burst = 0; burst < 5000; burst += 7) {
      uint64_t bb = uint64_t(c.burst_bytes);
      uint64_t address = (burst * 104729) % (uint64_t(c.geometryBytes()) / bb) * bb;
      CHECK(m.compose(m.locate(address)) == address);
    }
  }
  c.address_mapping = "ro-ba-bg-co-pc";
  CHECK_THROWS_WITH(AddressMap(c), Catch::Contains("hbm.address_mapping"));
}

TEST_CASE("clock ratio conversions are exact", "[hbm][sanitize]") {
  ClockRatio r(1500000000, 1600000000);  // 15:16
  CHECK(r.hbmAtOrAfterCore(0) == 0);
  CHECK(r.hbmAtOrAfterCore(15) == 16);
  CHECK(r.hbmAtOrAfterCore(1) == 2);  // 1.0667 -> 2
  CHECK(r.coreAtOrAfterHbm(16) == 15);
  CHECK(r.coreAtOrAfterHbm(17) == 16);  // 15.94 -> 16
  // Far in the future there is no drift.
  uint64_t big = 15ull * 1000000000000ull;
  CHECK(r.hbmAtOrAfterCore(big) == 16ull * 1000000000000ull);
}

TEST_CASE("a lone read to a closed bank takes tRCD + tCL + burst", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  for (bool write : {false, true}) {
    HbmModel m(c, kCoreHz);
    const uint64_t arrival = 10;
    std::vector<HbmCompletion> none;
    m.advanceTo(arrival, none);
    m.submit(HbmRequest{7, addressOf(c, 1, 1, 3, 0), uint32_t(c.burst_bytes), write, arrival});
    auto done = runAll(m);
    REQUIRE(done.size() == 1);
    const HbmTiming& t = m.timing();
    uint64_t h0 = m.clocks().hbmAtOrAfterCore(arrival);
    uint64_t end = h0 + t.tRCD + (write ? t.tCWL : t.tCL) + t.burstCycles;
    CHECK(done[0].id == 7);
    CHECK(done[0].cycle == m.clocks().coreAtOrAfterHbm(end));
    auto s = m.totalStats();
    CHECK(s.rowMisses == 1);
    CHECK(s.activates == 1);
  }
}

TEST_CASE("a row hit takes tCL + burst; a row conflict adds tRP + tRCD", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  c.refresh = "none";
  HbmModel m(c, kCoreHz);
  const HbmTiming& t = m.timing();
  uint32_t burst = uint32_t(c.burst_bytes);
  m.submit(HbmRequest{0, addressOf(c, 0, 0, 5, 0), burst, false, 0});
  auto first = runAll(m);
  REQUIRE(first.size() == 1);
  // Long after tRAS: the hit sees only the column latency.
  uint64_t later = first[0].cycle + 1000;
  std::vector<HbmCompletion> none;
  m.advanceTo(later, none);
  m.submit(HbmRequest{1, addressOf(c, 0, 0, 5, 1), burst, false, later});
  auto hit = runAll(m);
  uint64_t h = m.clocks().hbmAtOrAfterCore(later);
  CHECK(hit[0].cycle == m.clocks().coreAtOrAfterHbm(h + t.tCL + t.burstCycles));
  later = hit[0].cycle + 1000;
  m.advanceTo(later, none);
  m.submit(HbmRequest{2, addressOf(c, 0, 0, 6, 0), burst, false, later});
  auto conflict = runAll(m);
  h = m.clocks().hbmAtOrAfterCore(later);
  CHECK(conflict[0].cycle ==
        m.clocks().coreAtOrAfterHbm(h + t.tRP + t.tRCD + t.tCL + t.burstCycles));
  auto s = m.totalStats();
  CHECK(s.rowHits == 1);
  CHECK(s.rowMisses == 1);
  CHECK(s.rowConflicts == 1);
}

TEST_CASE("at most four activates per tFAW window", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  c.refresh = "none";
  // Make tFAW the binding constraint, well above 4 x tRRD.
  c.tFAW = 4 * c.tRRD_L + 40;
  HbmModel m(c, kCoreHz);
  const HbmTiming& t = m.timing();
  // Five reads to five different banks of one pseudo-channel, all at cycle 0.
  for (uint64_t i = 0; i < 5; ++i)
    m.submit(HbmRequest{i, addressOf(c, i % 4, i / 4, 0, 0), uint32_t(c.burst_bytes), false, 0});
  auto done = runAll(m);
  REQUIRE(done.size() == 5);
  // The fifth activate waits for the first one + tFAW.
  uint64_t fifth = 0;
  for (const auto& d : done)
    if (d.id == 4) fifth = d.cycle;
  CHECK(fifth == m.clocks().coreAtOrAfterHbm(t.tFAW + t.tRCD + t.tCL + t.burstCycles));
  // And each earlier one is at least tRRD_S after the previous (different bank groups).
  uint64_t second = 0;
  for (const auto& d : done)
    if (d.id == 1) second = d.cycle;
  CHECK(second == m.clocks().coreAtOrAfterHbm(t.tRRD_S + t.tRCD + t.tCL + t.burstCycles));
}

TEST_CASE("FR-FCFS serves younger row hits before an older row conflict", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  c.refresh = "none";
  HbmModel m(c, kCoreHz);
  uint32_t burst = uint32_t(c.burst_bytes);
  m.submit(HbmRequest{100, addressOf(c, 0, 0, 1, 0), burst, false, 0});  // opens row 1
  runAll(m);
  uint64_t now = m.now();
  m.submit(HbmRequest{0, addressOf(c, 0, 0, 2, 0), burst, false, now});  // older, row 2
  m.submit(HbmRequest{1, addressOf(c, 0, 0, 1, 1), burst, false, now});  // younger hits
  m.submit(HbmRequest{2, addressOf(c, 0, 0, 1, 2), burst, false, now});
  auto done = runAll(m);
  REQUIRE(done.size() == 3);
  CHECK(done[0].id == 1);
  CHECK(done[1].id == 2);
  CHECK(done[2].id == 0);
}

TEST_CASE("the starvation limit bounds how many hits pass an older request", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  c.refresh = "none";
  c.starvation_limit = 4;
  HbmModel m(c, kCoreHz);
  uint32_t burst = uint32_t(c.burst_bytes);
  m.submit(HbmRequest{1000, addressOf(c, 0, 0, 1, 0), burst, false, 0});
  runAll(m);
  uint64_t now = m.now();
  m.submit(HbmRequest{0, addressOf(c, 0, 0, 2, 0), burst, false, now});  // the old miss
  for (uint64_t i = 1; i <= 20; ++i)
    m.submit(HbmRequest{i, addressOf(c, 0, 0, 1, i), burst, false, now});
  auto done = runAll(m);
  REQUIRE(done.size() == 21);
  size_t position = 0;
  while (done[position].id != 0) ++position;
  // Exactly `starvation_limit` hits go first; then the row is closed for it.
  CHECK(position == size_t(c.starvation_limit));
}

TEST_CASE("the model is deterministic", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  auto run = [&] {
    HbmModel m(c, kCoreHz);
    std::vector<uint64_t> a;
    for (uint64_t i = 0; i < 3000; ++i) a.push_back((i * 7919 * 64) % (uint64_t(1) << 30));
    return test::drive(m, a, 64, false, 64).completions;
  };
  auto a = run(), b = run();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].id == b[i].id);
    CHECK(a[i].cycle == b[i].cycle);
  }
}

TEST_CASE("idle stretches are skipped and refresh keeps its schedule", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  HbmModel m(c, kCoreHz);
  std::vector<HbmCompletion> none;
  const uint64_t cycles = 3000000000ull;  // two simulated seconds
  m.advanceTo(cycles, none);
  auto s = m.totalStats();
  const HbmTiming& t = m.timing();
  uint64_t hbmCycles = m.clocks().hbmAtOrAfterCore(cycles);
  // Every pseudo-channel issued one refresh per interval (the last may be in progress).
  uint64_t perPc = hbmCycles / uint64_t(t.refreshInterval);
  uint64_t pcs = uint64_t(c.channels * c.pseudo_channels);
  CHECK(s.refreshes >= (perPc - 1) * pcs);
  CHECK(s.refreshes <= perPc * pcs);
}

TEST_CASE("a read after a write waits for tWTR after the write data", "[hbm][sanitize]") {
  target::HbmConfig c = testConfig();
  c.refresh = "none";
  HbmModel m(c, kCoreHz);
  const HbmTiming& t = m.timing();
  uint32_t burst = uint32_t(c.burst_bytes);
  m.submit(HbmRequest{0, addressOf(c, 0, 0, 9, 0), burst, false, 0});  // open the row
  runAll(m);
  uint64_t now = m.now() + 1000;
  std::vector<HbmCompletion> none;
  m.advanceTo(now, none);
  // Write then read of the same open row, both arriving now: the read's column
  // command waits for the end of the write data plus tWTR (longer than tCCD_L).
  m.submit(HbmRequest{1, addressOf(c, 0, 0, 9, 1), burst, true, now});
  m.submit(HbmRequest{2, addressOf(c, 0, 0, 9, 2), burst, false, now});
  auto done = runAll(m);
  REQUIRE(done.size() == 2);
  REQUIRE(t.tCWL + t.burstCycles + t.tWTR > t.tCCD_L);
  uint64_t h = m.clocks().hbmAtOrAfterCore(now);
  uint64_t writeEnd = h + t.tCWL + t.burstCycles;
  uint64_t readEnd = writeEnd + t.tWTR + t.tCL + t.burstCycles;
  CHECK(done[0].id == 1);
  CHECK(done[0].cycle == m.clocks().coreAtOrAfterHbm(writeEnd));
  CHECK(done[1].id == 2);
  CHECK(done[1].cycle == m.clocks().coreAtOrAfterHbm(readEnd));
}
