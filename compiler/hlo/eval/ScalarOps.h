// Scalar versions of the binary ops that reducers use, with the same numerics
// as Elementwise.h: integer wraparound, NaN-propagating max/min with -0 < +0.
#pragma once

#include <cmath>
#include <type_traits>

#include "compiler/hlo/eval/Elementwise.h"

namespace tpusim::hlo::eval {

template <typename F>
F maxNan(F x, F y) {
  if (std::isnan(x)) return x;
  if (std::isnan(y)) return y;
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}
template <typename F>
F minNan(F x, F y) {
  if (std::isnan(x)) return x;
  if (std::isnan(y)) return y;
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Calls fn(op) with a callable T(T, T) for a reducer-friendly op (add, multiply,
// maximum, minimum, and, or, xor). Returns false if the op does not apply to T.
template <typename T, typename Fn>
bool withScalarOp(BinaryOp op, Fn&& fn) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::Add:
        fn([](T a, T b) { return a + b; });
        return true;
      case BinaryOp::Mul:
        fn([](T a, T b) { return a * b; });
        return true;
      case BinaryOp::Max:
        fn(maxNan<T>);
        return true;
      case BinaryOp::Min:
        fn(minNan<T>);
        return true;
      default:
        return false;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    using W = WrapType<T>;
    switch (op) {
      case BinaryOp::Add:
        fn([](T a, T b) { return static_cast<T>(W(U(a)) + W(U(b))); });
        return true;
      case BinaryOp::Mul:
        fn([](T a, T b) { return static_cast<T>(W(U(a)) * W(U(b))); });
        return true;
      case BinaryOp::Max:
        fn([](T a, T b) { return a > b ? a : b; });
        return true;
      case BinaryOp::Min:
        fn([](T a, T b) { return a < b ? a : b; });
        return true;
      case BinaryOp::And:
        fn([](T a, T b) { return static_cast<T>(a & b); });
        return true;
      case BinaryOp::Or:
        fn([](T a, T b) { return static_cast<T>(a | b); });
        return true;
      case BinaryOp::Xor:
        fn([](T a, T b) { return static_cast<T>(a ^ b); });
        return true;
      default:
        return false;
    }
  }
}

}  // namespace tpusim::hlo::eval
