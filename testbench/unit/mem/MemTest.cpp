// Functional storage: sparse pages, zero reads, bounds faults, SMEM words, copies.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "sim/mem/ChipMemory.h"

using namespace tpusim;
using namespace tpusim::sim::mem;

TEST_CASE("sparse memory reads zeros and allocates only written pages", "[mem][sanitize]") {
  SparseMemory m(isa::MemorySpace::Hbm, uint64_t(95) << 30);  // a v5p-sized HBM
  CHECK(m.allocatedBytes() == 0);
  std::vector<uint8_t> buf(100, 0xAA);
  REQUIRE_FALSE(m.read(uint64_t(90) << 30, buf.data(), buf.size()));
  for (uint8_t b : buf) CHECK(b == 0);
  // A write that straddles a page boundary touches two pages.
  std::vector<uint8_t> data(64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i + 1);
  uint64_t addr = 3 * SparseMemory::kPageBytes - 32;
  REQUIRE_FALSE(m.write(addr, data.data(), data.size()));
  CHECK(m.allocatedBytes() == 2 * SparseMemory::kPageBytes);
  std::vector<uint8_t> back(64);
  REQUIRE_FALSE(m.read(addr, back.data(), back.size()));
  CHECK(back == data);
  // Zero fill of an untouched page does not allocate it.
  REQUIRE_FALSE(m.fill(uint64_t(10) << 30, 0, 4096));
  CHECK(m.allocatedBytes() == 2 * SparseMemory::kPageBytes);
}

TEST_CASE("out-of-bounds accesses return a fault and change nothing", "[mem][sanitize]") {
  SparseMemory m(isa::MemorySpace::Vmem, 4096, 1);
  uint8_t b[16] = {1};
  auto f = m.write(4090, b, 16);
  REQUIRE(f);
  CHECK(f->space == isa::MemorySpace::Vmem);
  CHECK(f->core == 1);
  CHECK(f->address == 4090);
  CHECK(f->size == 16);
  CHECK(f->capacity == 4096);
  CHECK(f->write);
  CHECK(f->describe() ==
        "vmem (core 1) write of 16 bytes at 0xffa is out of bounds (capacity 0x1000 bytes)");
  CHECK(m.allocatedBytes() == 0);
  // Addresses near 2^64 must not wrap around into range.
  CHECK(m.read(~uint64_t(0) - 3, b, 8));
  CHECK_FALSE(m.read(4080, b, 16));
  CHECK(m.read(4096, b, 1));
  CHECK_FALSE(m.read(4096, b, 0));
}

TEST_CASE("SMEM words are little-endian bytes and bounds-checked", "[mem][sanitize]") {
  Smem s(256, 0);
  REQUIRE_FALSE(s.writeWord(3, 0x11223344));
  uint8_t b[4];
  REQUIRE_FALSE(s.bytes().read(12, b, 4));
  CHECK(b[0] == 0x44);
  CHECK(b[3] == 0x11);
  uint32_t v = 0;
  REQUIRE_FALSE(s.readWord(3, &v));
  CHECK(v == 0x11223344);
  auto f = s.readWord(256, &v);
  REQUIRE(f);
  CHECK(f->space == isa::MemorySpace::Smem);
  CHECK(f->address == 1024);
  CHECK(s.writeWord(~uint64_t(0), 1));
}

TEST_CASE("chip memory looks spaces up by core; copies handle overlap", "[mem][sanitize]") {
  ChipMemory chip({uint64_t(1) << 30, uint64_t(128) << 20, 1024, 2});
  CHECK(chip.cores() == 2);
  CHECK(&chip.space(isa::MemorySpace::Vmem, 1) == &chip.vmem(1));
  CHECK(&chip.space(isa::MemorySpace::Smem, 0) == &chip.smem(0).bytes());
  CHECK(&chip.space(isa::MemorySpace::Hbm, 1) == &chip.hbm());
  std::vector<uint8_t> data(200000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7);
  REQUIRE_FALSE(chip.hbm().write(1000, data.data(), data.size()));
  REQUIRE_FALSE(copyBytes(chip.hbm(), 1000, chip.vmem(1), 0, data.size()));
  std::vector<uint8_t> back(data.size());
  REQUIRE_FALSE(chip.vmem(1).read(0, back.data(), back.size()));
  CHECK(back == data);
  // Overlapping copy forwards within one memory (like memmove).
  REQUIRE_FALSE(copyBytes(chip.hbm(), 1000, chip.hbm(), 1100, data.size()));
  REQUIRE_FALSE(chip.hbm().read(1100, back.data(), back.size()));
  CHECK(back == data);
  auto f = copyBytes(chip.hbm(), 0, chip.vmem(0), (uint64_t(128) << 20) - 10, 11);
  REQUIRE(f);
  CHECK(f->space == isa::MemorySpace::Vmem);
  CHECK(f->write);
}
