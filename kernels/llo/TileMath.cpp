#include "kernels/llo/TileMath.h"

#include <cmath>
#include <limits>

#include "isa/support/Numerics.h"

namespace tpusim::kernels::llo {
namespace {

float f(uint32_t u) { return floatOf(u); }

float maxF(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  return x > y ? x : (y > x ? y : (std::signbit(x) ? y : x));
}
float minF(float x, float y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<float>::quiet_NaN();
  return x < y ? x : (y < x ? y : (std::signbit(x) ? x : y));
}
uint32_t f32ToS32(float v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483648.0f) return uint32_t(std::numeric_limits<int32_t>::max());
  if (v < -2147483648.0f) return uint32_t(std::numeric_limits<int32_t>::min());
  return uint32_t(int32_t(v));
}

}  // namespace

uint32_t f32ResultBits(float v) { return std::isnan(v) ? kCanonicalNanBits : bitsOf(v); }
float bf16WordToF32(uint32_t word) { return bf16BitsToF32(uint16_t(word & 0xFFFF)); }
int32_t s8WordToS32(uint32_t word) { return int32_t(int8_t(uint8_t(word & 0xFF))); }

TileData tileBinary(VecBin k, DType d, const TileData& a, const TileData& b) {
  TileData r{};
  bool fl = d == DType::F32;
  for (int i = 0; i < kTileElems; ++i) {
    uint32_t x = a[i], y = b[i];
    switch (k) {
      case VecBin::Add:
        r[i] = fl ? f32ResultBits(f(x) + f(y)) : x + y;
        break;
      case VecBin::Sub:
        r[i] = fl ? f32ResultBits(f(x) - f(y)) : x - y;
        break;
      case VecBin::Mul:
        r[i] = fl ? f32ResultBits(f(x) * f(y)) : x * y;
        break;
      case VecBin::Max:
        r[i] = fl ? f32ResultBits(maxF(f(x), f(y))) : (int32_t(x) > int32_t(y) ? x : y);
        break;
      case VecBin::Min:
        r[i] = fl ? f32ResultBits(minF(f(x), f(y))) : (int32_t(x) < int32_t(y) ? x : y);
        break;
      case VecBin::And:
        r[i] = x & y;
        break;
      case VecBin::Or:
        r[i] = x | y;
        break;
      case VecBin::Xor:
        r[i] = x ^ y;
        break;
      case VecBin::Shl:
        r[i] = x << (y & 31);
        break;
      case VecBin::Shr:
        r[i] = x >> (y & 31);
        break;
      case VecBin::Sra:
        r[i] = uint32_t(int32_t(x) >> (y & 31));
        break;
    }
  }
  return r;
}

TileData tileUnary(VecUn k, DType d, const TileData& a) {
  TileData r{};
  for (int i = 0; i < kTileElems; ++i) {
    uint32_t x = a[i];
    if (d == DType::S32) {
      r[i] = k == VecUn::Abs ? (int32_t(x) < 0 ? 0u - x : x) : 0u - x;
      continue;
    }
    switch (k) {
      case VecUn::Abs:
        r[i] = x & 0x7FFFFFFFu;
        break;
      case VecUn::Neg:
        r[i] = x ^ 0x80000000u;
        break;
      case VecUn::Exp:
        r[i] = f32ResultBits(std::exp(f(x)));
        break;
      case VecUn::Log:
        r[i] = f32ResultBits(std::log(f(x)));
        break;
      case VecUn::Rsqrt:
        r[i] = f32ResultBits(1.0f / std::sqrt(f(x)));
        break;
      case VecUn::Rcp:
        r[i] = f32ResultBits(1.0f / f(x));
        break;
      case VecUn::Tanh:
        r[i] = f32ResultBits(std::tanh(f(x)));
        break;
      case VecUn::Sqrt:
        r[i] = f32ResultBits(std::sqrt(f(x)));
        break;
      case VecUn::RoundBf16:
        r[i] = uint32_t(f32ToBf16Bits(f(x))) << 16;
        break;
    }
  }
  return r;
}

MaskData tileCompare(Cmp k, DType d, const TileData& a, const TileData& b) {
  MaskData m;
  for (int i = 0; i < kTileElems; ++i) {
    bool v = false;
    if (d == DType::F32) {
      float x = f(a[i]), y = f(b[i]);
      switch (k) {
        case Cmp::Eq:
          v = x == y;
          break;
        case Cmp::Ne:
          v = x != y;
          break;
        case Cmp::Lt:
          v = x < y;
          break;
        case Cmp::Le:
          v = x <= y;
          break;
        case Cmp::Gt:
          v = x > y;
          break;
        case Cmp::Ge:
          v = x >= y;
          break;
      }
    } else {
      int32_t x = int32_t(a[i]), y = int32_t(b[i]);
      switch (k) {
        case Cmp::Eq:
          v = x == y;
          break;
        case Cmp::Ne:
          v = x != y;
          break;
        case Cmp::Lt:
          v = x < y;
          break;
        case Cmp::Le:
          v = x <= y;
          break;
        case Cmp::Gt:
          v = x > y;
          break;
        case Cmp::Ge:
          v = x >= y;
          break;
      }
    }
    m[i] = v;
  }
  return m;
}

TileData tileCast(DType from, DType to, const TileData& a) {
  TileData r{};
  for (int i = 0; i < kTileElems; ++i) {
    uint32_t x = a[i];
    if (from == DType::F32 && to == DType::S32)
      r[i] = f32ToS32(f(x));
    else if (from == DType::S32 && to == DType::F32)
      r[i] = bitsOf(float(int32_t(x)));
    else if (from == DType::F32 && to == DType::Bf16)
      r[i] = f32ToBf16Bits(f(x));
    else if (from == DType::Bf16 && to == DType::F32)
      r[i] = bitsOf(bf16WordToF32(x));
    else if (from == DType::S32 && to == DType::S8) {
      int32_t v = int32_t(x);
      r[i] = uint32_t(v < -128 ? -128 : (v > 127 ? 127 : v));
    } else if (from == DType::S8 && to == DType::S32)
      r[i] = uint32_t(s8WordToS32(x));
    else
      r[i] = x;
  }
  return r;
}

TileData tileReduceLanes(Reduce k, DType d, const TileData& a) {
  TileData r{};
  for (int s = 0; s < kSublanes; ++s) {
    uint32_t x[kLanes];
    for (int l = 0; l < kLanes; ++l) x[l] = a[s * kLanes + l];
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) {
        uint32_t p = x[l], q = x[l + w];
        if (d == DType::F32) {
          float fp = f(p), fq = f(q);
          if (k == Reduce::Sum) {
            x[l] = f32ResultBits(fp + fq);
          } else if (std::isnan(fp) || std::isnan(fq)) {
            x[l] = kCanonicalNanBits;
          } else {
            x[l] = fp == fq ? (std::signbit(fp) ? q : p) : (fp > fq ? p : q);
          }
        } else {
          x[l] = k == Reduce::Sum ? p + q : (int32_t(p) > int32_t(q) ? p : q);
        }
      }
    for (int l = 0; l < kLanes; ++l) r[s * kLanes + l] = x[0];
  }
  return r;
}

TileData tileRotSublanes(const TileData& a, int amount) {
  TileData r{};
  int shift = ((amount % kSublanes) + kSublanes) % kSublanes;
  for (int s = 0; s < kSublanes; ++s)
    for (int l = 0; l < kLanes; ++l) r[((s + shift) % kSublanes) * kLanes + l] = a[s * kLanes + l];
  return r;
}

TileData tileRotLanes(const TileData& a, int amount) {
  TileData r{};
  int shift = ((amount % kLanes) + kLanes) % kLanes;
  for (int s = 0; s < kSublanes; ++s)
    for (int l = 0; l < kLanes; ++l) r[s * kLanes + (l + shift) % kLanes] = a[s * kLanes + l];
  return r;
}

TileData tileLanePerm(const TileData& a, const TileData& idx) {
  TileData r{};
  for (int s = 0; s < kSublanes; ++s)
    for (int l = 0; l < kLanes; ++l)
      r[s * kLanes + l] = a[s * kLanes + (idx[s * kLanes + l] & (kLanes - 1))];
  return r;
}

uint32_t mxuDotBf16(const uint32_t* a, const uint32_t* b, int64_t k, int mxuSize) {
  float acc = 0.0f;
  for (int64_t c0 = 0; c0 < k; c0 += mxuSize) {
    float r = +0.0f;
    int64_t end = std::min<int64_t>(k, c0 + mxuSize);
    for (int64_t i = c0; i < end; ++i) r = r + bf16WordToF32(a[i]) * bf16WordToF32(b[i]);
    r = canonicalizeNan(r);
    acc = c0 == 0 ? r : canonicalizeNan(acc + r);
  }
  return f32ResultBits(acc);
}

uint32_t mxuDotBf16From(uint32_t init, const uint32_t* a, const uint32_t* b, int64_t k,
                        int mxuSize) {
  float acc = floatOf(init);
  for (int64_t c0 = 0; c0 < k; c0 += mxuSize) {
    float r = +0.0f;
    int64_t end = std::min<int64_t>(k, c0 + mxuSize);
    for (int64_t i = c0; i < end; ++i) r = r + bf16WordToF32(a[i]) * bf16WordToF32(b[i]);
    acc = canonicalizeNan(acc + canonicalizeNan(r));
  }
  return f32ResultBits(acc);
}

uint32_t mxuDotS8(const uint32_t* a, const uint32_t* b, int64_t k) {
  uint32_t acc = 0;
  for (int64_t i = 0; i < k; ++i) acc += uint32_t(s8WordToS32(a[i]) * s8WordToS32(b[i]));
  return acc;
}

}  // namespace tpusim::kernels::llo
