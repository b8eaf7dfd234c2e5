// hbm.address_hash "xor_row_bank" (isa/target/HbmAddressMap.h): a bijection that
// keeps a row's bursts together and spreads streams a row stride apart over
// banks; and the bandwidth it buys for several concurrent streams.
#include <catch2/catch.hpp>

#include <set>

#include "isa/target/HbmAddressMap.h"
#include "sim/hbm/HbmModel.h"

using namespace tpusim;
using namespace tpusim::sim::hbm;

namespace {

target::HbmConfig hashed() {
  target::HbmConfig c;
  c.address_mapping = "ro-ba-co-bg-pc-ch";
  c.address_hash = "xor_row_bank";
  return c;
}

// Bytes per second four interleaved sequential read streams `stride` apart reach.
double fourStreams(const target::HbmConfig& c, uint64_t stride) {
  constexpr double kCoreHz = 1.5e9;
  HbmModel m(c, kCoreHz);
  const uint64_t request = 512, perStream = 1 << 20, window = 256;
  std::vector<HbmCompletion> done;
  uint64_t issued = 0, completed = 0, now = 0, total = 4 * perStream / request;
  while (completed < total) {
    for (; issued < total && issued - completed < window; ++issued) {
      uint64_t stream = issued % 4, offset = issued / 4 * request;
      m.submit(HbmRequest{issued, stream * stride + offset, uint32_t(request), false, now});
    }
    now = std::max(now + 1, m.nextEventCycle() + 1);  // simulates every cycle < now
    m.advanceTo(now, done);
    completed = done.size();
  }
  return double(total * request) / (double(now) / kCoreHz);
}

}  // namespace

TEST_CASE("xor_row_bank is a bijection that follows next()", "[hbm]") {
  target::HbmConfig c = hashed();
  AddressMap map(c);
  const uint64_t bb = uint64_t(c.burst_bytes);
  for (uint64_t i = 0; i < 20000; i += 3) {
    uint64_t address = (i * 1048583) % (uint64_t(c.geometryBytes()) / bb) * bb;
    BurstLocation l = map.locate(address);
    CHECK(map.compose(l) == address);
    map.next(l);
    BurstLocation n = map.locate(address + bb);
    CHECK((l.channel == n.channel && l.pseudoChannel == n.pseudoChannel &&
           l.bankGroup == n.bankGroup && l.bank == n.bank && l.row == n.row &&
           l.column == n.column));
  }
}

TEST_CASE("xor_row_bank keeps a row together and spreads streams over banks", "[hbm]") {
  target::HbmConfig c = hashed();
  AddressMap hashedMap(c);
  c.address_hash = "none";
  AddressMap plain(c);
  // Every burst of one row of one bank stays in one (bank group, bank).
  const uint64_t rowStride = uint64_t(c.row_bytes) * uint64_t(c.channels * c.pseudo_channels *
                                                              c.bank_groups * c.banks_per_group);
  std::set<std::pair<uint32_t, uint32_t>> banks, plainBanks;
  for (uint64_t s = 0; s < 16; ++s) {
    BurstLocation h = hashedMap.locate(s * rowStride), p = plain.locate(s * rowStride);
    banks.insert({h.bankGroup, h.bank});
    plainBanks.insert({p.bankGroup, p.bank});
    CHECK(h.row == p.row);
  }
  CHECK(plainBanks.size() == 1);  // 16 streams a row stride apart: one bank without the hash
  CHECK(banks.size() == 16);      // ... and all 16 banks of the pseudo-channel with it
}

TEST_CASE("xor_row_bank lifts four concurrent streams 1 MiB apart", "[hbm]") {
  target::HbmConfig c = hashed();
  const double peak = c.clock_hz * double(c.channels * c.pseudo_channels * c.bus_bytes_per_clock);
  const double withHash = fourStreams(c, 1 << 20);
  c.address_hash = "none";
  const double without = fourStreams(c, 1 << 20);
  INFO("without " << without / peak << ", with " << withHash / peak);
  CHECK(without < 0.7 * peak);
  CHECK(withHash > 0.8 * peak);
}

TEST_CASE("address_hash errors name the field", "[hbm]") {
  target::HbmConfig c = hashed();
  c.address_hash = "modulo";
  CHECK_THROWS_WITH(AddressMap(c), Catch::Contains("hbm.address_hash"));
  c.address_hash = "xor_row_bank";
  c.banks_per_group = 3;
  CHECK_THROWS_WITH(AddressMap(c), Catch::Contains("power-of-two"));
}
