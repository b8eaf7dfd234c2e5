// Bandwidth of the HBM model on every production preset: a streaming read
// reaches >= 90% of the preset's peak (computed from its geometry and clock),
// a same-bank row-conflict pattern is far slower, refresh costs bandwidth.
#include <catch2/catch.hpp>

#include "isa/target/ChipLoader.h"
#include "sim/hbm/HbmModel.h"
#include "testbench/unit/hbm/HbmDriver.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::hbm;

namespace {

// Bytes per core cycle achieved by `count` requests of `bytes` at `addresses`.
double bandwidth(const target::ChipConfig& chip, const target::HbmConfig& hbm,
                 const std::vector<uint64_t>& a, uint32_t bytes, bool write,
                 HbmChannelStats* stats = nullptr) {
  HbmModel m(hbm, chip.core.clock_hz);
  auto r = test::drive(m, a, bytes, write, 512);
  if (stats) *stats = m.totalStats();
  return double(a.size()) * bytes / double(r.lastCycle + 1);
}

double peakPerCoreCycle(const target::ChipConfig& chip) {
  return chip.hbm.peakBytesPerSecond() / chip.core.clock_hz;
}

}  // namespace

TEST_CASE("streaming reads and writes reach 90% of the preset's peak bandwidth",
          "[hbm][sanitize]") {
  for (const char* name : {"v4", "v5e", "v5p", "v6e"}) {
    target::ChipConfig chip = target::loadChip(name);
    const uint32_t request = 512;
    auto addresses = test::sequential(0, (4u << 20) / request, request);
    double peak = peakPerCoreCycle(chip);
    double read = bandwidth(chip, chip.hbm, addresses, request, false);
    double write = bandwidth(chip, chip.hbm, addresses, request, true);
    INFO(name << ": peak " << peak << " B/cycle, read " << read << ", write " << write);
    CHECK(read >= 0.9 * peak);
    CHECK(read <= peak);
    CHECK(write >= 0.9 * peak);
    CHECK(write <= peak);
  }
}

TEST_CASE("a same-bank row-conflict pattern is much slower than streaming", "[hbm][sanitize]") {
  target::ChipConfig chip = target::loadChip("v5e");
  target::HbmConfig c = chip.hbm;
  c.address_mapping = "ro-ba-co-bg-pc-ch";  // row is the most significant digit
  c.address_hash = "none";                  // and names one bank: no bank hashing
  uint64_t rowStride = uint64_t(c.geometryBytes() / double(c.rows));
  auto conflicts = test::sequential(0, 2000, rowStride);  // channel 0, bank 0, rows 0, 1, 2 ...
  HbmChannelStats s;
  double conflict = bandwidth(chip, c, conflicts, uint32_t(c.burst_bytes), false, &s);
  double stream =
      bandwidth(chip, c, test::sequential(0, 2000, c.burst_bytes), uint32_t(c.burst_bytes), false);
  INFO("conflict " << conflict << " B/cycle, stream " << stream);
  CHECK(conflict < 0.05 * stream);
  // Every burst after the first needs a new row (a refresh may have closed the old one first).
  CHECK(s.rowHits == 0);
  CHECK(s.rowConflicts + s.rowMisses == 2000);
  // One bank, a new row each time: at least tRAS + tRP per burst.
  const double perBurstHbmCycles = double(c.tRAS + c.tRP);
  double bound = double(c.burst_bytes) / (perBurstHbmCycles * chip.core.clock_hz / c.clock_hz);
  CHECK(conflict <= bound * 1.001);
}

TEST_CASE("refresh shows up in a long streaming run", "[hbm][sanitize]") {
  target::ChipConfig chip = target::loadChip("v5e");
  chip.hbm.address_hash = "none";  // refresh alone decides (hashing moves it by 0.02%)
  auto addresses = test::sequential(0, (16u << 20) / 512, 512);
  target::HbmConfig none = chip.hbm, perBank = chip.hbm, allBank = chip.hbm;
  none.refresh = "none";
  perBank.refresh = "per_bank";
  allBank.refresh = "all_bank";
  HbmChannelStats sNone, sPer, sAll;
  double bwNone = bandwidth(chip, none, addresses, 512, false, &sNone);
  double bwPer = bandwidth(chip, perBank, addresses, 512, false, &sPer);
  double bwAll = bandwidth(chip, allBank, addresses, 512, false, &sAll);
  INFO("no refresh " << bwNone << ", per-bank " << bwPer << ", all-bank " << bwAll);
  CHECK(sNone.refreshes == 0);
  CHECK(sPer.refreshes > 0);
  CHECK(sAll.refreshes > 0);
  CHECK(bwPer < bwNone);
  CHECK(bwAll < bwPer);
  // All-bank refresh blocks a pseudo-channel for tRFC of every tREFI: the loss
  // is at least most of that fraction.
  double allBankLoss = double(chip.hbm.tRFC) / double(chip.hbm.tREFI);
  CHECK(bwAll < bwNone * (1.0 - 0.5 * allBankLoss));
}
