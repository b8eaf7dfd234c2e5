// HBM address interleaving: part of the machine model, read by the HBM model
// (sim/hbm) and by the dot tiler's HBM pricing (kernels/tiling/HbmRuns.h). A byte address is split
// into a burst index (address / burst_bytes) and the burst index into six mixed-radix digits in the
// order the mapping string gives, most significant first, e.g. "ro-ba-co-bg-pc-ch": consecutive
// bursts go to consecutive channels, then pseudo-channels, then bank groups, then columns of one
// row, then banks, then rows. Radices: ro = rows, ba = banks_per_group, bg = bank_groups, ch =
// channels, pc = pseudo_channels, co = row_bytes / burst_bytes. Addresses beyond the geometry wrap
// (the functional memory rejects them first).
//
// address_hash "xor_row_bank" then permutes banks per row, as real controllers
// hash addresses (permutation-based page interleaving, Zhang, Zhu and Zhang,
// MICRO 2000): the (bank group, bank) pair, read as one number bg x
// banks_per_group + ba, is XORed with the row folded to that many bits (the
// XOR of its successive chunks). Within a row nothing moves, so a stream keeps
// its row hits, but streams whose addresses differ only in row bits (buffers a
// multiple of a row stride apart) use different banks instead of closing each
// other's rows. XOR with a function of the row is its own inverse, so compose
// undoes it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "isa/target/HbmConfig.h"

namespace tpusim::target {

struct BurstLocation {
  uint32_t channel = 0, pseudoChannel = 0, bankGroup = 0, bank = 0;  // bank within its group
  uint32_t row = 0, column = 0;                                      // column in bursts
};

class AddressMap {
 public:
  // Throws std::invalid_argument naming the field when the mapping is malformed.
  explicit AddressMap(const HbmConfig& config);

  BurstLocation locate(uint64_t byteAddress) const {
    BurstLocation loc;
    locate(byteAddress, &loc);
    return loc;
  }
  // The same, written into *out field by field.
  void locate(uint64_t byteAddress, BurstLocation* out) const;
  // The inverse: the byte address of the first byte of that burst.
  uint64_t compose(const BurstLocation& location) const;
  uint64_t burstBytes() const { return burstBytes_; }
  // How many consecutive bursts (from a multiple of it) differ only in their
  // channel: channels when ch is the least significant digit, else 1. The
  // bank hash does not depend on the channel, so they share bank and row.
  uint64_t channelLine() const { return channelLine_; }
  // Moves `location` to the next burst (burst index + 1, wrapping like
  // locate): locate(a + burstBytes()) == next(locate(a)), without divisions.
  void next(BurstLocation& location) const {
    if (hashBanks_) permuteBanks(location);  // back to the plain digits
    for (int i = 5; i >= 0; --i) {           // least significant digit first
      uint32_t& v = field(location, order_[i]);
      if (uint64_t(++v) < radix_[order_[i]]) break;
      v = 0;
    }
    if (hashBanks_) permuteBanks(location);
  }

 private:
  // XORs the (bank group, bank) pair with the folded row: the hash and its inverse.
  void permuteBanks(BurstLocation& l) const {
    uint32_t fold = 0;
    for (uint32_t r = l.row; r != 0; r >>= bankBits_) fold ^= r & bankMask_;
    uint32_t both = ((l.bankGroup << bankShift_) | l.bank) ^ fold;
    l.bankGroup = both >> bankShift_;
    l.bank = both & ((1u << bankShift_) - 1);
  }
  enum Digit { Ro, Ba, Bg, Ch, Pc, Co };
  static uint32_t& field(BurstLocation& l, Digit d) {
    switch (d) {
      case Ro:
        return l.row;
      case Ba:
        return l.bank;
      case Bg:
        return l.bankGroup;
      case Ch:
        return l.channel;
      case Pc:
        return l.pseudoChannel;
      case Co:
        break;
    }
    return l.column;
  }
  std::array<Digit, 6> order_{};  // most significant first
  std::array<uint64_t, 6> radix_{};
  uint64_t burstBytes_;
  // When every radix and burst_bytes are powers of two (every preset), digits
  // are bit fields: shifts and masks instead of divisions.
  bool powerOfTwo_ = false;
  std::array<uint32_t, 6> shift_{};  // per digit, from the least significant end
  uint32_t burstShift_ = 0;
  uint64_t channelLine_ = 1;
  bool hashBanks_ = false;                                // address_hash "xor_row_bank"
  uint32_t bankShift_ = 0, bankBits_ = 0, bankMask_ = 0;  // log2 banks_per_group, log2 bg x ba
};

}  // namespace tpusim::target
