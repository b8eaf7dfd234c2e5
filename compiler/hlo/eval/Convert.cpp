#include "compiler/hlo/eval/Convert.h"

#include <fmt/format.h>

#include <cstring>

#include "compiler/hlo/eval/Half.h"
#include "compiler/hlo/eval/TypeDispatch.h"
#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {
namespace {

// Writes `n` values of C++ type S (already decoded: bool, an integer, float or
// double) into `out` of element type `to`.
template <typename S>
void encode(const S* src, int64_t n, Literal& out) {
  auto store = [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* dst = out.data<D>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
        dst[i] = saturatingFloatToInt<D>(src[i]);
      } else {
        dst[i] = static_cast<D>(src[i]);
      }
    }
  };
  switch (out.type()) {
    case ElemType::Pred: {
      uint8_t* dst = out.data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != S(0) ? 1 : 0;
      return;
    }
    case ElemType::BF16: {
      uint16_t* dst = out.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = f32ToBf16Bits(static_cast<float>(src[i]));
      return;
    }
    case ElemType::F16: {
      uint16_t* dst = out.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) dst[i] = f32ToF16Bits(static_cast<float>(src[i]));
      return;
    }
    case ElemType::S8:
      return store(TypeTag<int8_t>{});
    case ElemType::S16:
      return store(TypeTag<int16_t>{});
    case ElemType::S32:
      return store(TypeTag<int32_t>{});
    case ElemType::S64:
      return store(TypeTag<int64_t>{});
    case ElemType::U8:
      return store(TypeTag<uint8_t>{});
    case ElemType::U16:
      return store(TypeTag<uint16_t>{});
    case ElemType::U32:
      return store(TypeTag<uint32_t>{});
    case ElemType::U64:
      return store(TypeTag<uint64_t>{});
    case ElemType::F32:
      return store(TypeTag<float>{});
    case ElemType::F64:
      return store(TypeTag<double>{});
  }
}

}  // namespace

Literal convertLiteral(const Literal& in, ElemType to) {
  if (in.isTuple()) throw EvalError("convert of a tuple");
  Literal out = Literal::array(to, in.dims());
  if (in.type() == to) {
    if (in.byteSize()) std::memcpy(out.raw(), in.raw(), in.byteSize());
    return out;
  }
  int64_t n = in.numElements();
  switch (in.type()) {
    case ElemType::Pred: {
      std::vector<uint8_t> v(in.data<uint8_t>(), in.data<uint8_t>() + n);
      for (auto& b : v) b = b ? 1 : 0;
      encode(v.data(), n, out);
      return out;
    }
    case ElemType::BF16:
    case ElemType::F16: {
      std::vector<float> v = loadAsF32(in);
      encode(v.data(), n, out);
      return out;
    }
    default:
      break;
  }
  dispatchNative(in.type(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    encode(in.data<S>(), n, out);
  });
  return out;
}

Literal bitcastLiteral(const Literal& in, ElemType to, std::vector<int64_t> dims) {
  if (in.isTuple()) throw EvalError("bitcast-convert of a tuple");
  Literal out = Literal::array(to, std::move(dims));
  if (out.byteSize() != in.byteSize())
    throw EvalError(
        fmt::format("bitcast-convert from {} to {} changes the size in bytes ({} -> {})",
                    in.shapeString(), out.shapeString(), in.byteSize(), out.byteSize()));
  if (in.byteSize()) std::memcpy(out.raw(), in.raw(), in.byteSize());
  return out;
}

}  // namespace tpusim::hlo::eval
