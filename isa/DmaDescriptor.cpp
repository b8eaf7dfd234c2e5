#include "isa/DmaDescriptor.h"

namespace tpusim::isa {

const char* memorySpaceName(MemorySpace space) {
  switch (space) {
    case MemorySpace::Hbm:
      return "hbm";
    case MemorySpace::Vmem:
      return "vmem";
    case MemorySpace::Smem:
      return "smem";
  }
  return "?";
}

bool memorySpaceFromName(const std::string& name, MemorySpace* out) {
  for (int i = 0; i < kNumMemorySpaces; ++i)
    if (name == memorySpaceName(MemorySpace(i))) {
      *out = MemorySpace(i);
      return true;
    }
  return false;
}

std::array<uint32_t, kDmaDescriptorWords> DmaDescriptor::pack() const {
  std::array<uint32_t, kDmaDescriptorWords> w{};
  w[0] = uint32_t(src) | uint32_t(dst) << 4 | uint32_t(numDims - 1) << 8 |
         uint32_t(elemBytes & 3) << 10 | (paired() ? kDmaPairBit : 0) | uint32_t(dstChip) << 16;
  w[1] = uint32_t(srcAddr);
  w[2] = uint32_t(srcAddr >> 32);
  w[3] = uint32_t(dstAddr);
  w[4] = uint32_t(dstAddr >> 32);
  w[5] = innerBytes;
  for (int i = 0; i < 3; ++i) {
    w[6 + i] = counts[i];
    w[9 + i] = srcStrides[i];
    w[12 + i] = dstStrides[i];
  }
  w[15] = pairOffset;
  return w;
}

bool DmaDescriptor::unpack(const uint32_t* w, DmaDescriptor* d, std::string* error) {
  uint32_t srcSpace = w[0] & 0xF, dstSpace = (w[0] >> 4) & 0xF;
  if (srcSpace >= kNumMemorySpaces || dstSpace >= kNumMemorySpaces) {
    *error = "invalid memory space in DMA descriptor word 0";
    return false;
  }
  if ((w[0] >> 13) & 0x7) {
    *error = "reserved bits 13-15 of DMA descriptor word 0 are not zero";
    return false;
  }
  d->src = MemorySpace(srcSpace);
  d->dst = MemorySpace(dstSpace);
  d->numDims = int((w[0] >> 8) & 3) + 1;
  d->elemBytes = uint8_t((w[0] >> 10) & 3);
  d->dstChip = uint16_t(w[0] >> 16);
  d->srcAddr = uint64_t(w[1]) | uint64_t(w[2]) << 32;
  d->dstAddr = uint64_t(w[3]) | uint64_t(w[4]) << 32;
  d->innerBytes = w[5];
  if (d->innerBytes == 0) {
    *error = "DMA descriptor has an innermost size of 0 bytes";
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    d->counts[i] = w[6 + i];
    d->srcStrides[i] = w[9 + i];
    d->dstStrides[i] = w[12 + i];
    if (d->counts[i] == 0) {
      *error = "DMA descriptor has a count of 0 in dimension " + std::to_string(i + 1);
      return false;
    }
    if (i + 1 >= d->numDims && d->counts[i] != 1) {
      *error = "DMA descriptor dimension " + std::to_string(i + 1) +
               " is beyond ndims but its count is not 1";
      return false;
    }
  }
  const bool pair = (w[0] & kDmaPairBit) != 0;
  if (!pair && w[15] != 0) {
    *error = "reserved DMA descriptor word 15 is not zero (word 0 bit 12, the pair mode, is clear)";
    return false;
  }
  if (pair && w[15] == 0) {
    *error = "paired DMA descriptor (word 0 bit 12) has a pair offset (word 15) of 0";
    return false;
  }
  d->pairOffset = w[15];
  return d->validate(error);
}

bool DmaDescriptor::validate(std::string* error) const {
  if (paired()) {
    auto fail = [&](std::string message) {
      *error = "paired DMA descriptor (pair offset " + std::to_string(pairOffset) +
               " bytes, word 0 bit 12 and word 15): " + message;
      return false;
    };
    if (!widening())
      return fail(
          "the pair mode packs dense elements into 32-bit words, so it needs the "
          "widening mode (word 0 bits 10-11, elem=1 or 2)");
    if (src != MemorySpace::Hbm || dst == MemorySpace::Hbm)
      return fail(std::string("it packs on the way from hbm into vmem or smem, but it copies ") +
                  memorySpaceName(src) + " -> " + memorySpaceName(dst));
    if (elemBytes <= 2 && pairOffset % elemBytes)
      return fail("the pair offset is not a multiple of the element size " +
                  std::to_string(elemBytes));
  }
  if (!widening()) return true;
  auto fail = [&](std::string message) {
    *error = "widening DMA descriptor (element size " + std::to_string(elemBytes) +
             " bytes, word 0 bits 10-11): " + message;
    return false;
  };
  if (elemBytes != 1 && elemBytes != 2) return fail("the element size must be 1 or 2");
  bool srcHbm = src == MemorySpace::Hbm, dstHbm = dst == MemorySpace::Hbm;
  if (srcHbm == dstHbm)
    return fail(std::string("exactly one side must be hbm (the dense side), but it copies ") +
                memorySpaceName(src) + " -> " + memorySpaceName(dst));
  if (innerBytes % elemBytes)
    return fail("the innermost size " + std::to_string(innerBytes) +
                " is not a multiple of the element size");
  for (bool source : {true, false}) {
    bool wide = source == wideSource();
    uint64_t align = wide ? kDmaWideWordBytes : elemBytes;
    const char* side = source ? "source" : "destination";
    uint64_t addr = source ? srcAddr : dstAddr;
    if (addr % align)
      return fail(std::string(side) + " address " + std::to_string(addr) +
                  " is not a multiple of " + std::to_string(align) + " (the " +
                  (wide ? "wide" : "dense") + " side's element size)");
    const auto& strides = source ? srcStrides : dstStrides;
    for (int i = 0; i + 1 < numDims; ++i)
      if (strides[size_t(i)] % align)
        return fail(std::string(side) + " stride of dimension " + std::to_string(i + 1) + " (" +
                    std::to_string(strides[size_t(i)]) + ") is not a multiple of " +
                    std::to_string(align));
  }
  return true;
}

}  // namespace tpusim::isa
