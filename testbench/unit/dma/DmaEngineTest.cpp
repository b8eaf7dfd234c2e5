// The DMA engine model (plain C++): strided copies in every direction, request
// splitting, queue depth, in-order completion, the outstanding limit, timing
// equal in functional and timing-only mode, out-of-bounds faults. Expected
// cycles are derived from the preset's dma.* fields.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "isa/target/ChipLoader.h"
#include "sim/dma/DmaEngine.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::dma;
using isa::MemorySpace;

namespace {

target::ChipConfig chip() { return target::loadChip("v5e"); }

mem::ChipMemory memoryFor(const target::ChipConfig& c) {
  return mem::ChipMemory({uint64_t(c.hbm.capacity_bytes), uint64_t(c.vmem.bytes),
                          uint64_t(c.core.smem_bytes) / 4, int(c.core.cores)});
}

isa::DmaDescriptor copy(MemorySpace src, uint64_t srcAddr, MemorySpace dst, uint64_t dstAddr,
                        uint32_t inner, std::array<uint32_t, 3> counts = {1, 1, 1},
                        std::array<uint32_t, 3> srcStrides = {0, 0, 0},
                        std::array<uint32_t, 3> dstStrides = {0, 0, 0}) {
  isa::DmaDescriptor d;
  d.src = src;
  d.dst = dst;
  d.srcAddr = srcAddr;
  d.dstAddr = dstAddr;
  d.innerBytes = inner;
  d.counts = counts;
  d.srcStrides = srcStrides;
  d.dstStrides = dstStrides;
  d.numDims = counts[2] > 1 ? 4 : counts[1] > 1 ? 3 : counts[0] > 1 ? 2 : 1;
  return d;
}

std::vector<DmaCompletion> runAll(DmaEngine& e) {
  std::vector<DmaCompletion> done;
  while (!e.idle()) e.advanceTo(e.nextEventCycle() + 1, done);
  return done;
}

// The reference: element by element, as DmaDescriptor.h defines it.
void referenceCopy(const isa::DmaDescriptor& d, const mem::SparseMemory& src,
                   std::vector<uint8_t>& expectDst, uint64_t dstBase) {
  for (uint32_t i3 = 0; i3 < d.counts[2]; ++i3)
    for (uint32_t i2 = 0; i2 < d.counts[1]; ++i2)
      for (uint32_t i1 = 0; i1 < d.counts[0]; ++i1) {
        uint64_t s = d.srcAddr + uint64_t(i1) * d.srcStrides[0] + uint64_t(i2) * d.srcStrides[1] +
                     uint64_t(i3) * d.srcStrides[2];
        uint64_t t = d.dstAddr + uint64_t(i1) * d.dstStrides[0] + uint64_t(i2) * d.dstStrides[1] +
                     uint64_t(i3) * d.dstStrides[2];
        REQUIRE_FALSE(src.read(s, expectDst.data() + (t - dstBase), d.innerBytes));
      }
}

}  // namespace

TEST_CASE("the walker cuts elements into aligned requests", "[dma][sanitize]") {
  // 3 rows of 1000 bytes from HBM 100 (stride 4096): each row splits at the
  // 512-byte boundaries of the HBM address: 412 + 512 + 76.
  auto d = copy(MemorySpace::Hbm, 100, MemorySpace::Vmem, 0, 1000, {3, 1, 1}, {4096, 0, 0},
                {1024, 0, 0});
  DescriptorWalker w(d, 512);
  std::vector<DmaRequestRange> r;
  while (!w.done()) r.push_back(w.next());
  REQUIRE(r.size() == 9);
  CHECK(r[0].src == 100);
  CHECK(r[0].bytes == 412);
  CHECK(r[1].src == 512);
  CHECK(r[1].dst == 412);
  CHECK(r[1].bytes == 512);
  CHECK(r[2].bytes == 76);
  CHECK(r[3].src == 4196);
  CHECK(r[3].dst == 1024);
  // VMEM -> HBM aligns on the destination (the HBM side).
  auto up = copy(MemorySpace::Vmem, 7, MemorySpace::Hbm, 1000, 100);
  DescriptorWalker w2(up, 512);
  CHECK(w2.next().bytes == 24);
  CHECK(w2.next().bytes == 76);
  CHECK(w2.done());
}

TEST_CASE("strided 2D and 3D copies are correct in every direction", "[dma][sanitize]") {
  target::ChipConfig c = chip();
  std::mt19937 rng(7);
  const MemorySpace spaces[] = {MemorySpace::Hbm, MemorySpace::Vmem, MemorySpace::Smem};
  for (MemorySpace src : spaces)
    for (MemorySpace dst : spaces) {
      mem::ChipMemory m = memoryFor(c);
      DmaEngine e(c, &m);
      // A 3D source block (2 x 3 x 40 bytes, padded strides) into a denser 3D destination.
      auto d = copy(src, 1000, dst, 20000, 40, {3, 2, 1}, {64, 300, 0}, {40, 120, 0});
      if (src == dst) d.dstAddr = 50000;  // disjoint within one memory
      auto d3 = copy(src, 3000, dst, 60000, 24, {4, 3, 2}, {32, 200, 1000}, {24, 96, 288});
      std::vector<uint8_t> pattern(8192);
      for (auto& b : pattern) b = uint8_t(rng());
      REQUIRE_FALSE(m.space(src, 0).write(0, pattern.data(), pattern.size()));
      REQUIRE(e.issue(0, 0, d, 1, 0).ok());
      REQUIRE(e.issue(0, 1, d3, 2, 0).ok());
      auto done = runAll(e);
      REQUIRE(done.size() == 2);
      for (const auto* desc : {&d, &d3}) {
        uint64_t extent = uint64_t(descriptorExtent(*desc, false));
        std::vector<uint8_t> expect(extent), got(extent);
        REQUIRE_FALSE(m.space(dst, 0).read(desc->dstAddr, expect.data(), extent));
        referenceCopy(*desc, m.space(src, 0), expect, desc->dstAddr);
        REQUIRE_FALSE(m.space(dst, 0).read(desc->dstAddr, got.data(), extent));
        INFO(isa::memorySpaceName(src) << " -> " << isa::memorySpaceName(dst));
        CHECK(got == expect);
      }
      CHECK(e.stats(0).spaces[size_t(src)].read == d.totalBytes() + d3.totalBytes());
      CHECK(e.stats(0).spaces[size_t(dst)].written == d.totalBytes() + d3.totalBytes());
    }
}

TEST_CASE("VMEM to VMEM timing follows the port rate and the outstanding limit",
          "[dma][sanitize]") {
  target::ChipConfig c = chip();
  const uint64_t n = 64;  // requests of request_bytes each
  const uint32_t bytes = uint32_t(n * c.dma.request_bytes);
  const uint64_t portCycles =
      (uint64_t(c.dma.request_bytes) + c.dma.vmem_bytes_per_cycle - 1) / c.dma.vmem_bytes_per_cycle;
  const uint64_t issueAt = 5,
                 active = issueAt + uint64_t(std::max<int64_t>(1, c.dma.issue_latency));
  SECTION("pipelined: the read port streams, the write port follows one request behind") {
    DmaEngine e(c, nullptr);
    REQUIRE(e.issue(0, 0, copy(MemorySpace::Vmem, 0, MemorySpace::Vmem, 1 << 20, bytes), 0, issueAt)
                .ok());
    auto done = runAll(e);
    REQUIRE(done.size() == 1);
    // The ports move bytes back to back: the reads take n * B / rate cycles and
    // the last write ends one request later.
    const uint64_t streamCycles =
        (n * uint64_t(c.dma.request_bytes) + c.dma.vmem_bytes_per_cycle - 1) /
        c.dma.vmem_bytes_per_cycle;
    CHECK(done[0].cycle == active + streamCycles + portCycles);
    CHECK(done[0].issueCycle == issueAt);
    CHECK(e.stats(0).queues[0].busyCycles == done[0].cycle - issueAt);
  }
  SECTION("one request in flight: read then write, one after the other") {
    c.dma.max_outstanding_requests = 1;
    DmaEngine e(c, nullptr);
    REQUIRE(e.issue(0, 0, copy(MemorySpace::Vmem, 0, MemorySpace::Vmem, 1 << 20, bytes), 0, issueAt)
                .ok());
    auto done = runAll(e);
    CHECK(done[0].cycle == active + n * 2 * portCycles);
  }
}

TEST_CASE("descriptors of one queue complete in order; other queues overtake", "[dma][sanitize]") {
  target::ChipConfig c = chip();
  DmaEngine e(c, nullptr);
  auto big = copy(MemorySpace::Hbm, 0, MemorySpace::Vmem, 0, 1 << 20);
  // VMEM to VMEM: done within a few cycles of starting, long before the big
  // one's last HBM reads return.
  auto small = copy(MemorySpace::Vmem, 1 << 24, MemorySpace::Vmem, 1 << 21, 512);
  REQUIRE(e.issue(0, 0, big, 1, 0).ok());
  REQUIRE(e.issue(0, 0, small, 2, 0).ok());
  REQUIRE(e.issue(0, 1, small, 3, 0).ok());
  auto done = runAll(e);
  REQUIRE(done.size() == 3);
  CHECK(done[0].flag == 3);  // the small one on queue 1 does not wait for queue 0
  CHECK(done[1].flag == 1);
  CHECK(done[2].flag == 2);
  CHECK(done[2].cycle == done[1].cycle);  // ready long before, it completes with its predecessor
  CHECK(done[0].cycle < done[1].cycle);
}

TEST_CASE("a full queue refuses descriptors until one completes", "[dma][sanitize]") {
  target::ChipConfig c = chip();
  DmaEngine e(c, nullptr);
  auto d = copy(MemorySpace::Hbm, 0, MemorySpace::Vmem, 0, 4096);
  for (int64_t i = 0; i < c.dma.queue_depth; ++i) REQUIRE(e.issue(0, 2, d, 0, 0).ok());
  CHECK_FALSE(e.canIssue(0, 2, 0));
  CHECK(e.canIssue(0, 1, 0));
  DmaStatus s = e.issue(0, 2, d, 0, 0);
  CHECK(s.code == DmaStatus::Code::QueueFull);
  CHECK_THAT(s.message, Catch::Contains("core 0 queue q2") && Catch::Contains("queue full"));
  std::vector<DmaCompletion> done;
  while (done.empty()) e.advanceTo(e.nextEventCycle() + 1, done);
  uint64_t first = done[0].cycle;
  CHECK_FALSE(e.canIssue(0, 2, first - 1));
  CHECK(e.canIssue(0, 2, first));
  CHECK_FALSE(e.idle(0, first));
  runAll(e);
  CHECK(e.idle(0, e.now()));
}

TEST_CASE("the outstanding-request limit bounds HBM streaming", "[dma][sanitize]") {
  target::ChipConfig c = chip();
  auto d = copy(MemorySpace::Hbm, 0, MemorySpace::Vmem, 0, 4 << 20);
  auto run = [&](int64_t limit) {
    target::ChipConfig cc = c;
    cc.dma.max_outstanding_requests = limit;
    DmaEngine e(cc, nullptr);
    REQUIRE(e.issue(0, 0, d, 0, 0).ok());
    return runAll(e).at(0).cycle;
  };
  uint64_t full = run(c.dma.max_outstanding_requests), few = run(4);
  // With the preset's limit one descriptor streams at >= 90% of HBM peak.
  double peak = c.hbm.peakBytesPerSecond() / c.core.clock_hz;
  CHECK(double(d.totalBytes()) / double(full) >= 0.9 * peak);
  // With 4 requests in flight each costs at least one HBM round trip: far slower.
  CHECK(few > 4 * full);
}

TEST_CASE("timing-only and functional mode give identical cycles", "[dma][sanitize]") {
  target::ChipConfig c = chip();
  c.core.cores = 2;
  auto run = [&](bool functional) {
    mem::ChipMemory m = memoryFor(c);
    DmaEngine e(c, functional ? &m : nullptr);
    std::vector<DmaCompletion> done;
    uint64_t t = 0;
    for (int i = 0; i < 40; ++i) {
      MemorySpace src = i % 3 == 0   ? MemorySpace::Hbm
                        : i % 3 == 1 ? MemorySpace::Vmem
                                     : MemorySpace::Smem;
      MemorySpace dst = i % 2 ? MemorySpace::Hbm : MemorySpace::Vmem;
      auto d = copy(src, uint64_t(i) * 4096, dst, uint64_t(i) * 8192 + 64, 700, {5, 1, 1},
                    {1024, 0, 0}, {768, 0, 0});
      int core = i % 2, q = i % 4;
      while (!e.canIssue(core, q, t)) e.advanceTo(++t, done);
      REQUIRE(e.issue(core, q, d, i % 8, t).ok());
      t += uint64_t(i % 5);
      e.advanceTo(t, done);
    }
    while (!e.idle()) e.advanceTo(e.nextEventCycle() + 1, done);
    return done;
  };
  auto a = run(true), b = run(false);
  REQUIRE(a.size() == 40);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].cycle == b[i].cycle);
    CHECK(a[i].core == b[i].core);
    CHECK(a[i].flag == b[i].flag);
  }
}

TEST_CASE("out-of-bounds and malformed descriptors are faults that name the place",
          "[dma][sanitize]") {
  target::ChipConfig c = chip();
  DmaEngine e(c, nullptr);
  uint64_t vmem = uint64_t(c.vmem.bytes);
  // The last row of a 2D destination block falls past the end of VMEM.
  auto d = copy(MemorySpace::Hbm, 0, MemorySpace::Vmem, vmem - 4096, 512, {9, 1, 1}, {512, 0, 0},
                {512, 0, 0});
  DmaStatus s = e.issue(0, 3, d, 5, 0);
  REQUIRE(s.code == DmaStatus::Code::OutOfBounds);
  REQUIRE(s.fault);
  CHECK(s.fault->space == MemorySpace::Vmem);
  CHECK(s.fault->address == vmem - 4096);
  CHECK(s.fault->size == 9 * 512);
  CHECK_THAT(s.message, Catch::Contains("core 0 queue q3 descriptor #0") &&
                            Catch::Contains("destination") && Catch::Contains("vmem"));
  auto hbmSrc =
      copy(MemorySpace::Hbm, uint64_t(c.hbm.capacity_bytes) - 10, MemorySpace::Vmem, 0, 11);
  s = e.issue(0, 0, hbmSrc, 0, 0);
  CHECK(s.code == DmaStatus::Code::OutOfBounds);
  CHECK_THAT(s.message, Catch::Contains("source") && Catch::Contains("hbm"));
  // Huge strides must not wrap around.
  auto wrap = copy(MemorySpace::Smem, 0, MemorySpace::Vmem, 0, 4, {0xFFFFFFFF, 0xFFFFFFFF, 2},
                   {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {4, 4, 4});
  CHECK(e.issue(0, 0, wrap, 0, 0).code == DmaStatus::Code::OutOfBounds);
  CHECK(e.issue(0, 4, hbmSrc, 0, 0).code == DmaStatus::Code::Malformed);
  CHECK(e.issue(0, 0, copy(MemorySpace::Hbm, 0, MemorySpace::Vmem, 0, 4), int(c.core.sync_flags), 0)
            .code == DmaStatus::Code::Malformed);
  auto remote = copy(MemorySpace::Hbm, 0, MemorySpace::Hbm, 0, 4);
  remote.dstChip = 3;
  CHECK(e.issue(0, 0, remote, 0, 0).code == DmaStatus::Code::Unsupported);
  CHECK(e.idle());  // nothing was queued
}

TEST_CASE("streams that conflict in the HBM banks all make progress", "[dma][sanitize]") {
  // Four queues stream from addresses 1 MiB apart: the same banks, other rows.
  // The scheduler must keep serving each (starvation limit), never livelock.
  target::ChipConfig c = chip();
  DmaEngine e(c, nullptr);
  const uint32_t bytes = 256 << 10;
  for (int i = 0; i < 4 * int(c.dma.queue_depth); ++i) {
    auto d =
        copy(MemorySpace::Hbm, uint64_t(i) << 20, MemorySpace::Vmem, uint64_t(i) * bytes, bytes);
    REQUIRE(e.issue(0, i % 4, d, 0, 0).ok());
  }
  std::vector<DmaCompletion> done;
  const uint64_t total = uint64_t(bytes) * 4 * uint64_t(c.dma.queue_depth);
  const double peak = c.hbm.peakBytesPerSecond() / c.core.clock_hz;
  // Even with every access pattern conflicting, a quarter of peak is a loose floor.
  const uint64_t deadline = uint64_t(double(total) / (0.25 * peak));
  while (!e.idle() && e.now() < deadline) e.advanceTo(e.nextEventCycle() + 1, done);
  REQUIRE(done.size() == size_t(4 * c.dma.queue_depth));
  auto s = e.hbm().totalStats();
  CHECK(s.rowConflicts > 0);
}
