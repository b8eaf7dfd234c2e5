// The DMA descriptor: 16 consecutive 32-bit SMEM words that a `dma sa, fN, qK`
// instruction points at (sa = SMEM word address). Copies up to 4-dimensional
// strided byte blocks between memory spaces. All sizes and strides are bytes.
//
//   word 0      : src space (bits 0-3) | dst space (bits 4-7) | ndims-1 (bits 8-9)
//                 | element size of the widening mode (bits 10-11, below)
//                 | pair mode (bit 12, below)
//                 | dst chip (bits 16-31, 0xFFFF = this chip; reserved: dma.remote
//                   takes the device from a register and wants 0xFFFF here)
//   words 1,2   : source address, low and high 32 bits
//   words 3,4   : destination address, low and high 32 bits
//   word 5      : bytes of the innermost (contiguous) dimension, > 0
//   words 6-8   : counts of dimensions 1..3 (outer), >= 1 (unused dims: 1)
//   words 9-11  : source strides of dimensions 1..3
//   words 12-14 : destination strides of dimensions 1..3
//   word 15     : pair mode: the pair offset in bytes (below); else reserved, 0
// Element (i3, i2, i1) copies word-5 bytes from src + i1*s1 + i2*s2 + i3*s3 to
// dst + i1*d1 + i2*d2 + i3*d3. VMEM addresses here are BYTE addresses
// (row * 512 + lane * 4); SMEM addresses are byte addresses too (word * 4).
// Transfers complete in order within a queue; the flag is incremented by 1 when
// the last byte of the descriptor has been written.
//
// Widening mode (word 0 bits 10-11 = E, 1 or 2; 0 = the plain byte copy above;
// 3 is malformed). VMEM and SMEM hold one element per 32-bit word while HBM
// holds bf16 / int8 arrays densely, so the DMA does that relayout itself, as a
// real TPU DMA does layout work. One side is HBM (the dense side, E bytes per
// element), the other VMEM or SMEM (the wide side, 4 bytes per element):
//  - HBM -> VMEM/SMEM: each dense E-byte element is written to the low E bytes
//    of its own 32-bit word; the upper 4 - E bytes of the word become zero;
//  - VMEM/SMEM -> HBM: the low E bytes of each word are read and written
//    densely (the upper bytes are ignored).
// Units: word 5 (inner) counts DENSE bytes (a multiple of E); the wide side's
// innermost run is inner / E * 4 bytes. Addresses and strides are each side's
// own byte addresses; the dense side's must be multiples of E, the wide side's
// multiples of 4. Anything else (both or neither side HBM, misaligned) is a
// malformed descriptor.
//
// Pair mode (word 0 bit 12; only with the widening mode, HBM -> VMEM/SMEM):
// each wide word holds two dense elements, the one the walk reaches at dense
// address a in its low E bytes and the one at a + word 15 (the pair offset) in
// the next E bytes; the upper 4 - 2E bytes are zero. This is the packed int8
// layout `mxu.wpush.s8x2` reads (rows k and k + N of a weight tile in one
// word, isa/README.md "MXU"), made by the DMA instead of a `vpack.b8` per
// vreg. The walk's units are those of the widening mode (inner counts the
// low elements' dense bytes); the source reads twice the bytes. The pair
// offset must be a non-zero multiple of E.
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
constexpr int kDmaWideWordBytes = 4;        // bytes per element on the wide side of a widening copy
constexpr uint32_t kDmaPairBit = 1u << 12;  // word 0: pair mode

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
  uint8_t elemBytes = 0;    // widening mode: dense element size 1 or 2; 0 = plain byte copy
  uint32_t pairOffset = 0;  // pair mode: dense byte offset of each word's high element; 0 = off

  bool widening() const { return elemBytes != 0; }
  bool paired() const { return pairOffset != 0; }
  // Whether the source (else the destination) is the wide side of a widening copy.
  bool wideSource() const { return widening() && src != MemorySpace::Hbm; }
  // Bytes of the innermost run on one side (differs between the sides only when widening).
  uint64_t innerBytesOn(bool source) const {
    bool wide = widening() && (source == wideSource());
    return wide ? uint64_t(innerBytes) / elemBytes * kDmaWideWordBytes : innerBytes;
  }
  // Bytes moved on the dense side (both sides for a plain copy; both elements of a pair).
  uint64_t totalBytes() const {
    return uint64_t(innerBytes) * counts[0] * counts[1] * counts[2] * (paired() ? 2 : 1);
  }
  // Bytes read from the source / written to the destination.
  uint64_t sideBytes(bool source) const {
    uint64_t pairs = paired() && source ? 2 : 1;  // a pair's source is the dense side
    return innerBytesOn(source) * counts[0] * counts[1] * counts[2] * pairs;
  }
  std::array<uint32_t, kDmaDescriptorWords> pack() const;
  // The rules of the layout above that involve more than one field (widening
  // and pair mode spaces and alignment); on a violation returns false and sets *error.
  bool validate(std::string* error) const;
  // Unpacks and validates; on a malformed descriptor returns false and sets *error.
  static bool unpack(const uint32_t* words, DmaDescriptor* out, std::string* error);
};

}  // namespace tpusim::isa
