// The DMA descriptor's encoding (isa/DmaDescriptor.h): pack/unpack round trips
// of plain, widening and paired descriptors, and every malformed form unpack rejects.
#include <catch2/catch.hpp>

#include "isa/DmaDescriptor.h"

using namespace tpusim::isa;

namespace {

DmaDescriptor widening(MemorySpace src, MemorySpace dst, uint8_t elem) {
  DmaDescriptor d;
  d.src = src;
  d.dst = dst;
  d.elemBytes = elem;
  d.numDims = 3;
  d.srcAddr = src == MemorySpace::Hbm ? 0x1'0000'0000ull + 6 * elem : 512;
  d.dstAddr = dst == MemorySpace::Hbm ? 1000ull * elem : 4096;
  d.innerBytes = 128u * elem;
  d.counts = {8, 3, 1};
  bool wideSrc = src != MemorySpace::Hbm;
  uint32_t dense = 2048u * elem, wide = 512;
  d.srcStrides = {wideSrc ? wide : dense, wideSrc ? 8 * wide : 8 * dense, 0};
  d.dstStrides = {wideSrc ? dense : wide, wideSrc ? 8 * dense : 8 * wide, 0};
  return d;
}

std::string unpackError(const std::array<uint32_t, kDmaDescriptorWords>& w) {
  DmaDescriptor d;
  std::string error;
  CHECK_FALSE(DmaDescriptor::unpack(w.data(), &d, &error));
  return error;
}

}  // namespace

TEST_CASE("plain and widening descriptors round-trip through pack/unpack", "[isa][sanitize]") {
  for (auto [src, dst] : {std::pair{MemorySpace::Hbm, MemorySpace::Vmem},
                          std::pair{MemorySpace::Vmem, MemorySpace::Hbm},
                          std::pair{MemorySpace::Hbm, MemorySpace::Smem},
                          std::pair{MemorySpace::Smem, MemorySpace::Hbm}})
    for (uint8_t elem : {0, 1, 2}) {
      DmaDescriptor d = widening(src, dst, elem == 0 ? 2 : elem);
      d.elemBytes = elem;
      auto w = d.pack();
      CHECK(((w[0] >> 10) & 3) == elem);
      DmaDescriptor back;
      std::string error;
      REQUIRE(DmaDescriptor::unpack(w.data(), &back, &error));
      CHECK(back.pack() == w);
      CHECK(back.elemBytes == elem);
      CHECK(back.srcAddr == d.srcAddr);
      CHECK(back.counts == d.counts);
    }
}

TEST_CASE("a widening descriptor's sides have their own byte counts", "[isa][sanitize]") {
  DmaDescriptor in = widening(MemorySpace::Hbm, MemorySpace::Vmem, 2);
  CHECK(in.wideSource() == false);
  CHECK(in.innerBytesOn(true) == 256);   // 128 bf16 values, dense
  CHECK(in.innerBytesOn(false) == 512);  // one 32-bit word each
  CHECK(in.totalBytes() == 256 * 24);
  CHECK(in.sideBytes(false) == 512 * 24);
  DmaDescriptor out = widening(MemorySpace::Vmem, MemorySpace::Hbm, 1);
  CHECK(out.wideSource());
  CHECK(out.innerBytesOn(true) == 512);
  CHECK(out.innerBytesOn(false) == 128);
  DmaDescriptor plain = in;
  plain.elemBytes = 0;
  CHECK(plain.innerBytesOn(false) == 256);
}

TEST_CASE("malformed widening descriptors are rejected with the reason", "[isa][sanitize]") {
  DmaDescriptor good = widening(MemorySpace::Hbm, MemorySpace::Vmem, 2);
  std::string error;
  REQUIRE(good.validate(&error));
  auto w = good.pack();
  w[0] |= 3u << 10;
  CHECK_THAT(unpackError(w), Catch::Contains("element size must be 1 or 2"));
  w = good.pack();
  w[0] |= 1u << 13;
  CHECK_THAT(unpackError(w), Catch::Contains("reserved bits 13-15"));
  DmaDescriptor d = good;
  d.src = MemorySpace::Vmem;
  CHECK_THAT(unpackError(d.pack()),
             Catch::Contains("exactly one side must be hbm") && Catch::Contains("vmem -> vmem"));
  d = good;
  d.dst = MemorySpace::Hbm;
  CHECK_THAT(unpackError(d.pack()), Catch::Contains("hbm -> hbm"));
  d = good;
  d.innerBytes = 255;
  CHECK_THAT(unpackError(d.pack()), Catch::Contains("innermost size 255"));
  d = good;
  d.srcAddr += 1;
  CHECK_THAT(unpackError(d.pack()),
             Catch::Contains("source address") && Catch::Contains("multiple of 2 (the dense side"));
  d = good;
  d.dstAddr += 2;
  CHECK_THAT(unpackError(d.pack()), Catch::Contains("destination address") &&
                                        Catch::Contains("multiple of 4 (the wide side"));
  d = good;
  d.dstStrides[1] = 6;
  CHECK_THAT(unpackError(d.pack()), Catch::Contains("destination stride of dimension 2 (6)"));
  // Strides of dimensions beyond ndims are not looked at.
  d = good;
  d.numDims = 2;
  d.counts[1] = 1;
  d.srcStrides[1] = 3;
  CHECK(DmaDescriptor::unpack(d.pack().data(), &d, &error));
  // A plain descriptor has no alignment rules.
  d = good;
  d.elemBytes = 0;
  d.srcAddr = 1;
  d.innerBytes = 3;
  CHECK(d.validate(&error));
}

TEST_CASE("paired descriptors: encoding, byte counts and their rules", "[isa][sanitize]") {
  DmaDescriptor d = widening(MemorySpace::Hbm, MemorySpace::Vmem, 1);
  d.pairOffset = 128 * 2048;  // rows k and k + 128 of a 2048-wide int8 array
  auto w = d.pack();
  CHECK((w[0] & kDmaPairBit) != 0);
  CHECK(w[15] == 128u * 2048);
  DmaDescriptor back;
  std::string error;
  REQUIRE(DmaDescriptor::unpack(w.data(), &back, &error));
  CHECK(back.pairOffset == d.pairOffset);
  CHECK(back.pack() == w);
  // Both runs are read; one word per pair is written.
  CHECK(d.totalBytes() == 2 * 128 * 24);
  CHECK(d.sideBytes(true) == 2 * 128 * 24);
  CHECK(d.sideBytes(false) == 512 * 24);
  // Word 15 is the pair offset only with bit 12; each without the other is malformed.
  w = d.pack();
  w[0] &= ~kDmaPairBit;
  CHECK_THAT(unpackError(w), Catch::Contains("reserved DMA descriptor word 15"));
  w = d.pack();
  w[15] = 0;
  CHECK_THAT(unpackError(w), Catch::Contains("pair offset (word 15) of 0"));
  DmaDescriptor p = d;
  p.elemBytes = 0;
  CHECK_THAT(unpackError(p.pack()), Catch::Contains("needs the widening mode"));
  p = widening(MemorySpace::Vmem, MemorySpace::Hbm, 1);
  p.pairOffset = 512;
  CHECK_THAT(unpackError(p.pack()), Catch::Contains("vmem -> hbm"));
  p = widening(MemorySpace::Hbm, MemorySpace::Smem, 2);
  p.pairOffset = 513;
  CHECK_THAT(unpackError(p.pack()), Catch::Contains("not a multiple of the element size 2"));
  p.pairOffset = 514;
  CHECK(p.validate(&error));
}
