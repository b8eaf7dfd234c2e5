// The value of a `constant` instruction.
//
// Storage (documented contract for the evaluator and the passes):
// - array values are kept per element in row-major (logical) order, independent
//   of the layout: element i of an f32[2,3] is at row i/3, column i%3;
// - pred and integral types use `ints` (pred: 0/1; u64 values above INT64_MAX
//   keep their bit pattern, read them with getUnsigned);
// - floating types use `floats` (double). f32 and bf16 values are already
//   rounded to their type (so f32 -> float is exact); f64 values are exact;
//   f16 and the f8 kinds are rounded to f32 only (round them to the type yourself);
// - complex types are not stored (they stay elided);
// - tuple constants hold their elements in `elements`;
// - an elided constant (`constant({...})`, as XLA writes big constants) has
//   elided = true and no values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/Shape.h"

namespace tpusim::hlo {

struct Literal {
  Shape shape;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Literal> elements;  // tuple literals
  bool elided = false;

  // Number of stored elements (0 if elided or a tuple).
  int64_t size() const;
  bool usesFloats() const { return isFloatingType(shape.type); }
  // Element i converted to double / int64 / uint64, whatever the storage.
  double getDouble(int64_t i) const;
  int64_t getInt(int64_t i) const;
  uint64_t getUnsigned(int64_t i) const;
  // Sets element i from a double, rounding as the storage rule above says.
  void setDouble(int64_t i, double v);
  void setInt(int64_t i, int64_t v);

  // A literal of `shape` filled with zeros (array shapes only; the caller checks the size).
  static Literal zeros(const Shape& shape);
  // A scalar of type t holding v (converted per the storage rule).
  static Literal scalar(PrimitiveType t, double v);
  // Every element equal to v?
  bool allEqual(double v) const;

  // Same shape (including layout), same values (NaNs equal by bits), same elided flag.
  bool operator==(const Literal& o) const;
  bool operator!=(const Literal& o) const { return !(*this == o); }

  // HLO text of the value: "0.5", "{1, 2}", "{ {1, 2}, {3, 4} }", "( {1}, 2 )", "{...}".
  std::string toString() const;
};

// Rounds v to the nearest value of type t as the storage rule above says
// (f32/bf16 rounding; integers wrap to their width; pred becomes 0/1).
double roundForStorage(PrimitiveType t, double v);
int64_t wrapInteger(PrimitiveType t, int64_t v);

}  // namespace tpusim::hlo
