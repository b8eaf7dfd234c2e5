#include "sim/chip/Mt64Blocks.h"

namespace tpusim::sim {
namespace {
constexpr uint64_t kUpper = ~uint64_t(0) << 31, kLower = ~kUpper;
constexpr uint64_t kMatrix = 0xb5026f5aa96619e9ull;

inline uint64_t twist(uint64_t cur, uint64_t next, uint64_t far) {
  const uint64_t y = (cur & kUpper) | (next & kLower);
  return far ^ (y >> 1) ^ ((0 - (y & 1)) & kMatrix);
}
}  // namespace

Mt64Blocks::Mt64Blocks(uint64_t seed) {
  state_[0] = seed;
  for (size_t i = 1; i < kWords; ++i)
    state_[i] = 6364136223846793005ull * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
}

void Mt64Blocks::refill() {
  // The three ranges of the standard's in-place twist: the first half reads
  // words not yet replaced, the second half words the first half replaced.
  for (size_t k = 0; k < kWords - kShift; ++k)
    state_[k] = twist(state_[k], state_[k + 1], state_[k + kShift]);
  for (size_t k = kWords - kShift; k < kWords - 1; ++k)
    state_[k] = twist(state_[k], state_[k + 1], state_[k + kShift - kWords]);
  state_[kWords - 1] = twist(state_[kWords - 1], state_[0], state_[kShift - 1]);
  for (size_t k = 0; k < kWords; ++k) {
    uint64_t z = state_[k];
    z ^= (z >> 29) & 0x5555555555555555ull;
    z ^= (z << 17) & 0x71d67fffeda60000ull;
    z ^= (z << 37) & 0xfff7eee000000000ull;
    z ^= z >> 43;
    words_[k] = z;
  }
  pos_ = 0;
}

}  // namespace tpusim::sim
