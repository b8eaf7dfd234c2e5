// Byte-addressed functional storage of a fixed capacity that allocates 64 KiB
// pages on first write: HBM (tens of GiB) and VMEM (up to 128 MiB per core)
// cost host memory only for what a program touches. Never-written bytes read
// as zero. Every access is bounds-checked and returns a MemFault on failure
// (nothing is read or written then).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/mem/MemFault.h"

namespace tpusim::sim::mem {

class SparseMemory {
 public:
  static constexpr uint64_t kPageBytes = 64 * 1024;

  SparseMemory(isa::MemorySpace space, uint64_t capacityBytes, int core = -1);

  uint64_t capacity() const { return capacity_; }
  isa::MemorySpace space() const { return space_; }
  int core() const { return core_; }

  // The fault [address, address + size) would raise, if any (no access made).
  MaybeFault check(uint64_t address, uint64_t size, bool write) const;

  MaybeFault read(uint64_t address, void* dst, uint64_t size) const;
  MaybeFault write(uint64_t address, const void* src, uint64_t size);
  MaybeFault fill(uint64_t address, uint8_t value, uint64_t size);

  // Host memory actually allocated (pages touched by writes), for stats.
  uint64_t allocatedBytes() const { return allocatedPages_ * kPageBytes; }

 private:
  uint8_t* pageForWrite(uint64_t page);

  isa::MemorySpace space_;
  uint64_t capacity_;
  int core_;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
  uint64_t allocatedPages_ = 0;
};

// Copies between two memories (or within one; overlapping ranges behave as if
// the source were read completely before the destination is written).
MaybeFault copyBytes(const SparseMemory& src, uint64_t srcAddress, SparseMemory& dst,
                     uint64_t dstAddress, uint64_t size);

}  // namespace tpusim::sim::mem
