#include "compiler/lower/buffers/ShapeBytes.h"

#include <limits>

namespace tpusim::lower {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t mulSat(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kMax / b) return kMax;
  return a * b;
}

int64_t roundUp(int64_t x, int64_t m) { return m <= 1 ? x : (x + m - 1) / m * m; }

}  // namespace

int64_t elementBytes(hlo::PrimitiveType t) {
  int bits = hlo::bitWidth(t);
  if (bits <= 0) return 0;
  return (bits + 7) / 8;
}

int64_t shapeBytes(const hlo::Shape& shape) {
  if (shape.isTuple()) {
    int64_t sum = 0;
    for (const hlo::Shape& e : shape.tupleShapes) {
      int64_t b = shapeBytes(e);
      sum = (b > kMax - sum) ? kMax : sum + b;
    }
    return sum;
  }
  if (!shape.isArray()) return 0;
  // Physical dims, most minor first.
  std::vector<int64_t> m2m = shape.minorToMajorOrDefault();
  std::vector<int64_t> phys;
  for (int64_t d : m2m)
    if (d >= 0 && d < shape.rank()) phys.push_back(shape.dims[static_cast<size_t>(d)]);
  if (phys.size() != shape.dims.size()) phys.assign(shape.dims.rbegin(), shape.dims.rend());
  if (shape.layout && !shape.layout->tiles.empty()) {
    // The first tile's last entry applies to the most minor dim, and so on.
    const std::vector<int64_t>& tile = shape.layout->tiles.front().dims;
    for (size_t k = 0; k < tile.size() && k < phys.size(); ++k) {
      int64_t t = tile[tile.size() - 1 - k];
      if (t > 0) phys[k] = roundUp(phys[k], t);
    }
  }
  int64_t count = 1;
  for (int64_t d : phys) count = mulSat(count, d);
  int bits = hlo::bitWidth(shape.type);
  if (shape.type == hlo::PrimitiveType::Pred) bits = 8;
  int64_t totalBits = mulSat(count, bits);
  return totalBits == kMax ? kMax : (totalBits + 7) / 8;
}

}  // namespace tpusim::lower
