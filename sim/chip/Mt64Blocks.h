// The std::mt19937_64 sequence, 312 words at a time. The standard engine
// twists and tempers one word per call through a function call; seeded random
// inputs of a 7B layer draw hundreds of millions of words, and that call was
// a fifth of a functional run. Here the twist and the tempering are plain
// loops over the whole state the compiler vectorizes, and the words are read
// inline. Same seeding, same twist, same tempering: the same words as
// std::mt19937_64(seed) (RandomInputsTest compares them).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tpusim::sim {

class Mt64Blocks {
 public:
  using result_type = uint64_t;
  static constexpr size_t kBlockWords = 312;  // take() never returns more
  explicit Mt64Blocks(uint64_t seed);
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t(0); }
  uint64_t operator()() {
    if (pos_ == kWords) refill();
    return words_[pos_++];
  }
  // The next min(want, words left in this block) words, at least one; the
  // caller consumes them all.
  const uint64_t* take(size_t want, size_t* count) {
    if (pos_ == kWords) refill();
    size_t n = kWords - pos_ < want ? kWords - pos_ : want;
    const uint64_t* p = words_ + pos_;
    pos_ += n;
    *count = n;
    return p;
  }

 private:
  static constexpr size_t kWords = kBlockWords, kShift = 156;
  void refill();

  uint64_t state_[kWords];
  uint64_t words_[kWords];
  size_t pos_ = kWords;
};

}  // namespace tpusim::sim
