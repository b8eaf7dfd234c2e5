// Little-endian bit fields in a byte array: bit i of a bundle is bit (i % 8)
// of byte i / 8. Shared by the encoder and the decoder.
#pragma once

#include <cstdint>

namespace tpusim::isa::bits {

inline uint64_t get(const uint8_t* bytes, int pos, int width) {
  // Whole bytes (the decoder runs this for every field of every bundle): the
  // 1-9 bytes the field touches, little-endian, shifted down. width <= 64.
  if (width <= 0) return 0;
  const uint8_t* p = bytes + (pos >> 3);
  const int shift = pos & 7, n = (shift + width + 7) >> 3;
  uint64_t v = 0;
  for (int i = 0; i < n && i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
  v >>= shift;
  if (n > 8) v |= uint64_t(p[8]) << (64 - shift);  // shift > 0 here
  return width >= 64 ? v : v & ((uint64_t(1) << width) - 1);
}

// Whether bits [pos, pos + width) are all zero, a byte at a time.
inline bool allZero(const uint8_t* bytes, int pos, int width) {
  if (width <= 0) return true;
  const int first = pos >> 3, last = (pos + width - 1) >> 3;
  if (first == last) return get(bytes, pos, width) == 0;
  uint8_t any = uint8_t(bytes[first] >> (pos & 7));
  for (int i = first + 1; i < last; ++i) any |= bytes[i];
  const int tail = ((pos + width - 1) & 7) + 1;  // bits of the last byte in the range
  return (any | (bytes[last] & ((1u << tail) - 1))) == 0;
}

// Sets bits [pos, pos + width) to the low `width` bits of value, a byte (or
// the part of one the field covers) at a time. width <= 64.
inline void set(uint8_t* bytes, int pos, int width, uint64_t value) {
  while (width > 0) {
    const int b = pos >> 3, offset = pos & 7, n = width < 8 - offset ? width : 8 - offset;
    const uint8_t mask = uint8_t(((1u << n) - 1) << offset);
    bytes[b] = uint8_t((bytes[b] & ~mask) | (uint8_t(value << offset) & mask));
    value >>= n;
    pos += n;
    width -= n;
  }
}

}  // namespace tpusim::isa::bits
