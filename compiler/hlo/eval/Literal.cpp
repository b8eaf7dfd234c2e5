#include "compiler/hlo/eval/Literal.h"

#include <fmt/format.h>

#include <cstring>

#include "compiler/hlo/eval/Convert.h"
#include "compiler/hlo/eval/Half.h"
#include "compiler/hlo/eval/TypeDispatch.h"
#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {

size_t elemSize(ElemType t) {
  switch (t) {
    case ElemType::Pred:
    case ElemType::S8:
    case ElemType::U8:
      return 1;
    case ElemType::S16:
    case ElemType::U16:
    case ElemType::F16:
    case ElemType::BF16:
      return 2;
    case ElemType::S32:
    case ElemType::U32:
    case ElemType::F32:
      return 4;
    case ElemType::S64:
    case ElemType::U64:
    case ElemType::F64:
      return 8;
  }
  return 1;
}

std::string_view elemTypeName(ElemType t) {
  switch (t) {
    case ElemType::Pred:
      return "pred";
    case ElemType::S8:
      return "s8";
    case ElemType::S16:
      return "s16";
    case ElemType::S32:
      return "s32";
    case ElemType::S64:
      return "s64";
    case ElemType::U8:
      return "u8";
    case ElemType::U16:
      return "u16";
    case ElemType::U32:
      return "u32";
    case ElemType::U64:
      return "u64";
    case ElemType::F16:
      return "f16";
    case ElemType::BF16:
      return "bf16";
    case ElemType::F32:
      return "f32";
    case ElemType::F64:
      return "f64";
  }
  return "?";
}

bool isFloat(ElemType t) {
  return t == ElemType::F16 || t == ElemType::BF16 || t == ElemType::F32 || t == ElemType::F64;
}
bool isSignedInt(ElemType t) {
  return t == ElemType::S8 || t == ElemType::S16 || t == ElemType::S32 || t == ElemType::S64;
}
bool isUnsignedInt(ElemType t) {
  return t == ElemType::U8 || t == ElemType::U16 || t == ElemType::U32 || t == ElemType::U64;
}
int bitWidth(ElemType t) { return t == ElemType::Pred ? 1 : static_cast<int>(elemSize(t) * 8); }

int64_t checkedElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      throw EvalError(fmt::format("invalid dimensions [{}]", fmt::join(dims, ",")));
  }
  return n;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Literal Literal::array(ElemType type, std::vector<int64_t> dims) {
  Literal l;
  l.type_ = type;
  l.count_ = checkedElementCount(dims);
  int64_t bytes;
  if (__builtin_mul_overflow(l.count_, static_cast<int64_t>(elemSize(type)), &bytes) ||
      bytes > (int64_t{1} << 40))
    throw EvalError(fmt::format("array {}[{}] is too large to evaluate", elemTypeName(type),
                                fmt::join(dims, ",")));
  l.dims_ = std::move(dims);
  l.bytes_.assign(static_cast<size_t>(bytes), 0);
  return l;
}

Literal Literal::scalar(ElemType type, double value) {
  Literal l = array(type, {});
  l.setDouble(0, value);
  return l;
}

Literal Literal::tuple(std::vector<Literal> elements) {
  Literal l;
  l.isTuple_ = true;
  l.elements_ = std::move(elements);
  return l;
}

double Literal::getDouble(int64_t i) const {
  switch (type_) {
    case ElemType::Pred:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    case ElemType::BF16:
      return bf16BitsToF32(data<uint16_t>()[i]);
    case ElemType::F16:
      return f16BitsToF32(data<uint16_t>()[i]);
    default:
      return dispatchNative(type_, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return static_cast<double>(data<T>()[i]);
      });
  }
}

int64_t Literal::getInt(int64_t i) const {
  switch (type_) {
    case ElemType::Pred:
      return data<uint8_t>()[i] ? 1 : 0;
    case ElemType::BF16:
    case ElemType::F16:
    case ElemType::F32:
    case ElemType::F64:
      return saturatingFloatToInt<int64_t>(getDouble(i));
    default:
      return dispatchInt(type_, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return static_cast<int64_t>(data<T>()[i]);
      });
  }
}

void Literal::setDouble(int64_t i, double v) {
  Literal src = array(ElemType::F64, {});
  *src.data<double>() = v;
  Literal c = convertLiteral(src, type_);
  std::memcpy(raw() + i * elemSize(type_), c.raw(), elemSize(type_));
}

void Literal::setInt(int64_t i, int64_t v) {
  Literal src = array(ElemType::S64, {});
  *src.data<int64_t>() = v;
  Literal c = convertLiteral(src, type_);
  std::memcpy(raw() + i * elemSize(type_), c.raw(), elemSize(type_));
}

bool Literal::operator==(const Literal& o) const {
  if (isTuple_ != o.isTuple_) return false;
  if (isTuple_) return elements_ == o.elements_;
  return type_ == o.type_ && dims_ == o.dims_ && bytes_ == o.bytes_;
}

std::string Literal::shapeString() const {
  if (isTuple_) {
    std::vector<std::string> parts;
    for (const auto& e : elements_) parts.push_back(e.shapeString());
    return fmt::format("({})", fmt::join(parts, ", "));
  }
  return fmt::format("{}[{}]", elemTypeName(type_), fmt::join(dims_, ","));
}

std::string Literal::toString(size_t limit) const {
  if (isTuple_) {
    std::vector<std::string> parts;
    for (const auto& e : elements_) parts.push_back(e.toString(limit));
    return fmt::format("({})", fmt::join(parts, ", "));
  }
  std::string s = shapeString() + " {";
  for (int64_t i = 0; i < count_ && static_cast<size_t>(i) < limit; ++i) {
    if (i) s += ", ";
    if (type_ == ElemType::F64)
      s += fmt::format("{}", getDouble(i));
    else if (isFloat(type_))
      s += fmt::format("{}", static_cast<float>(getDouble(i)));  // shortest f32 spelling
    else if (type_ == ElemType::U64)
      s += fmt::format("{}", data<uint64_t>()[i]);
    else
      s += fmt::format("{}", getInt(i));
  }
  if (static_cast<size_t>(count_) > limit) s += ", ...";
  return s + "}";
}

}  // namespace tpusim::hlo::eval
