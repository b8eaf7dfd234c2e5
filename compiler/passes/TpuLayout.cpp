#include "compiler/passes/TpuLayout.h"

namespace tpusim::passes {

using hlo::PrimitiveType;
using hlo::Shape;
using hlo::Tile;

namespace {

// Rows of one element type packed in a 32-bit sublane (1 for 32-bit, 0 = not tiled).
int64_t packing(PrimitiveType t) {
  if (t == PrimitiveType::Pred) return 4;
  if (hlo::isComplexType(t)) return 0;
  int bits = hlo::bitWidth(t);
  if (bits == 32) return 1;
  if (bits == 16) return 2;
  if (bits == 8) return 4;
  if (bits == 4) return 8;
  return 0;  // 64-bit, 2-bit and others: not native
}

}  // namespace

std::vector<int64_t> defaultMinorToMajor(int64_t rank) {
  std::vector<int64_t> m;
  for (int64_t d = rank - 1; d >= 0; --d) m.push_back(d);
  return m;
}

std::vector<Tile> tpuTiles(const Shape& shape, const std::vector<int64_t>& minorToMajor) {
  int64_t pack = packing(shape.type);
  if (!shape.isArray() || pack == 0) return {};
  std::vector<Tile> tiles;
  if (shape.rank() == 0) {
    tiles.push_back(Tile{{128 * pack}});
    return tiles;
  }
  if (shape.rank() == 1) {
    int64_t n = shape.dims[0], t = 256;
    while (t < n && t < 1024) t *= 2;
    tiles.push_back(Tile{{t}});
    if (pack > 1) {
      tiles.push_back(Tile{{128}});
      tiles.push_back(Tile{{pack, 1}});
    }
    return tiles;
  }
  int64_t secondMinor = shape.dims[static_cast<size_t>(minorToMajor.at(1))];
  int64_t rows = 8;
  for (int64_t r : {1, 2, 4})
    if (secondMinor <= r) {
      rows = r;
      break;
    }
  if (rows < pack) rows = pack;
  tiles.push_back(Tile{{rows, 128}});
  if (pack > 1) tiles.push_back(Tile{{pack, 1}});
  return tiles;
}

Shape withTpuLayout(const Shape& shape, const std::optional<std::vector<int64_t>>& minorToMajor) {
  Shape out = shape;
  if (shape.isTuple()) {
    for (Shape& e : out.tupleShapes) e = withTpuLayout(e);
    return out;
  }
  if (!shape.isArray()) return out;
  std::vector<int64_t> m2m = minorToMajor ? *minorToMajor : shape.minorToMajorOrDefault();
  hlo::Layout layout = shape.layout ? *shape.layout : hlo::Layout{};
  layout.minorToMajor = m2m;
  layout.tiles = tpuTiles(shape, m2m);
  out.layout = layout;
  return out;
}

Shape withDefaultTpuLayout(const Shape& shape) {
  if (shape.isTuple()) {
    Shape out = shape;
    for (Shape& e : out.tupleShapes) e = withDefaultTpuLayout(e);
    return out;
  }
  if (!shape.isArray()) return shape;
  return withTpuLayout(shape, defaultMinorToMajor(shape.rank()));
}

}  // namespace tpusim::passes
