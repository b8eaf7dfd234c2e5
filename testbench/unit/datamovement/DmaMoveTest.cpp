// The move geometry: normalization finds the longest runs, descriptor splits
// and queue splits cover every byte exactly once.
#include <catch2/catch.hpp>

#include "compiler/lower/dma/DmaMove.h"

using namespace tpusim::lower;

TEST_CASE("a [2048,32,128] bf16 transpose to [32,2048,128] moves 256-byte runs", "[dma]") {
  // Axes in result order: (32: src 128, dst 262144), (2048: src 4096, dst 128), (128: 1, 1).
  Move m = elementMove(2, {{32, 128, 262144}, {2048, 4096, 128}, {128, 1, 1}}, 0, 0);
  CHECK(m.run == 256);
  REQUIRE(m.axes.size() == 2);
  CHECK(m.axes[0] == MoveAxis{32, 256, 524288});
  CHECK(m.axes[1] == MoveAxis{2048, 8192, 256});
  DescriptorSplit s = splitForDescriptors(m);
  CHECK(s.descriptors() == 1);
  {
    tpusim::isa::DmaDescriptor d = makeDescriptor(s, 1000, 2000);
    CHECK(d.numDims == 3);
    CHECK(d.innerBytes == 256);
    CHECK(d.counts[0] == 2048);
    CHECK(d.srcStrides[0] == 8192);
    CHECK(d.dstStrides[0] == 256);
    CHECK(d.counts[1] == 32);
    CHECK(d.totalBytes() == uint64_t(2048) * 32 * 128 * 2);
  }
}

TEST_CASE("contiguous copies become one run; unit axes vanish", "[dma]") {
  Move m = elementMove(4, {{1, 0, 0}, {8, 128, 128}, {128, 1, 1}}, 0, 0);
  CHECK(m.run == 4096);
  CHECK(m.axes.empty());
  Move empty = elementMove(4, {{0, 1, 1}, {5, 1, 1}}, 0, 0);
  CHECK(empty.empty());
}

TEST_CASE("broadcast axes keep a zero source stride; reversed axes are enumerated", "[dma]") {
  Move b = elementMove(4, {{4, 0, 16}, {16, 1, 1}}, 0, 0);
  CHECK(b.run == 64);
  REQUIRE(b.axes.size() == 1);
  CHECK(b.axes[0] == MoveAxis{4, 0, 64});
  Move r = elementMove(4, {{100, -8, 8}, {8, 1, 1}}, 99 * 8, 0);
  CHECK(r.run == 32);
  DescriptorSplit s = splitForDescriptors(r);
  CHECK(s.walked.empty());
  CHECK(s.descriptors() == 100);
  ByteSpan span = moveSpan(r, false);
  CHECK(span.begin == 0);
  CHECK(span.end == 100 * 32);
}

TEST_CASE("more than three axes leave the shortest ones to enumerate", "[dma]") {
  Move m;
  m.run = 4;
  m.axes = {{3, 1000, 4}, {5, 40, 12}, {7, 4000, 60}, {2, 100000, 420}};
  DescriptorSplit s = splitForDescriptors(m);
  REQUIRE(s.walked.size() == 3);
  REQUIRE(s.enumerated.size() == 1);
  CHECK(s.enumerated[0].count == 2);
}

TEST_CASE("queue splits cover the descriptor exactly", "[dma]") {
  tpusim::isa::DmaDescriptor one;
  one.src = one.dst = tpusim::isa::MemorySpace::Hbm;
  one.srcAddr = 0;
  one.dstAddr = 1 << 20;
  one.innerBytes = 100000;
  auto parts = splitAcrossQueues(one, 4, 1024);
  uint64_t sum = 0, next = 0;
  for (const auto& p : parts) {
    CHECK(p.srcAddr == next);
    CHECK(p.dstAddr == (1 << 20) + next);
    next += p.innerBytes;
    sum += p.innerBytes;
  }
  CHECK(parts.size() == 4);
  CHECK(sum == 100000);
  tpusim::isa::DmaDescriptor grid = one;
  grid.innerBytes = 256;
  grid.numDims = 2;
  grid.counts[0] = 10;
  grid.srcStrides[0] = 512;
  grid.dstStrides[0] = 256;
  auto rows = splitAcrossQueues(grid, 4, 0);
  REQUIRE(rows.size() == 4);
  uint32_t count = 0;
  for (const auto& p : rows) {
    CHECK(p.srcAddr == uint64_t(count) * 512);
    count += p.counts[0];
  }
  CHECK(count == 10);
}
