#include "sim/mem/Smem.h"

namespace tpusim::sim::mem {

MemFault Smem::outOfRange(uint64_t word, bool write) const {
  // Saturate instead of wrapping when reporting an absurd word index as bytes.
  uint64_t address = word > UINT64_MAX / 4 ? UINT64_MAX : word * 4;
  return MemFault{isa::MemorySpace::Smem, bytes_.core(), address, 4, bytes_.capacity(), write};
}

MaybeFault Smem::readWord(uint64_t word, uint32_t* value) const {
  uint8_t b[4];
  if (word >= words()) return outOfRange(word, false);
  if (auto fault = bytes_.read(word * 4, b, 4)) return fault;
  *value = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  return std::nullopt;
}

MaybeFault Smem::writeWord(uint64_t word, uint32_t value) {
  if (word >= words()) return outOfRange(word, true);
  uint8_t b[4] = {uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16), uint8_t(value >> 24)};
  return bytes_.write(word * 4, b, 4);
}

}  // namespace tpusim::sim::mem
