// Integer and pred element-wise loops. Arithmetic goes through the unsigned type
// of the same width, so overflow wraps instead of being undefined.
#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "compiler/hlo/eval/ElementwiseKernels.h"
#include "compiler/hlo/eval/TypeDispatch.h"

namespace tpusim::hlo::eval::detail {
namespace {

template <typename T, typename Fn>
Literal map1(const Literal& a, Fn f) {
  Literal out = Literal::array(a.type(), a.dims());
  const T* x = a.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0, n = a.numElements(); i < n; ++i) o[i] = f(x[i]);
  return out;
}
template <typename T, typename Fn>
Literal map2(const Literal& a, const Literal& b, Fn f) {
  Literal out = Literal::array(a.type(), a.dims());
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0, n = a.numElements(); i < n; ++i) o[i] = f(x[i], y[i]);
  return out;
}

// The unsigned type arithmetic on T is done in: at least `unsigned`, so that
// promotion never turns u8/u16 arithmetic into (overflowing) signed int.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
T ipow(T base, T exp) {
  using U = Wide<T>;
  if (base == T(1) || exp == T(0)) return T(1);
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return T(0);
  }
  using UT = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<UT>(base);
  U e = static_cast<UT>(exp);
  while (e) {
    if (e & 1u) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

template <typename T>
Literal typedUnary(UnaryOp op, const Literal& a) {
  using U = Wide<T>;
  using UT = std::make_unsigned_t<T>;
  constexpr int kBits = std::numeric_limits<std::make_unsigned_t<T>>::digits;
  switch (op) {
    case UnaryOp::Negate:
      return map1<T>(a, [](T x) { return static_cast<T>(U(0) - U(UT(x))); });
    case UnaryOp::Abs:
      return map1<T>(a, [](T x) {
        if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(U(0) - U(UT(x))) : x;
        return x;
      });
    case UnaryOp::Sign:
      return map1<T>(a, [](T x) -> T {
        if constexpr (std::is_signed_v<T>) return static_cast<T>((T(0) < x) - (x < T(0)));
        return x != 0;
      });
    case UnaryOp::Not:
      return map1<T>(a, [](T x) { return static_cast<T>(~U(UT(x))); });
    case UnaryOp::PopCount:
      return map1<T>(a, [](T x) {
        return static_cast<T>(__builtin_popcountll(static_cast<std::make_unsigned_t<T>>(x)));
      });
    case UnaryOp::Clz:
      return map1<T>(a, [](T x) {
        unsigned long long u = static_cast<std::make_unsigned_t<T>>(x);
        return static_cast<T>(u == 0 ? kBits : __builtin_clzll(u) - (64 - kBits));
      });
    case UnaryOp::Copy:
      return map1<T>(a, [](T x) { return x; });
    default:
      throw EvalError(
          fmt::format("{} is not defined on {}", unaryOpName(op), elemTypeName(a.type())));
  }
}

template <typename T>
Literal typedBinary(BinaryOp op, const Literal& a, const Literal& b) {
  using U = Wide<T>;
  using UT = std::make_unsigned_t<T>;
  constexpr U kBits = std::numeric_limits<UT>::digits;
  switch (op) {
    case BinaryOp::Add:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(U(UT(x)) + U(UT(y))); });
    case BinaryOp::Sub:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(U(UT(x)) - U(UT(y))); });
    case BinaryOp::Mul:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(U(UT(x)) * U(UT(y))); });
    case BinaryOp::Div:
      return map2<T>(a, b, [](T x, T y) -> T {
        if (y == 0) return static_cast<T>(~UT(0));
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1) && x == std::numeric_limits<T>::min()) return x;
        }
        return static_cast<T>(x / y);
      });
    case BinaryOp::Rem:
      return map2<T>(a, b, [](T x, T y) -> T {
        if (y == 0) return x;
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return 0;
        }
        return static_cast<T>(x % y);
      });
    case BinaryOp::Pow:
      return map2<T>(a, b, ipow<T>);
    case BinaryOp::Max:
      return map2<T>(a, b, [](T x, T y) { return x > y ? x : y; });
    case BinaryOp::Min:
      return map2<T>(a, b, [](T x, T y) { return x < y ? x : y; });
    case BinaryOp::And:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(x & y); });
    case BinaryOp::Or:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(x | y); });
    case BinaryOp::Xor:
      return map2<T>(a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
    case BinaryOp::Shl:
      return map2<T>(a, b, [](T x, T y) -> T {
        return U(UT(y)) >= kBits ? T(0) : static_cast<T>(U(UT(x)) << U(UT(y)));
      });
    case BinaryOp::ShrLogical:
      return map2<T>(a, b, [](T x, T y) -> T {
        return U(UT(y)) >= kBits ? T(0) : static_cast<T>(U(UT(x)) >> U(UT(y)));
      });
    case BinaryOp::ShrArithmetic:
      return map2<T>(a, b, [](T x, T y) -> T {
        using S = std::make_signed_t<T>;
        S s = static_cast<S>(x);
        if (U(UT(y)) >= kBits) return static_cast<T>(s < 0 ? S(-1) : S(0));
        return static_cast<T>(static_cast<S>(s >> U(UT(y))));
      });
    default:
      throw EvalError(
          fmt::format("{} is not defined on {}", binaryOpName(op), elemTypeName(a.type())));
  }
}

Literal predUnary(UnaryOp op, const Literal& a) {
  switch (op) {
    case UnaryOp::Not:
      return map1<uint8_t>(a, [](uint8_t x) -> uint8_t { return !x; });
    case UnaryOp::Copy:
      return map1<uint8_t>(a, [](uint8_t x) { return x; });
    default:
      throw EvalError(fmt::format("{} is not defined on pred", unaryOpName(op)));
  }
}

Literal predBinary(BinaryOp op, const Literal& a, const Literal& b) {
  switch (op) {
    case BinaryOp::And:
    case BinaryOp::Min:
    case BinaryOp::Mul:
      return map2<uint8_t>(a, b, [](uint8_t x, uint8_t y) -> uint8_t { return x & y; });
    case BinaryOp::Or:
    case BinaryOp::Max:
      return map2<uint8_t>(a, b, [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
    case BinaryOp::Xor:
    case BinaryOp::Add:  // addition modulo 2, as the 1-bit integer wraps
    case BinaryOp::Sub:
      return map2<uint8_t>(a, b, [](uint8_t x, uint8_t y) -> uint8_t { return x ^ y; });
    default:
      throw EvalError(fmt::format("{} is not defined on pred", binaryOpName(op)));
  }
}

}  // namespace

Literal intUnary(UnaryOp op, const Literal& a) {
  if (a.type() == ElemType::Pred) return predUnary(op, a);
  return dispatchInt(a.type(),
                     [&](auto tag) { return typedUnary<typename decltype(tag)::type>(op, a); });
}

Literal intBinary(BinaryOp op, const Literal& a, const Literal& b) {
  if (a.type() == ElemType::Pred) return predBinary(op, a, b);
  return dispatchInt(a.type(),
                     [&](auto tag) { return typedBinary<typename decltype(tag)::type>(op, a, b); });
}

}  // namespace tpusim::hlo::eval::detail
