// The .tpuprog layout constants and the checksum, shared by the writer
// (ProgramFile.cpp) and the reader (ProgramReader.cpp). Internal to the isa
// library; the format is documented in isa/README.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpusim::isa::tpuprog {

constexpr uint32_t kHeaderSize = 64;
constexpr uint32_t kSectionEntrySize = 24;
constexpr int kChecksumOffset = 24;
constexpr size_t kMaxRank = 16;
constexpr size_t kMaxFileSize = size_t(1) << 32;

enum SectionType : uint32_t {
  kMeta = 1,
  kCode,
  kData,
  kBuffers,
  kSymbols,
  kDebugMap,
  kCosts,
  kNumSectionTypes = kCosts,  // every file has these, in this order
  // Optional, after the others (format 1.1): the entry's calling convention.
  kSignature,
  kMaxSectionType = kSignature
};

// The signature section's own layout version (its first field).
constexpr uint16_t kSignatureVersion = 1;
// Tuple nesting a signature records (index paths are at most this deep).
constexpr size_t kMaxTupleDepth = 32;

inline const char* sectionName(uint32_t type) {
  static const char* names[] = {"?",       "meta",      "code",  "data",     "buffers",
                                "symbols", "debug-map", "costs", "signature"};
  return type <= kMaxSectionType ? names[type] : "?";
}

inline uint64_t fnv1a64(const uint8_t* data, size_t size, uint64_t h = 0xcbf29ce484222325ull) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  size_t i = 0;
  // The same byte-serial hash, eight bytes a loop step (a parse hashes the
  // whole file: fewer loop steps per byte).
  for (; i + 8 <= size; i += 8) {
    h = (h ^ data[i]) * kPrime;
    h = (h ^ data[i + 1]) * kPrime;
    h = (h ^ data[i + 2]) * kPrime;
    h = (h ^ data[i + 3]) * kPrime;
    h = (h ^ data[i + 4]) * kPrime;
    h = (h ^ data[i + 5]) * kPrime;
    h = (h ^ data[i + 6]) * kPrime;
    h = (h ^ data[i + 7]) * kPrime;
  }
  for (; i < size; ++i) h = (h ^ data[i]) * kPrime;
  return h;
}

// The checksum of an image: FNV-1a 64 with the checksum field read as zeros.
inline uint64_t imageChecksum(const uint8_t* data, size_t size) {
  static const uint8_t zeros[8] = {};
  uint64_t h = fnv1a64(data, kChecksumOffset);
  h = fnv1a64(zeros, 8, h);
  return fnv1a64(data + kChecksumOffset + 8, size - kChecksumOffset - 8, h);
}

}  // namespace tpusim::isa::tpuprog
