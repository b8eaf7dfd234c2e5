#include "isa/target/HbmAddressMap.h"

#include <stdexcept>

namespace tpusim::target {

AddressMap::AddressMap(const HbmConfig& c) : burstBytes_(uint64_t(c.burst_bytes)) {
  std::vector<std::string> digits = c.mappingDigits();
  if (digits.empty())
    throw std::invalid_argument("hbm.address_mapping: \"" + c.address_mapping +
                                "\" must name ro, ba, bg, ch, pc, co once each, separated by '-'");
  for (int i = 0; i < 6; ++i) {
    const std::string& d = digits[i];
    order_[i] = d == "ro"   ? Ro
                : d == "ba" ? Ba
                : d == "bg" ? Bg
                : d == "ch" ? Ch
                : d == "pc" ? Pc
                            : Co;
  }
  radix_[Ro] = uint64_t(c.rows);
  radix_[Ba] = uint64_t(c.banks_per_group);
  radix_[Bg] = uint64_t(c.bank_groups);
  radix_[Ch] = uint64_t(c.channels);
  radix_[Pc] = uint64_t(c.pseudo_channels);
  radix_[Co] = uint64_t(c.columnsPerRow());
  if (order_[5] == Ch) channelLine_ = radix_[Ch];
  auto isPow2 = [](uint64_t x) { return x != 0 && (x & (x - 1)) == 0; };
  auto log2 = [](uint64_t x) {
    uint32_t n = 0;
    while ((uint64_t(1) << n) < x) ++n;
    return n;
  };
  if (c.address_hash == "xor_row_bank") {
    if (!isPow2(radix_[Ba]) || !isPow2(radix_[Bg]))
      throw std::invalid_argument(
          "hbm.address_hash: \"xor_row_bank\" needs power-of-two bank_groups and banks_per_group");
    hashBanks_ = true;
    bankShift_ = log2(radix_[Ba]);
    bankBits_ = bankShift_ + log2(radix_[Bg]);
    bankMask_ = (1u << bankBits_) - 1;
    hashBanks_ = bankBits_ > 0;
  } else if (c.address_hash != "none") {
    throw std::invalid_argument("hbm.address_hash: \"" + c.address_hash +
                                "\" must be \"none\" or \"xor_row_bank\"");
  }
  powerOfTwo_ = isPow2(burstBytes_);
  for (uint64_t r : radix_) powerOfTwo_ = powerOfTwo_ && isPow2(r);
  if (powerOfTwo_) {
    burstShift_ = log2(burstBytes_);
    uint32_t shift = 0;
    for (int i = 5; i >= 0; --i) {
      shift_[order_[i]] = shift;
      shift += log2(radix_[order_[i]]);
    }
  }
}

void AddressMap::locate(uint64_t byteAddress, BurstLocation* out) const {
  std::array<uint64_t, 6> value{};
  if (powerOfTwo_) {
    uint64_t index = byteAddress >> burstShift_;
    for (int d = 0; d < 6; ++d) value[d] = (index >> shift_[d]) & (radix_[d] - 1);
  } else {
    uint64_t index = byteAddress / burstBytes_;
    for (int i = 5; i >= 0; --i) {  // least significant digit first
      Digit d = order_[i];
      value[d] = index % radix_[d];
      index /= radix_[d];
    }
  }
  BurstLocation& loc = *out;
  loc.channel = uint32_t(value[Ch]);
  loc.pseudoChannel = uint32_t(value[Pc]);
  loc.bankGroup = uint32_t(value[Bg]);
  loc.bank = uint32_t(value[Ba]);
  loc.row = uint32_t(value[Ro]);
  loc.column = uint32_t(value[Co]);
  if (hashBanks_) permuteBanks(loc);
}

}  // namespace tpusim::target

namespace tpusim::target {

uint64_t AddressMap::compose(const BurstLocation& hashed) const {
  BurstLocation loc = hashed;
  if (hashBanks_) permuteBanks(loc);
  std::array<uint64_t, 6> value{};
  value[Ro] = loc.row;
  value[Ba] = loc.bank;
  value[Bg] = loc.bankGroup;
  value[Ch] = loc.channel;
  value[Pc] = loc.pseudoChannel;
  value[Co] = loc.column;
  uint64_t index = 0;
  for (int i = 0; i < 6; ++i) index = index * radix_[order_[i]] + value[order_[i]];
  return index * burstBytes_;
}

}  // namespace tpusim::target
