#include "sim/vpu/VpuSemantics.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "isa/support/Numerics.h"

namespace tpusim::sim {
namespace {

using isa::Opcode;
constexpr int kElems = isa::kSublanes * isa::kLanes;

// f32 results: host float arithmetic is IEEE with round-to-nearest-even and
// keeps subnormals; any NaN result becomes the canonical NaN.
inline uint32_t f32Result(float f) { return std::isnan(f) ? kCanonicalNanBits : bitsOf(f); }

template <typename Fn>
void mapF32(const VregData& a, const VregData& b, VregData& d, Fn fn) {
  for (int i = 0; i < kElems; ++i) d[i] = f32Result(fn(floatOf(a[i]), floatOf(b[i])));
}
template <typename Fn>
void mapF32Unary(const VregData& a, VregData& d, Fn fn) {
  for (int i = 0; i < kElems; ++i) d[i] = f32Result(fn(floatOf(a[i])));
}
template <typename Fn>
void mapS32(const VregData& a, const VregData& b, VregData& d, Fn fn) {
  for (int i = 0; i < kElems; ++i) d[i] = uint32_t(fn(int32_t(a[i]), int32_t(b[i])));
}
template <typename Fn>
void mapBits(const VregData& a, VregData& d, Fn fn) {
  for (int i = 0; i < kElems; ++i) d[i] = fn(a[i]);
}
template <typename Fn>
void mapBits2(const VregData& a, const VregData& b, VregData& d, Fn fn) {
  for (int i = 0; i < kElems; ++i) d[i] = fn(a[i], b[i]);
}
template <typename Fn>
void compareF32(const VregData& a, const VregData& b, MaskData& m, Fn fn) {
  m.fill(0);
  for (int i = 0; i < kElems; ++i)
    if (fn(floatOf(a[i]), floatOf(b[i]))) m[i >> 6] |= uint64_t(1) << (i & 63);
}
template <typename Fn>
void compareS32(const VregData& a, const VregData& b, MaskData& m, Fn fn) {
  m.fill(0);
  for (int i = 0; i < kElems; ++i)
    if (fn(int32_t(a[i]), int32_t(b[i]))) m[i >> 6] |= uint64_t(1) << (i & 63);
}

// Wrapping s32 arithmetic without signed-overflow UB.
inline int32_t wrapAdd(int32_t x, int32_t y) { return int32_t(uint32_t(x) + uint32_t(y)); }
inline int32_t wrapSub(int32_t x, int32_t y) { return int32_t(uint32_t(x) - uint32_t(y)); }
inline int32_t wrapMul(int32_t x, int32_t y) { return int32_t(uint32_t(x) * uint32_t(y)); }

// f32 max/min: NaN if either input is NaN (then canonicalised by f32Result).
inline float maxF32(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  return x > y ? x : (y > x ? y : (std::signbit(x) ? y : x));  // max(+0, -0) = +0
}
inline float minF32(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  return x < y ? x : (y < x ? y : (std::signbit(x) ? x : y));  // min(+0, -0) = -0
}

// f32 -> s32: toward zero, saturating, NaN -> 0.
inline uint32_t f32ToS32(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return uint32_t(std::numeric_limits<int32_t>::max());
  if (f < -2147483648.0f) return uint32_t(std::numeric_limits<int32_t>::min());
  return uint32_t(int32_t(f));
}

}  // namespace

bool vectorAluWritesMask(Opcode op) {
  const isa::OpcodeInfo& info = isa::opcodeInfo(op);
  return info.slot == isa::SlotKind::VectorAlu && info.numOperands > 0 &&
         info.operands[0] == isa::OperandKind::MDst;
}

bool executeVectorAlu(Opcode op, const VpuInputs& in, VregData& d, MaskData& m) {
  const VregData* a = in.a;
  const VregData* b = in.b;
  switch (op) {
    // ---- f32
    case Opcode::VAddF32:
      mapF32(*a, *b, d, [](float x, float y) { return x + y; });
      return true;
    case Opcode::VSubF32:
      mapF32(*a, *b, d, [](float x, float y) { return x - y; });
      return true;
    case Opcode::VMulF32:
      mapF32(*a, *b, d, [](float x, float y) { return x * y; });
      return true;
    case Opcode::VMaxF32:
      mapF32(*a, *b, d, maxF32);
      return true;
    case Opcode::VMinF32:
      mapF32(*a, *b, d, minF32);
      return true;
    case Opcode::VAbsF32:
      mapBits(*a, d, [](uint32_t x) { return x & 0x7FFFFFFFu; });
      return true;
    case Opcode::VNegF32:
      mapBits(*a, d, [](uint32_t x) { return x ^ 0x80000000u; });
      return true;
    // ---- transcendental (host C library on float)
    case Opcode::VExpF32:
      mapF32Unary(*a, d, [](float x) { return std::exp(x); });
      return true;
    case Opcode::VLogF32:
      mapF32Unary(*a, d, [](float x) { return std::log(x); });
      return true;
    case Opcode::VRsqrtF32:
      mapF32Unary(*a, d, [](float x) { return 1.0f / std::sqrt(x); });
      return true;
    case Opcode::VRcpF32:
      mapF32Unary(*a, d, [](float x) { return 1.0f / x; });
      return true;
    case Opcode::VTanhF32:
      mapF32Unary(*a, d, [](float x) { return std::tanh(x); });
      return true;
    case Opcode::VSqrtF32:
      mapF32Unary(*a, d, [](float x) { return std::sqrt(x); });
      return true;
    // ---- s32 and bitwise
    case Opcode::VAddS32:
      mapS32(*a, *b, d, wrapAdd);
      return true;
    case Opcode::VSubS32:
      mapS32(*a, *b, d, wrapSub);
      return true;
    case Opcode::VMulS32:
      mapS32(*a, *b, d, wrapMul);
      return true;
    case Opcode::VMaxS32:
      mapS32(*a, *b, d, [](int32_t x, int32_t y) { return x > y ? x : y; });
      return true;
    case Opcode::VMinS32:
      mapS32(*a, *b, d, [](int32_t x, int32_t y) { return x < y ? x : y; });
      return true;
    case Opcode::VAbsS32:
      mapBits(*a, d, [](uint32_t x) { return int32_t(x) < 0 ? 0u - x : x; });
      return true;
    case Opcode::VNegS32:
      mapBits(*a, d, [](uint32_t x) { return 0u - x; });
      return true;
    case Opcode::VAnd:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return x & y; });
      return true;
    case Opcode::VOr:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return x | y; });
      return true;
    case Opcode::VXor:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return x ^ y; });
      return true;
    case Opcode::VShl:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return x << (y & 31); });
      return true;
    case Opcode::VShr:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return x >> (y & 31); });
      return true;
    case Opcode::VSra:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return uint32_t(int32_t(x) >> (y & 31)); });
      return true;
    case Opcode::VMov:
      d = *a;
      return true;
    // ---- compares into masks
    case Opcode::VCmpEqF32:
      compareF32(*a, *b, m, [](float x, float y) { return x == y; });
      return true;
    case Opcode::VCmpNeF32:
      compareF32(*a, *b, m, [](float x, float y) { return x != y; });
      return true;
    case Opcode::VCmpLtF32:
      compareF32(*a, *b, m, [](float x, float y) { return x < y; });
      return true;
    case Opcode::VCmpLeF32:
      compareF32(*a, *b, m, [](float x, float y) { return x <= y; });
      return true;
    case Opcode::VCmpGtF32:
      compareF32(*a, *b, m, [](float x, float y) { return x > y; });
      return true;
    case Opcode::VCmpGeF32:
      compareF32(*a, *b, m, [](float x, float y) { return x >= y; });
      return true;
    case Opcode::VCmpEqS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x == y; });
      return true;
    case Opcode::VCmpNeS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x != y; });
      return true;
    case Opcode::VCmpLtS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x < y; });
      return true;
    case Opcode::VCmpLeS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x <= y; });
      return true;
    case Opcode::VCmpGtS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x > y; });
      return true;
    case Opcode::VCmpGeS32:
      compareS32(*a, *b, m, [](int32_t x, int32_t y) { return x >= y; });
      return true;
    // ---- select and mask logic
    case Opcode::VSel:
      for (int i = 0; i < kElems; ++i) d[i] = maskBit(*in.ma, i) ? (*a)[i] : (*b)[i];
      return true;
    case Opcode::MAnd:
      for (int w = 0; w < kMaskWords; ++w) m[w] = (*in.ma)[w] & (*in.mb)[w];
      return true;
    case Opcode::MOr:
      for (int w = 0; w < kMaskWords; ++w) m[w] = (*in.ma)[w] | (*in.mb)[w];
      return true;
    case Opcode::MNot:
      for (int w = 0; w < kMaskWords; ++w) m[w] = ~(*in.ma)[w];
      return true;
    // ---- converts and packing
    case Opcode::VCvtF32S32:
      mapBits(*a, d, [](uint32_t x) { return bitsOf(float(int32_t(x))); });
      return true;
    case Opcode::VCvtS32F32:
      mapBits(*a, d, [](uint32_t x) { return f32ToS32(floatOf(x)); });
      return true;
    case Opcode::VCvtBf16F32:
      mapBits(*a, d, [](uint32_t x) { return uint32_t(f32ToBf16Bits(floatOf(x))); });
      return true;
    case Opcode::VCvtF32Bf16:
      mapBits(*a, d, [](uint32_t x) { return bitsOf(bf16BitsToF32(uint16_t(x & 0xFFFF))); });
      return true;
    case Opcode::VRndBf16F32:
      mapBits(*a, d, [](uint32_t x) { return uint32_t(f32ToBf16Bits(floatOf(x))) << 16; });
      return true;
    case Opcode::VCvtS8S32:
      mapBits(*a, d, [](uint32_t x) {
        int32_t v = int32_t(x);
        return uint32_t(v < -128 ? -128 : (v > 127 ? 127 : v));
      });
      return true;
    case Opcode::VPackB16:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return (y & 0xFFFF) << 16 | (x & 0xFFFF); });
      return true;
    case Opcode::VPackB8:
      mapBits2(*a, *b, d, [](uint32_t x, uint32_t y) { return (y & 0xFF) << 8 | (x & 0xFF); });
      return true;
    case Opcode::VUnpackB16: {
      int shift = (in.imm & 1) * 16;
      mapBits(*a, d, [shift](uint32_t x) { return (x >> shift) & 0xFFFF; });
      return true;
    }
    case Opcode::VUnpackS8: {
      int shift = (in.imm & 3) * 8;
      mapBits(*a, d, [shift](uint32_t x) { return uint32_t(int32_t(int8_t(x >> shift))); });
      return true;
    }
    // ---- broadcast and iota
    case Opcode::VBcast:
      d.fill(in.scalar);
      return true;
    case Opcode::VImm:
      d.fill(in.imm);
      return true;
    case Opcode::VIotaLane:
      for (int i = 0; i < kElems; ++i) d[i] = uint32_t(i % isa::kLanes);
      return true;
    case Opcode::VIotaSub:
      for (int i = 0; i < kElems; ++i) d[i] = uint32_t(i / isa::kLanes);
      return true;
    default:
      return false;
  }
}

}  // namespace tpusim::sim
