// Constant values: scalars, nested braces per dimension, tuples, "{...}".
#include <fmt/format.h>

#include "compiler/hlo/ParserParts.h"

namespace tpusim::hlo {
namespace {

bool parseElement(ParseCursor& c, Literal* l) {
  PrimitiveType t = l->shape.type;
  size_t at = (c.skipTrivia(), c.pos());
  if (t == PrimitiveType::Pred) {
    if (c.tryKeyword("true")) return l->ints.push_back(1), true;
    if (c.tryKeyword("false")) return l->ints.push_back(0), true;
    int64_t v;
    if (!c.parseInt(&v, "true or false")) return false;
    if (v != 0 && v != 1) return c.fail(at, "pred value must be true or false");
    l->ints.push_back(v);
    return true;
  }
  if (isFloatingType(t)) {
    double v;
    if (!c.parseFloat(&v, "a floating-point value")) return false;
    l->floats.push_back(roundForStorage(t, v));
    return true;
  }
  if (isIntegralType(t)) {
    int64_t v = 0;
    if (isUnsignedIntegralType(t) && c.peek() != '-') {
      uint64_t u;
      if (!c.parseUnsigned(&u, "an integer value")) return false;
      v = static_cast<int64_t>(u);
    } else if (!c.parseInt(&v, "an integer value")) {
      return false;
    }
    if (wrapInteger(t, v) != v && !(t == PrimitiveType::U64))
      return c.fail(at, fmt::format("value does not fit in {}", primitiveTypeName(t)));
    l->ints.push_back(v);
    return true;
  }
  return c.fail(at, fmt::format("constants of type {} are not supported", primitiveTypeName(t)));
}

bool parseLevel(ParseCursor& c, Literal* l, size_t dim) {
  const auto& dims = l->shape.dims;
  if (dim == dims.size()) return parseElement(c, l);
  size_t open = (c.skipTrivia(), c.pos());
  if (!c.expect('{', fmt::format("to open dimension {} of the constant", dim).c_str()))
    return false;
  if (!c.enter("constant")) return false;
  int64_t count = 0;
  if (c.peek() != '}') {
    do {
      if (!parseLevel(c, l, dim + 1)) return false;
      ++count;
    } while (c.tryConsume(','));
  }
  if (!c.expect('}', "to close the constant's dimension")) return false;
  c.leave();
  if (count != dims[dim])
    return c.fail(open, fmt::format("constant has {} elements in dimension {}, the shape says {}",
                                    count, dim, dims[dim]));
  return true;
}

bool isElidedHere(ParseCursor& c) {
  size_t save = c.pos();
  bool elided = c.tryConsume('{') && c.peek() == '.' && c.peekRaw(1) == '.' && c.peekRaw(2) == '.';
  if (elided) {
    c.setPos(c.pos() + 3);
    elided = c.tryConsume('}');
  }
  if (!elided) c.setPos(save);
  return elided;
}

}  // namespace

bool parseLiteralAt(ParseCursor& c, const Shape& shape, Literal* l) {
  *l = Literal();
  l->shape = shape;
  if (c.failed()) return false;
  if (shape.isTuple()) {
    if (!c.enter("tuple constant")) return false;
    if (!c.expect('(', "to open a tuple constant")) return false;
    for (size_t i = 0; i < shape.tupleShapes.size(); ++i) {
      if (i && !c.expect(',', "between tuple constant elements")) return false;
      Literal e;
      if (!parseLiteralAt(c, shape.tupleShapes[i], &e)) return false;
      l->elements.push_back(std::move(e));
    }
    c.leave();
    return c.expect(')', "to close a tuple constant");
  }
  if (!shape.isArray()) return c.failHere("a constant needs an array or tuple shape");
  c.skipTrivia();
  if (isElidedHere(c)) {
    l->elided = true;
    return true;
  }
  if (isComplexType(shape.type)) return c.failHere("complex constants are not supported");
  return parseLevel(c, l, 0);
}

}  // namespace tpusim::hlo
