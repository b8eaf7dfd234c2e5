#include "compiler/hlo/Literal.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "isa/support/Numerics.h"

namespace tpusim::hlo {

double roundForStorage(PrimitiveType t, double v) {
  if (t == PrimitiveType::F64) return v;
  if (t == PrimitiveType::BF16) return roundToBf16(static_cast<float>(v));
  return static_cast<double>(static_cast<float>(v));
}

int64_t wrapInteger(PrimitiveType t, int64_t v) {
  if (t == PrimitiveType::Pred) return v != 0;
  int bits = bitWidth(t);
  if (bits <= 0 || bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (isSignedIntegralType(t) && (u >> (bits - 1)) & 1) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t Literal::size() const {
  return static_cast<int64_t>(usesFloats() ? floats.size() : ints.size());
}

double Literal::getDouble(int64_t i) const {
  if (usesFloats()) return floats.at(static_cast<size_t>(i));
  int64_t v = ints.at(static_cast<size_t>(i));
  if (shape.type == PrimitiveType::U64) return static_cast<double>(static_cast<uint64_t>(v));
  return static_cast<double>(v);
}

int64_t Literal::getInt(int64_t i) const {
  if (!usesFloats()) return ints.at(static_cast<size_t>(i));
  double d = floats.at(static_cast<size_t>(i));
  if (!(d == d)) return 0;
  if (d >= 9.2e18) return INT64_MAX;
  if (d <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(d);
}

uint64_t Literal::getUnsigned(int64_t i) const { return static_cast<uint64_t>(getInt(i)); }

void Literal::setDouble(int64_t i, double v) {
  if (usesFloats()) {
    floats.at(static_cast<size_t>(i)) = roundForStorage(shape.type, v);
    return;
  }
  int64_t iv = 0;
  if (v == v) iv = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(v);
  ints.at(static_cast<size_t>(i)) = wrapInteger(shape.type, iv);
}

void Literal::setInt(int64_t i, int64_t v) {
  if (usesFloats())
    floats.at(static_cast<size_t>(i)) = roundForStorage(shape.type, static_cast<double>(v));
  else
    ints.at(static_cast<size_t>(i)) = wrapInteger(shape.type, v);
}

Literal Literal::zeros(const Shape& shape) {
  Literal l;
  l.shape = shape;
  int64_t n = shape.elementCount();
  if (l.usesFloats())
    l.floats.assign(static_cast<size_t>(n), 0.0);
  else
    l.ints.assign(static_cast<size_t>(n), 0);
  return l;
}

Literal Literal::scalar(PrimitiveType t, double v) {
  Literal l = zeros(Shape::scalar(t));
  l.setDouble(0, v);
  return l;
}

bool Literal::allEqual(double v) const {
  if (elided || shape.isTuple()) return false;
  for (int64_t i = 0; i < size(); ++i)
    if (getDouble(i) != v) return false;
  return true;
}

bool Literal::operator==(const Literal& o) const {
  if (!(shape == o.shape) || elided != o.elided || ints != o.ints ||
      floats.size() != o.floats.size() || !(elements == o.elements))
    return false;
  return floats.empty() ||
         std::memcmp(floats.data(), o.floats.data(), floats.size() * sizeof(double)) == 0;
}

namespace {

std::string formatElement(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape.type;
  if (t == PrimitiveType::Pred) return l.ints[i] ? "true" : "false";
  if (t == PrimitiveType::U64) return fmt::format("{}", static_cast<uint64_t>(l.ints[i]));
  if (!l.usesFloats()) return fmt::format("{}", l.ints[i]);
  double d = l.floats[i];
  if (std::isnan(d)) return std::signbit(d) ? "-nan" : "nan";
  if (t == PrimitiveType::F64) return fmt::format("{}", d);
  return fmt::format("{}", static_cast<float>(d));
}

void formatLevel(const Literal& l, size_t dim, int64_t& next, std::string& out) {
  const auto& dims = l.shape.dims;
  if (dim == dims.size()) {
    out += formatElement(l, next++);
    return;
  }
  out += "{";
  bool nested = dim + 1 < dims.size();
  if (nested) out += " ";
  for (int64_t i = 0; i < dims[dim]; ++i) {
    if (i) out += ", ";
    formatLevel(l, dim + 1, next, out);
  }
  if (nested) out += " ";
  out += "}";
}

}  // namespace

std::string Literal::toString() const {
  if (shape.isTuple()) {
    std::string s = "(";
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i) s += ", ";
      s += elements[i].toString();
    }
    return s + ")";
  }
  if (elided || size() != shape.elementCount()) return "{...}";
  int64_t next = 0;
  std::string out;
  formatLevel(*this, 0, next, out);
  return out;
}

}  // namespace tpusim::hlo
