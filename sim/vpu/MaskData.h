// The value of one vector mask register: 8 sublanes x 128 lanes of one bit,
// bit [s][l] at index s * 128 + l, packed in 64-bit words.
#pragma once

#include <array>
#include <cstdint>

#include "isa/Isa.h"

namespace tpusim::sim {

constexpr int kMaskWords = isa::kSublanes * isa::kLanes / 64;
using MaskData = std::array<uint64_t, kMaskWords>;

inline bool maskBit(const MaskData& m, int index) { return (m[index >> 6] >> (index & 63)) & 1u; }
inline void setMaskBit(MaskData& m, int index, bool value) {
  uint64_t bit = uint64_t(1) << (index & 63);
  m[index >> 6] = value ? (m[index >> 6] | bit) : (m[index >> 6] & ~bit);
}

}  // namespace tpusim::sim
