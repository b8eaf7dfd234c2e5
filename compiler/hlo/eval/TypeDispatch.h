// Maps an ElemType to the C++ type kernels compute with, and moves float data
// between literals and f32 compute buffers (bf16 and f16 are computed in f32
// and rounded back to nearest even after every op).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for integer and f32/f64 types; pred, bf16 and f16 have
// no native compute type and throw.
template <typename F>
decltype(auto) dispatchNative(ElemType t, F&& f) {
  switch (t) {
    case ElemType::S8:
      return f(TypeTag<int8_t>{});
    case ElemType::S16:
      return f(TypeTag<int16_t>{});
    case ElemType::S32:
      return f(TypeTag<int32_t>{});
    case ElemType::S64:
      return f(TypeTag<int64_t>{});
    case ElemType::U8:
      return f(TypeTag<uint8_t>{});
    case ElemType::U16:
      return f(TypeTag<uint16_t>{});
    case ElemType::U32:
      return f(TypeTag<uint32_t>{});
    case ElemType::U64:
      return f(TypeTag<uint64_t>{});
    case ElemType::F32:
      return f(TypeTag<float>{});
    case ElemType::F64:
      return f(TypeTag<double>{});
    default:
      break;
  }
  throw EvalError(fmt::format("internal: no native compute type for {}", elemTypeName(t)));
}

// Calls f(TypeTag<T>{}) for the integer types only.
template <typename F>
decltype(auto) dispatchInt(ElemType t, F&& f) {
  switch (t) {
    case ElemType::S8:
      return f(TypeTag<int8_t>{});
    case ElemType::S16:
      return f(TypeTag<int16_t>{});
    case ElemType::S32:
      return f(TypeTag<int32_t>{});
    case ElemType::S64:
      return f(TypeTag<int64_t>{});
    case ElemType::U8:
      return f(TypeTag<uint8_t>{});
    case ElemType::U16:
      return f(TypeTag<uint16_t>{});
    case ElemType::U32:
      return f(TypeTag<uint32_t>{});
    case ElemType::U64:
      return f(TypeTag<uint64_t>{});
    default:
      break;
  }
  throw EvalError(fmt::format("internal: {} is not an integer type", elemTypeName(t)));
}

// f16 / bf16 / f32 literal -> f32 values (exact).
std::vector<float> loadAsF32(const Literal& l);
// f32 values -> an f16 / bf16 / f32 literal, rounding to nearest even.
void storeFromF32(Literal& l, const float* v);
// Rounds f32 values in place to what `t` (f16, bf16 or f32) can hold.
void roundInPlace(ElemType t, float* v, int64_t n);

}  // namespace tpusim::hlo::eval
