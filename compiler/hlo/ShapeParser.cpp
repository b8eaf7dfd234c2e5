// Shapes and layouts in HLO text.
#include <fmt/format.h>

#include "compiler/hlo/ParserParts.h"

namespace tpusim::hlo {
namespace {

constexpr size_t kMaxRank = 64;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// One "(a,b,...)" group of a tile, '*' allowed.
bool parseTileGroup(ParseCursor& c, Tile* tile) {
  if (!c.expect('(', "to open a tile")) return false;
  do {
    if (c.tryConsume('*')) {
      tile->dims.push_back(-1);
      continue;
    }
    int64_t v;
    if (!c.parseInt(&v, "a tile dimension")) return false;
    tile->dims.push_back(v);
  } while (c.tryConsume(','));
  return c.expect(')', "to close a tile");
}

bool parseLayout(ParseCursor& c, Layout* layout) {
  c.expect('{', "to open a layout");
  if (c.peek() != ':' && c.peek() != '}') {
    do {
      int64_t v;
      if (!c.parseInt(&v, "a minor_to_major dimension")) return false;
      layout->minorToMajor.push_back(v);
    } while (c.tryConsume(','));
  }
  if (c.tryConsume(':')) {
    while (!c.failed() && c.peek() != '}') {
      if (c.atEnd()) return c.failHere("unterminated layout");
      char ch = c.peekRaw();
      char next = c.peekRaw(1);
      if (ch == 'T' && next == '(') {
        c.setPos(c.pos() + 1);
        while (c.peekRaw() == '(') {
          Tile t;
          if (!parseTileGroup(c, &t)) return false;
          layout->tiles.push_back(std::move(t));
        }
      } else if ((ch == 'E' || ch == 'S') && next == '(') {
        c.setPos(c.pos() + 2);
        int64_t v;
        if (!c.parseInt(&v, ch == 'E' ? "an element size" : "a memory space")) return false;
        if (!c.expect(')', "after the layout item")) return false;
        (ch == 'E' ? layout->elementSizeBits : layout->memorySpace) = v;
      } else {
        // Other layout items (L(..), P(..), SC(..), D(..), #(..), *(..)) are kept verbatim.
        size_t start = c.pos();
        size_t p = start;
        while (p < c.end() && c.text()[p] != '(' && c.text()[p] != '}' && p - start < 8) ++p;
        if (p >= c.end() || c.text()[p] != '(' || p == start)
          return c.fail(start, "malformed layout item");
        c.setPos(p);
        while (c.peekRaw() == '(') {
          std::string group;
          if (!c.captureRaw(&group, "a layout item")) return false;
        }
        layout->extra += std::string(c.text().substr(start, c.pos() - start));
      }
    }
  }
  return c.expect('}', "to close a layout");
}

}  // namespace

bool looksLikeShape(ParseCursor& c) {
  char ch = c.peek();
  if (ch == '(') return true;
  if (ch == '%') return false;
  std::string_view name = c.peekName();
  if (name.empty() || c.pos() + name.size() >= c.end()) return false;
  return c.text()[c.pos() + name.size()] == '[' && parsePrimitiveType(name).has_value();
}

bool parseShapeAt(ParseCursor& c, Shape* shape) {
  *shape = Shape();
  if (c.failed()) return false;
  if (c.tryConsume('(')) {
    if (!c.enter("tuple shape")) return false;
    shape->type = PrimitiveType::Tuple;
    if (!c.tryConsume(')')) {
      do {
        Shape e;
        if (!parseShapeAt(c, &e)) return false;
        shape->tupleShapes.push_back(std::move(e));
      } while (c.tryConsume(','));
      if (!c.expect(')', "to close a tuple shape")) return false;
    }
    c.leave();
    return true;
  }
  std::string name;
  size_t at;
  if (!c.parseName(&name, &at, "a shape")) return false;
  auto type = parsePrimitiveType(name);
  if (!type) return c.fail(at, fmt::format("unknown element type '{}'", name));
  shape->type = *type;
  if (!c.expect('[', "after the element type")) return false;
  if (!c.tryConsume(']')) {
    do {
      bool dynamic = false;
      if (c.peek() == '<' && c.peekRaw(1) == '=') {
        c.setPos(c.pos() + 2);
        dynamic = true;
      }
      int64_t d;
      size_t dimAt = (c.skipTrivia(), c.pos());
      if (!c.parseInt(&d, "a dimension size")) return false;
      if (d < 0) return c.fail(dimAt, "negative dimension size");
      if (shape->dims.size() >= kMaxRank) return c.fail(dimAt, "too many dimensions");
      shape->dims.push_back(d);
      if (dynamic) shape->dynamicDims.resize(shape->dims.size(), false);
      if (dynamic) shape->dynamicDims.back() = true;
    } while (c.tryConsume(','));
    if (!c.expect(']', "to close the dimensions")) return false;
  }
  if (!shape->dynamicDims.empty()) shape->dynamicDims.resize(shape->dims.size(), false);
  if ((shape->isToken() || shape->type == PrimitiveType::Opaque) && !shape->dims.empty())
    return c.fail(at, fmt::format("{} has no dimensions", name));
  // A layout follows directly ("f32[2]{0}"), or after spaces when it starts
  // like one: a digit, ':' or '}' (not a computation body "{ ... }").
  if (c.peekRaw() == '{' || c.peek() == '{') {
    size_t save = c.pos();
    bool adjacent = c.peekRaw() == '{' && c.text()[save - 1] == ']';
    c.setPos(save + 1);
    c.skipTrivia();
    char next = c.peekRaw();
    bool layoutLike = isDigit(next) || next == ':' || (next == '}' && adjacent);
    c.setPos(save);
    if (layoutLike && shape->isArray()) {
      Layout layout;
      if (!parseLayout(c, &layout)) return false;
      shape->layout = std::move(layout);
    }
  }
  return !c.failed();
}

bool parseShape(std::string_view text, Shape* shape, std::string* error) {
  ParseCursor c(text, "<shape>", 0, text.size());
  if (parseShapeAt(c, shape) && !c.atEnd()) c.failHere("unexpected text after the shape");
  if (c.failed()) {
    if (error) *error = c.error();
    return false;
  }
  return true;
}

}  // namespace tpusim::hlo
