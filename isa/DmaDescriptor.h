// The DMA descriptor: 16 consecutive 32-bit SMEM words that a `dma sa, fN, qK`
// instruction points at (sa = SMEM word address). Copies up to 4-dimensional
// strided byte blocks between memory spaces. All sizes and strides are bytes.
//
//   word 0      : src space (bits 0-3) | dst space (bits 4-7) | ndims-1 (bits 8-9)
//                 | dst chip (bits 16-31, 0xFFFF = this chip; for ICI, later)
//   words 1,2   : source address, low and high 32 bits
//   words 3,4   : destination address, low and high 32 bits
//   word 5      : bytes of the innermost (contiguous) dimension, > 0
//   words 6-8   : counts of dimensions 1..3 (outer), >= 1 (unused dims: 1)
//   words 9-11  : source strides of dimensions 1..3
//   words 12-14 : destination strides of dimensions 1..3
//   word 15     : reserved, 0
// Element (i3, i2, i1) copies word-5 bytes from src + i1*s1 + i2*s2 + i3*s3 to
// dst + i1*d1 + i2*d2 + i3*d3. VMEM addresses here are BYTE addresses
// (row * 512 + lane * 4); SMEM addresses are byte addresses too (word * 4).
// Transfers complete in order within a queue; the flag is incremented by 1 when
// the last byte of the descriptor has been written.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tpusim::isa {

enum class MemorySpace : uint8_t { Hbm = 0, Vmem = 1, Smem = 2 };
constexpr int kNumMemorySpaces = 3;
const char* memorySpaceName(MemorySpace space);  // "hbm", "vmem", "smem"
bool memorySpaceFromName(const std::string& name, MemorySpace* out);

constexpr int kDmaDescriptorWords = 16;
constexpr int kDmaMaxDims = 4;
constexpr uint16_t kDmaLocalChip = 0xFFFF;

struct DmaDescriptor {
  MemorySpace src = MemorySpace::Hbm;
  MemorySpace dst = MemorySpace::Vmem;
  int numDims = 1;  // 1..4
  uint16_t dstChip = kDmaLocalChip;
  uint64_t srcAddr = 0;
  uint64_t dstAddr = 0;
  uint32_t innerBytes = 0;
  std::array<uint32_t, 3> counts{1, 1, 1};
  std::array<uint32_t, 3> srcStrides{0, 0, 0};
  std::array<uint32_t, 3> dstStrides{0, 0, 0};

  uint64_t totalBytes() const { return uint64_t(innerBytes) * counts[0] * counts[1] * counts[2]; }
  std::array<uint32_t, kDmaDescriptorWords> pack() const;
  // Unpacks and validates; on a malformed descriptor returns false and sets *error.
  static bool unpack(const uint32_t* words, DmaDescriptor* out, std::string* error);
};

}  // namespace tpusim::isa
