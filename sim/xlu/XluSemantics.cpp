#include "sim/xlu/XluSemantics.h"

#include <cmath>

#include "isa/support/Numerics.h"

namespace tpusim::sim {
namespace {

using isa::kLanes;
using isa::kSublanes;
using isa::Opcode;

// The reduction tree of isa/README.md: for d = 64, 32, ..., 1:
// x[l] = combine(x[l], x[l + d]) for l < d; the result x[0] goes to every lane.
template <typename T, typename Combine>
void reduceLanes(const VregData& a, VregData& d, Combine combine) {
  for (int s = 0; s < kSublanes; ++s) {
    T x[kLanes];
    for (int l = 0; l < kLanes; ++l) x[l] = T(at(a, s, l));
    for (int width = kLanes / 2; width >= 1; width /= 2)
      for (int l = 0; l < width; ++l) x[l] = combine(x[l], x[l + width]);
    for (int l = 0; l < kLanes; ++l) at(d, s, l) = uint32_t(x[0]);
  }
}

inline uint32_t addF32(uint32_t x, uint32_t y) {
  float r = floatOf(x) + floatOf(y);
  return std::isnan(r) ? kCanonicalNanBits : bitsOf(r);
}
inline uint32_t maxF32(uint32_t x, uint32_t y) {
  float fx = floatOf(x), fy = floatOf(y);
  if (std::isnan(fx) || std::isnan(fy)) return kCanonicalNanBits;
  if (fx == fy) return std::signbit(fx) ? y : x;  // max(+0, -0) = +0
  return fx > fy ? x : y;
}

}  // namespace

bool executeXluPermuteOrReduce(Opcode op, const VregData& a, const VregData& b, uint32_t scalar,
                               uint32_t imm, VregData& d) {
  switch (op) {
    case Opcode::XluRotLane: {
      int shift = int(scalar & (kLanes - 1));  // (l + sa) mod 128 for any 32-bit sa
      for (int s = 0; s < kSublanes; ++s)
        for (int l = 0; l < kLanes; ++l) at(d, s, (l + shift) & (kLanes - 1)) = at(a, s, l);
      return true;
    }
    case Opcode::XluRotSub: {
      int shift = int(imm % kSublanes);
      for (int s = 0; s < kSublanes; ++s)
        for (int l = 0; l < kLanes; ++l) at(d, (s + shift) % kSublanes, l) = at(a, s, l);
      return true;
    }
    case Opcode::XluPerm:
      for (int s = 0; s < kSublanes; ++s)
        for (int l = 0; l < kLanes; ++l) at(d, s, l) = at(a, s, at(b, s, l) & (kLanes - 1));
      return true;
    case Opcode::XluSumF32:
      reduceLanes<uint32_t>(a, d, addF32);
      return true;
    case Opcode::XluMaxF32:
      reduceLanes<uint32_t>(a, d, maxF32);
      return true;
    case Opcode::XluSumS32:
      reduceLanes<uint32_t>(a, d, [](uint32_t x, uint32_t y) { return x + y; });
      return true;
    case Opcode::XluMaxS32:
      reduceLanes<int32_t>(a, d, [](int32_t x, int32_t y) { return x > y ? x : y; });
      return true;
    default:
      return false;
  }
}

bool TransposeUnit::push(const VregData& rows, std::string* error) {
  if (pushed_ == kPushes) {
    *error = "transpose push into a full block (pop all 16 row groups of the previous block first)";
    return false;
  }
  if (keepData_)
    for (int s = 0; s < kSublanes; ++s)
      for (int l = 0; l < kLanes; ++l)
        block_[(pushed_ * kSublanes + s) * kLanes + l] = at(rows, s, l);
  ++pushed_;
  return true;
}

bool TransposeUnit::pop(VregData& rows, std::string* error) {
  if (pushed_ < kPushes) {
    *error =
        "transpose pop before the block is complete (" + std::to_string(pushed_) + " of 16 pushes)";
    return false;
  }
  // Row 8q + s of the transpose is column 8q + s of the block.
  if (keepData_)
    for (int s = 0; s < kSublanes; ++s)
      for (int l = 0; l < kLanes; ++l)
        at(rows, s, l) = block_[l * kLanes + popped_ * kSublanes + s];
  if (++popped_ == kPushes) pushed_ = popped_ = 0;
  return true;
}

}  // namespace tpusim::sim
