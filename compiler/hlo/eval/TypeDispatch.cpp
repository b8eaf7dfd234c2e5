#include "compiler/hlo/eval/TypeDispatch.h"

#include <cstring>

#include "compiler/hlo/eval/Half.h"
#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {

std::vector<float> loadAsF32(const Literal& l) {
  int64_t n = l.numElements();
  std::vector<float> v(static_cast<size_t>(n));
  switch (l.type()) {
    case ElemType::F32:
      if (n) std::memcpy(v.data(), l.raw(), static_cast<size_t>(n) * 4);
      break;
    case ElemType::BF16:
      for (int64_t i = 0; i < n; ++i) v[i] = bf16BitsToF32(l.data<uint16_t>()[i]);
      break;
    case ElemType::F16:
      for (int64_t i = 0; i < n; ++i) v[i] = f16BitsToF32(l.data<uint16_t>()[i]);
      break;
    default:
      throw EvalError(fmt::format("internal: loadAsF32 of {}", elemTypeName(l.type())));
  }
  return v;
}

void storeFromF32(Literal& l, const float* v) {
  int64_t n = l.numElements();
  switch (l.type()) {
    case ElemType::F32:
      if (n) std::memcpy(l.raw(), v, static_cast<size_t>(n) * 4);
      break;
    case ElemType::BF16:
      for (int64_t i = 0; i < n; ++i) l.data<uint16_t>()[i] = f32ToBf16Bits(v[i]);
      break;
    case ElemType::F16:
      for (int64_t i = 0; i < n; ++i) l.data<uint16_t>()[i] = f32ToF16Bits(v[i]);
      break;
    default:
      throw EvalError(fmt::format("internal: storeFromF32 into {}", elemTypeName(l.type())));
  }
}

void roundInPlace(ElemType t, float* v, int64_t n) {
  if (t == ElemType::BF16)
    for (int64_t i = 0; i < n; ++i) v[i] = roundToBf16(v[i]);
  else if (t == ElemType::F16)
    for (int64_t i = 0; i < n; ++i) v[i] = roundToF16(v[i]);
}

}  // namespace tpusim::hlo::eval
