#include "sim/mem/SparseMemory.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace tpusim::sim::mem {

SparseMemory::SparseMemory(isa::MemorySpace space, uint64_t capacityBytes, int core)
    : space_(space), capacity_(capacityBytes), core_(core) {
  pages_.resize((capacityBytes + kPageBytes - 1) / kPageBytes);
}

MaybeFault SparseMemory::check(uint64_t address, uint64_t size, bool write) const {
  // Written so that address + size cannot overflow.
  if (address <= capacity_ && size <= capacity_ - address) return std::nullopt;
  return MemFault{space_, core_, address, size, capacity_, write};
}

uint8_t* SparseMemory::pageForWrite(uint64_t page) {
  auto& p = pages_[page];
  if (!p) {
    p.reset(new uint8_t[kPageBytes]());
    ++allocatedPages_;
  }
  return p.get();
}

MaybeFault SparseMemory::read(uint64_t address, void* dst, uint64_t size) const {
  if (auto fault = check(address, size, false)) return fault;
  auto* out = static_cast<uint8_t*>(dst);
  while (size > 0) {
    uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - offset);
    if (const auto& p = pages_[page])
      std::memcpy(out, p.get() + offset, n);
    else
      std::memset(out, 0, n);
    out += n;
    address += n;
    size -= n;
  }
  return std::nullopt;
}

MaybeFault SparseMemory::write(uint64_t address, const void* src, uint64_t size) {
  if (auto fault = check(address, size, true)) return fault;
  auto* in = static_cast<const uint8_t*>(src);
  while (size > 0) {
    uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - offset);
    std::memcpy(pageForWrite(page) + offset, in, n);
    in += n;
    address += n;
    size -= n;
  }
  return std::nullopt;
}

MaybeFault SparseMemory::fill(uint64_t address, uint8_t value, uint64_t size) {
  if (auto fault = check(address, size, true)) return fault;
  while (size > 0) {
    uint64_t page = address / kPageBytes, offset = address % kPageBytes;
    uint64_t n = std::min(size, kPageBytes - offset);
    // Filling an absent page with zeros leaves it absent: it already reads as zero.
    if (value != 0 || pages_[page]) std::memset(pageForWrite(page) + offset, value, n);
    address += n;
    size -= n;
  }
  return std::nullopt;
}

MaybeFault copyBytes(const SparseMemory& src, uint64_t srcAddress, SparseMemory& dst,
                     uint64_t dstAddress, uint64_t size) {
  if (auto fault = src.check(srcAddress, size, false)) return fault;
  if (auto fault = dst.check(dstAddress, size, true)) return fault;
  // Bounce through a bounded buffer: correct for overlap within one chunk, and
  // chunks are walked in the direction that keeps overlapping copies correct.
  constexpr uint64_t kChunk = SparseMemory::kPageBytes;
  std::vector<uint8_t> buffer(std::min(kChunk, size));
  bool backwards = &src == &dst && dstAddress > srcAddress && dstAddress < srcAddress + size;
  uint64_t done = 0;
  while (done < size) {
    uint64_t n = std::min(kChunk, size - done);
    uint64_t offset = backwards ? size - done - n : done;
    src.read(srcAddress + offset, buffer.data(), n);
    dst.write(dstAddress + offset, buffer.data(), n);
    done += n;
  }
  return std::nullopt;
}

}  // namespace tpusim::sim::mem
