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
  w[0] = uint32_t(src) | uint32_t(dst) << 4 | uint32_t(numDims - 1) << 8 | uint32_t(dstChip) << 16;
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
  return w;
}

bool DmaDescriptor::unpack(const uint32_t* w, DmaDescriptor* d, std::string* error) {
  uint32_t srcSpace = w[0] & 0xF, dstSpace = (w[0] >> 4) & 0xF;
  if (srcSpace >= kNumMemorySpaces || dstSpace >= kNumMemorySpaces) {
    *error = "invalid memory space in DMA descriptor word 0";
    return false;
  }
  if ((w[0] >> 10) & 0x3F) {
    *error = "reserved bits 10-15 of DMA descriptor word 0 are not zero";
    return false;
  }
  d->src = MemorySpace(srcSpace);
  d->dst = MemorySpace(dstSpace);
  d->numDims = int((w[0] >> 8) & 3) + 1;
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
  if (w[15] != 0) {
    *error = "reserved DMA descriptor word 15 is not zero";
    return false;
  }
  return true;
}

}  // namespace tpusim::isa
