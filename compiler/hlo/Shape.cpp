#include "compiler/hlo/Shape.h"

#include <climits>

namespace tpusim::hlo {
namespace {

struct TypeEntry {
  PrimitiveType type;
  const char* name;
  int bits;
};

constexpr TypeEntry kTypes[] = {
    {PrimitiveType::Pred, "pred", 1},
    {PrimitiveType::S2, "s2", 2},
    {PrimitiveType::S4, "s4", 4},
    {PrimitiveType::S8, "s8", 8},
    {PrimitiveType::S16, "s16", 16},
    {PrimitiveType::S32, "s32", 32},
    {PrimitiveType::S64, "s64", 64},
    {PrimitiveType::U2, "u2", 2},
    {PrimitiveType::U4, "u4", 4},
    {PrimitiveType::U8, "u8", 8},
    {PrimitiveType::U16, "u16", 16},
    {PrimitiveType::U32, "u32", 32},
    {PrimitiveType::U64, "u64", 64},
    {PrimitiveType::F16, "f16", 16},
    {PrimitiveType::BF16, "bf16", 16},
    {PrimitiveType::F32, "f32", 32},
    {PrimitiveType::F64, "f64", 64},
    {PrimitiveType::F8E5M2, "f8e5m2", 8},
    {PrimitiveType::F8E4M3FN, "f8e4m3fn", 8},
    {PrimitiveType::F8E4M3B11FNUZ, "f8e4m3b11fnuz", 8},
    {PrimitiveType::F8E5M2FNUZ, "f8e5m2fnuz", 8},
    {PrimitiveType::F8E4M3FNUZ, "f8e4m3fnuz", 8},
    {PrimitiveType::F8E4M3, "f8e4m3", 8},
    {PrimitiveType::F8E3M4, "f8e3m4", 8},
    {PrimitiveType::F4E2M1FN, "f4e2m1fn", 4},
    {PrimitiveType::F8E8M0FNU, "f8e8m0fnu", 8},
    {PrimitiveType::C64, "c64", 64},
    {PrimitiveType::C128, "c128", 128},
    {PrimitiveType::Token, "token", 0},
    {PrimitiveType::Opaque, "opaque", 0},
};

}  // namespace

std::string_view primitiveTypeName(PrimitiveType t) {
  if (t == PrimitiveType::Tuple) return "tuple";
  for (const auto& e : kTypes)
    if (e.type == t) return e.name;
  return "invalid";
}

std::optional<PrimitiveType> parsePrimitiveType(std::string_view name) {
  for (const auto& e : kTypes)
    if (name == e.name) return e.type;
  return std::nullopt;
}

bool isF8Type(PrimitiveType t) {
  return t >= PrimitiveType::F8E5M2 && t <= PrimitiveType::F8E8M0FNU;
}
bool isFloatingType(PrimitiveType t) {
  return (t >= PrimitiveType::F16 && t <= PrimitiveType::F64) || isF8Type(t);
}
bool isSignedIntegralType(PrimitiveType t) {
  return t >= PrimitiveType::S2 && t <= PrimitiveType::S64;
}
bool isUnsignedIntegralType(PrimitiveType t) {
  return t >= PrimitiveType::U2 && t <= PrimitiveType::U64;
}
bool isIntegralType(PrimitiveType t) {
  return isSignedIntegralType(t) || isUnsignedIntegralType(t);
}
bool isComplexType(PrimitiveType t) { return t == PrimitiveType::C64 || t == PrimitiveType::C128; }
bool isArrayElementType(PrimitiveType t) {
  return t != PrimitiveType::Invalid && t != PrimitiveType::Tuple && t != PrimitiveType::Token &&
         t != PrimitiveType::Opaque;
}
int bitWidth(PrimitiveType t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.bits;
  return 0;
}

bool Layout::operator==(const Layout& o) const {
  return minorToMajor == o.minorToMajor && tiles == o.tiles &&
         elementSizeBits == o.elementSizeBits && memorySpace == o.memorySpace && extra == o.extra;
}

std::string Layout::toString() const {
  std::string s = "{";
  for (size_t i = 0; i < minorToMajor.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(minorToMajor[i]);
  }
  std::string ext;
  if (!tiles.empty()) ext += "T";
  for (const Tile& t : tiles) {
    ext += "(";
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (i) ext += ",";
      ext += t.dims[i] < 0 ? std::string("*") : std::to_string(t.dims[i]);
    }
    ext += ")";
  }
  if (elementSizeBits) ext += "E(" + std::to_string(elementSizeBits) + ")";
  if (memorySpace) ext += "S(" + std::to_string(memorySpace) + ")";
  ext += extra;
  if (!ext.empty()) s += ":" + ext;
  s += "}";
  return s;
}

Shape Shape::array(PrimitiveType t, std::vector<int64_t> dims) {
  Shape s;
  s.type = t;
  s.dims = std::move(dims);
  return s;
}

Shape Shape::tuple(std::vector<Shape> elements) {
  Shape s;
  s.type = PrimitiveType::Tuple;
  s.tupleShapes = std::move(elements);
  return s;
}

Shape Shape::token() {
  Shape s;
  s.type = PrimitiveType::Token;
  return s;
}

bool Shape::isDynamicDim(int64_t i) const {
  return i >= 0 && static_cast<size_t>(i) < dynamicDims.size() && dynamicDims[i];
}

int64_t Shape::elementCount() const {
  if (!isArray()) return 0;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return 0;
    if (d != 0 && n > INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return n;
}

std::vector<int64_t> Shape::minorToMajorOrDefault() const {
  if (layout && layout->minorToMajor.size() == dims.size()) return layout->minorToMajor;
  std::vector<int64_t> m;
  for (int64_t i = rank() - 1; i >= 0; --i) m.push_back(i);
  return m;
}

bool Shape::compatible(const Shape& o) const {
  if (type != o.type) return false;
  if (isTuple()) {
    if (tupleShapes.size() != o.tupleShapes.size()) return false;
    for (size_t i = 0; i < tupleShapes.size(); ++i)
      if (!tupleShapes[i].compatible(o.tupleShapes[i])) return false;
    return true;
  }
  return dims == o.dims;
}

bool Shape::operator==(const Shape& o) const {
  auto dyn = [](const Shape& s) {
    std::vector<bool> d = s.dynamicDims;
    d.resize(s.dims.size(), false);
    return d;
  };
  return type == o.type && dims == o.dims && dyn(*this) == dyn(o) && layout == o.layout &&
         tupleShapes == o.tupleShapes;
}

std::string Shape::toString(bool printLayout) const {
  if (isTuple()) {
    std::string s = "(";
    for (size_t i = 0; i < tupleShapes.size(); ++i) {
      if (i) s += ", ";
      s += tupleShapes[i].toString(printLayout);
    }
    return s + ")";
  }
  std::string s(primitiveTypeName(type));
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    if (isDynamicDim(static_cast<int64_t>(i))) s += "<=";
    s += std::to_string(dims[i]);
  }
  s += "]";
  if (printLayout && layout && isArray()) s += layout->toString();
  return s;
}

Shape Shape::withType(PrimitiveType t) const {
  Shape s = *this;
  s.type = t;
  return s;
}

}  // namespace tpusim::hlo
