// Widening DMA copies (isa/DmaDescriptor.h, element size E = 1 or 2): data in
// both directions and to/from SMEM, request cutting on the dense side, and the
// cost of each side (dense bytes on HBM, widened words on the VMEM/SMEM port).
#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>
#include <vector>

#include "isa/target/ChipLoader.h"
#include "sim/dma/DmaEngine.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::dma;
using isa::MemorySpace;

namespace {

mem::ChipMemory memoryFor(const target::ChipConfig& c) {
  return mem::ChipMemory({uint64_t(c.hbm.capacity_bytes), uint64_t(c.vmem.bytes),
                          uint64_t(c.core.smem_bytes) / 4, int(c.core.cores)});
}

// rows x elems elements, dense rows `denseStride` bytes apart, wide rows
// `wideStride` bytes apart.
isa::DmaDescriptor widening(MemorySpace src, uint64_t srcAddr, MemorySpace dst, uint64_t dstAddr,
                            uint8_t elem, uint32_t elems, uint32_t rows, uint32_t denseStride,
                            uint32_t wideStride) {
  isa::DmaDescriptor d;
  d.src = src;
  d.dst = dst;
  d.srcAddr = srcAddr;
  d.dstAddr = dstAddr;
  d.elemBytes = elem;
  d.innerBytes = elems * elem;
  d.numDims = rows > 1 ? 2 : 1;
  d.counts = {rows, 1, 1};
  bool wideSrc = src != MemorySpace::Hbm;
  d.srcStrides = {wideSrc ? wideStride : denseStride, 0, 0};
  d.dstStrides = {wideSrc ? denseStride : wideStride, 0, 0};
  return d;
}

uint64_t runAll(DmaEngine& e) {
  std::vector<DmaCompletion> done;
  while (!e.idle()) e.advanceTo(e.nextEventCycle() + 1, done);
  REQUIRE(!done.empty());
  return done.back().cycle;
}

}  // namespace

TEST_CASE("widening requests are cut on the dense side", "[dma][sanitize]") {
  // 300 bf16 values from HBM 200: the first request ends at the 512-byte
  // boundary of the HBM address (156 values), the wide side moves 4 bytes each.
  auto d = widening(MemorySpace::Hbm, 200, MemorySpace::Vmem, 4096, 2, 300, 1, 0, 0);
  DescriptorWalker w(d, 512);
  DmaRequestRange a = w.next(), b = w.next();
  CHECK(w.done());
  CHECK(a.bytes == 312);
  CHECK(a.srcBytes == 312);
  CHECK(a.dstBytes == 624);
  CHECK(b.src == 512);
  CHECK(b.dst == 4096 + 624);
  CHECK(b.bytes == 288);
  CHECK(b.dstBytes == 576);
  // VMEM -> HBM int8: the source advances 4 bytes per element.
  auto up = widening(MemorySpace::Vmem, 0, MemorySpace::Hbm, 500, 1, 40, 1, 0, 0);
  DescriptorWalker w2(up, 512);
  DmaRequestRange c = w2.next(), e = w2.next();
  CHECK(c.bytes == 12);
  CHECK(c.srcBytes == 48);
  CHECK(e.src == 48);
  CHECK(e.dst == 512);
  CHECK(e.srcBytes == 112);
  CHECK(descriptorExtent(up, true) == 160);
  CHECK(descriptorExtent(up, false) == 40);
  // The walker widens by shifts: an element size validate() rejects is refused.
  auto odd = widening(MemorySpace::Hbm, 0, MemorySpace::Vmem, 4096, 2, 30, 1, 0, 0);
  odd.elemBytes = 3;
  CHECK_THROWS_AS(DescriptorWalker(odd, 512), std::invalid_argument);
}

TEST_CASE("widening copies move the low bytes of each word, both ways", "[dma][sanitize]") {
  target::ChipConfig c = target::loadChip("v5e");
  std::mt19937 rng(11);
  for (uint8_t elem : {1, 2})
    for (MemorySpace wideSpace : {MemorySpace::Vmem, MemorySpace::Smem}) {
      INFO("elem " << int(elem) << " wide side " << isa::memorySpaceName(wideSpace));
      mem::ChipMemory m = memoryFor(c);
      DmaEngine e(c, &m);
      const uint32_t elems = 200, rows = 5;
      const uint32_t denseStride = 1000 * elem, wideStride = 1024;
      std::vector<uint8_t> hbm(size_t(rows) * denseStride), wideOld(size_t(rows) * wideStride);
      for (auto& b : hbm) b = uint8_t(rng());
      for (auto& b : wideOld) b = uint8_t(rng());
      REQUIRE_FALSE(m.hbm().write(64, hbm.data(), hbm.size()));
      REQUIRE_FALSE(m.space(wideSpace, 0).write(0, wideOld.data(), wideOld.size()));
      // In: dense elements into words, upper bytes zero; the rest untouched.
      auto in =
          widening(MemorySpace::Hbm, 64, wideSpace, 0, elem, elems, rows, denseStride, wideStride);
      REQUIRE(e.issue(0, 0, in, 0, 0).ok());
      runAll(e);
      std::vector<uint8_t> got(wideOld.size());
      REQUIRE_FALSE(m.space(wideSpace, 0).read(0, got.data(), got.size()));
      std::vector<uint8_t> expect = wideOld;
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t i = 0; i < elems; ++i)
          for (uint32_t b = 0; b < 4; ++b)
            expect[r * wideStride + i * 4 + b] = b < elem ? hbm[r * denseStride + i * elem + b] : 0;
      CHECK(got == expect);
      CHECK(e.stats(0).spaces[size_t(MemorySpace::Hbm)].read == uint64_t(rows) * elems * elem);
      CHECK(e.stats(0).spaces[size_t(wideSpace)].written == uint64_t(rows) * elems * 4);
      // Out: the low bytes of each word (whatever the upper bytes hold) back densely.
      REQUIRE_FALSE(m.space(wideSpace, 0).write(0, wideOld.data(), wideOld.size()));
      const uint64_t outAt = 1 << 20;
      auto out = widening(wideSpace, 0, MemorySpace::Hbm, outAt, elem, elems, rows, denseStride,
                          wideStride);
      REQUIRE(e.issue(0, 1, out, 1, e.now()).ok());
      runAll(e);
      std::vector<uint8_t> dense(hbm.size()), expectDense(hbm.size(), 0);
      REQUIRE_FALSE(m.hbm().read(outAt, dense.data(), dense.size()));
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t i = 0; i < elems; ++i)
          for (uint32_t b = 0; b < elem; ++b)
            expectDense[r * denseStride + i * elem + b] = wideOld[r * wideStride + i * 4 + b];
      CHECK(dense == expectDense);
    }
}

TEST_CASE("a widening copy costs dense bytes on HBM and widened bytes on the port",
          "[dma][sanitize]") {
  target::ChipConfig c = target::loadChip("v5e");
  const uint32_t dense = 1 << 20;
  auto cycles = [&](target::ChipConfig cc, uint8_t elem, uint32_t bytes) {
    DmaEngine e(cc, nullptr);
    isa::DmaDescriptor d;
    d.src = MemorySpace::Hbm;
    d.dst = MemorySpace::Vmem;
    d.innerBytes = bytes;
    d.elemBytes = elem;
    REQUIRE(e.issue(0, 0, d, 0, 0).ok());
    return runAll(e);
  };
  SECTION("the preset: bf16 is HBM-bound, int8's four-fold words just exceed the port") {
    uint64_t plain = cycles(c, 0, dense), bf16 = cycles(c, 2, dense), s8 = cycles(c, 1, dense);
    CHECK(bf16 == plain);
    // v5e: HBM gives ~546 B/cycle, x4 = ~2185 B/cycle of words > the 2048-byte port.
    uint64_t portCycles = 4 * uint64_t(dense) / uint64_t(c.dma.vmem_bytes_per_cycle);
    CHECK(s8 > plain);
    CHECK(s8 >= portCycles);
    CHECK(s8 <= portCycles + 200);  // + the first HBM read's latency
  }
  SECTION("port-bound: the VMEM write port moves 4 / E bytes per dense byte") {
    c.dma.vmem_bytes_per_cycle = 32;  // far below HBM: the port decides
    uint64_t plain = cycles(c, 0, dense);
    double bf16 = double(cycles(c, 2, dense)), s8 = double(cycles(c, 1, dense));
    CHECK(bf16 / double(plain) == Approx(2.0).epsilon(0.02));
    CHECK(s8 / double(plain) == Approx(4.0).epsilon(0.02));
    // ... and exactly what the port needs for the widened bytes, after the first HBM read.
    CHECK(bf16 >= double(2 * dense / 32));
  }
}

TEST_CASE("the engine refuses malformed widening descriptors", "[dma][sanitize]") {
  target::ChipConfig c = target::loadChip("v5e");
  DmaEngine e(c, nullptr);
  auto d = widening(MemorySpace::Vmem, 0, MemorySpace::Vmem, 4096, 2, 16, 1, 0, 0);
  DmaStatus s = e.issue(0, 0, d, 0, 0);
  CHECK(s.code == DmaStatus::Code::Malformed);
  CHECK_THAT(s.message, Catch::Contains("core 0 queue q0 descriptor #0") &&
                            Catch::Contains("exactly one side must be hbm"));
  // Bounds are checked on the wide side's own extent: 16 values need 64 bytes of VMEM.
  auto edge =
      widening(MemorySpace::Hbm, 0, MemorySpace::Vmem, uint64_t(c.vmem.bytes) - 48, 2, 16, 1, 0, 0);
  CHECK(e.issue(0, 0, edge, 0, 0).code == DmaStatus::Code::OutOfBounds);
  edge.dstAddr -= 16;
  CHECK(e.issue(0, 0, edge, 0, 0).ok());
}

// Pair mode (DmaDescriptor.h): two dense runs, pairOffset apart, into one word each.
TEST_CASE("paired copies put two dense elements in each word", "[dma][sanitize]") {
  target::ChipConfig c = target::loadChip("v5e");
  std::mt19937 rng(17);
  for (uint8_t elem : {1, 2})
    for (MemorySpace wideSpace : {MemorySpace::Vmem, MemorySpace::Smem}) {
      INFO("elem " << int(elem) << " wide side " << isa::memorySpaceName(wideSpace));
      mem::ChipMemory m = memoryFor(c);
      DmaEngine e(c, &m);
      const uint32_t elems = 300, rows = 4, denseStride = 700 * elem, wideStride = 2048;
      const uint32_t pair = 3000 * elem;
      std::vector<uint8_t> hbm(size_t(pair) + rows * denseStride), wideOld(rows * wideStride);
      for (auto& b : hbm) b = uint8_t(rng());
      for (auto& b : wideOld) b = uint8_t(rng());
      REQUIRE_FALSE(m.hbm().write(96, hbm.data(), hbm.size()));
      REQUIRE_FALSE(m.space(wideSpace, 0).write(0, wideOld.data(), wideOld.size()));
      auto d =
          widening(MemorySpace::Hbm, 96, wideSpace, 0, elem, elems, rows, denseStride, wideStride);
      d.pairOffset = pair;
      CHECK(d.totalBytes() == 2 * uint64_t(rows) * elems * elem);
      CHECK(descriptorExtent(d, true) == pair + (rows - 1) * denseStride + elems * elem);
      REQUIRE(e.issue(0, 0, d, 0, 0).ok());
      runAll(e);
      std::vector<uint8_t> got(wideOld.size());
      REQUIRE_FALSE(m.space(wideSpace, 0).read(0, got.data(), got.size()));
      std::vector<uint8_t> expect = wideOld;
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t i = 0; i < elems; ++i)
          for (uint32_t b = 0; b < 4; ++b) {
            size_t at = r * denseStride + i * elem + b % elem;
            expect[r * wideStride + i * 4 + b] = b < elem        ? hbm[at]
                                                 : b < 2u * elem ? hbm[pair + at]
                                                                 : 0;
          }
      CHECK(got == expect);
      CHECK(e.stats(0).spaces[size_t(MemorySpace::Hbm)].read == 2 * uint64_t(rows) * elems * elem);
      CHECK(e.stats(0).spaces[size_t(wideSpace)].written == uint64_t(rows) * elems * 4);
    }
}

TEST_CASE("a paired int8 copy is HBM-bound where the widening one is port-bound",
          "[dma][sanitize]") {
  // v5e: 4 x 546 B/cycle of widened int8 exceed the 2048-byte port; paired,
  // a word carries two int8, so 1 MiB of weights takes what HBM needs for it.
  target::ChipConfig c = target::loadChip("v5e");
  const uint32_t half = 1 << 19;
  auto cycles = [&](bool pair) {
    DmaEngine e(c, nullptr);
    isa::DmaDescriptor d;
    d.src = MemorySpace::Hbm;
    d.dst = MemorySpace::Vmem;
    d.elemBytes = 1;
    d.innerBytes = pair ? half : 2 * half;
    d.pairOffset = pair ? half : 0;
    REQUIRE(e.issue(0, 0, d, 0, 0).ok());
    return runAll(e);
  };
  uint64_t widened = cycles(false), paired = cycles(true);
  uint64_t portCycles = 4 * uint64_t(2 * half) / uint64_t(c.dma.vmem_bytes_per_cycle);
  CHECK(widened >= portCycles);
  // The port needs half of the widened copy's cycles; HBM (~546 B/cycle) decides,
  // a few percent below its peak with two streams (the pair's runs) at once.
  CHECK(paired < widened);
  const double hbmPerCycle = c.hbm.peakBytesPerSecond() / c.core.clock_hz;
  CHECK(double(paired) >= double(2 * half) / hbmPerCycle);
  CHECK(double(paired) <= 1.1 * double(2 * half) / hbmPerCycle);
}

TEST_CASE("the engine refuses malformed paired descriptors", "[dma][sanitize]") {
  target::ChipConfig c = target::loadChip("v5e");
  DmaEngine e(c, nullptr);
  auto d = widening(MemorySpace::Vmem, 0, MemorySpace::Hbm, 0, 1, 16, 1, 0, 0);
  d.pairOffset = 512;
  DmaStatus s = e.issue(0, 0, d, 0, 0);
  CHECK(s.code == DmaStatus::Code::Malformed);
  CHECK_THAT(s.message, Catch::Contains("paired DMA descriptor") &&
                            Catch::Contains("from hbm into vmem or smem"));
  // Bounds cover the high elements: the pair offset past the end of HBM.
  auto far = widening(MemorySpace::Hbm, uint64_t(c.hbm.capacity_bytes) - 8192, MemorySpace::Vmem, 0,
                      1, 16, 1, 0, 0);
  far.pairOffset = 8192;
  CHECK(e.issue(0, 0, far, 0, 0).code == DmaStatus::Code::OutOfBounds);
  far.pairOffset = 4096;
  CHECK(e.issue(0, 0, far, 0, 0).ok());
}
