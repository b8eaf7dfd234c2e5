// SMEM: the scalar memory of one core, 32-bit words (the scalar unit indexes
// words; DMA descriptors address it in bytes = word * 4). Words are stored
// little-endian in the byte store so that both views agree.
#pragma once

#include "sim/mem/SparseMemory.h"

namespace tpusim::sim::mem {

class Smem {
 public:
  Smem(uint64_t words, int core) : bytes_(isa::MemorySpace::Smem, words * 4, core) {}

  uint64_t words() const { return bytes_.capacity() / 4; }
  MaybeFault readWord(uint64_t word, uint32_t* value) const;
  MaybeFault writeWord(uint64_t word, uint32_t value);

  SparseMemory& bytes() { return bytes_; }
  const SparseMemory& bytes() const { return bytes_; }

 private:
  MemFault outOfRange(uint64_t word, bool write) const;

  SparseMemory bytes_;
};

}  // namespace tpusim::sim::mem
