// Little-endian bit fields in a byte array: bit i of a bundle is bit (i % 8)
// of byte i / 8. Shared by the encoder and the decoder.
#pragma once

#include <cstdint>

namespace tpusim::isa::bits {

inline uint64_t get(const uint8_t* bytes, int pos, int width) {
  // Byte at a time: the decoder runs this for every field of every bundle.
  uint64_t v = 0;
  int done = 0;
  while (done < width) {
    int b = pos + done, shift = b & 7, take = 8 - shift;
    if (take > width - done) take = width - done;
    uint64_t chunk = (uint64_t(bytes[b >> 3]) >> shift) & ((1u << take) - 1);
    v |= chunk << done;
    done += take;
  }
  return v;
}

inline void set(uint8_t* bytes, int pos, int width, uint64_t value) {
  for (int i = 0; i < width; ++i) {
    int b = pos + i;
    uint8_t mask = uint8_t(1u << (b & 7));
    if ((value >> i) & 1u)
      bytes[b >> 3] |= mask;
    else
      bytes[b >> 3] &= uint8_t(~mask);
  }
}

}  // namespace tpusim::isa::bits
