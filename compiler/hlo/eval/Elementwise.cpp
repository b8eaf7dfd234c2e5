// Dispatch of element-wise ops by element type, plus compare, select and clamp.
#include "compiler/hlo/eval/Elementwise.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "compiler/hlo/eval/ElementwiseKernels.h"
#include "compiler/hlo/eval/TypeDispatch.h"
#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {
namespace {

void requireArray(const Literal& l, std::string_view op) {
  if (l.isTuple()) throw EvalError(fmt::format("{} of a tuple", op));
}

void requireSame(const Literal& a, const Literal& b, std::string_view op) {
  requireArray(a, op);
  requireArray(b, op);
  if (a.type() != b.type() || a.dims() != b.dims())
    throw EvalError(
        fmt::format("{}: operands {} and {} differ", op, a.shapeString(), b.shapeString()));
}

// Runs a float kernel on an f16/bf16/f32/f64 literal; `kernel` is called with
// typed pointers (float or double) and returns false if the op does not apply.
template <typename Kernel>
Literal floatMap(const Literal& a, const Literal* b, ElemType outType, Kernel kernel,
                 std::string_view opName) {
  Literal out = Literal::array(outType, a.dims());
  int64_t n = a.numElements();
  bool ok;
  if (a.type() == ElemType::F64) {
    ok = kernel(a.data<double>(), b ? b->data<double>() : nullptr, out.data<double>(), n);
  } else if (a.type() == ElemType::F32) {
    ok = kernel(a.data<float>(), b ? b->data<float>() : nullptr, out.data<float>(), n);
  } else {
    std::vector<float> x = loadAsF32(a), y, o(static_cast<size_t>(n));
    if (b) y = loadAsF32(*b);
    ok = kernel(x.data(), b ? y.data() : nullptr, o.data(), n);
    if (ok) storeFromF32(out, o.data());
  }
  if (!ok) throw EvalError(fmt::format("{} is not defined on {}", opName, elemTypeName(a.type())));
  return out;
}

// Total-order key of a float: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
int64_t totalKey32(float f) {
  int32_t s;
  std::memcpy(&s, &f, 4);
  return s < 0 ? static_cast<int64_t>(s ^ 0x7FFFFFFF) : s;
}
int64_t totalKey64(double d) {
  int64_t s;
  std::memcpy(&s, &d, 8);
  return s < 0 ? (s ^ INT64_MAX) : s;
}

template <typename T>
bool cmp(CompareDir dir, T x, T y) {
  switch (dir) {
    case CompareDir::EQ:
      return x == y;
    case CompareDir::NE:
      return x != y;
    case CompareDir::LT:
      return x < y;
    case CompareDir::LE:
      return x <= y;
    case CompareDir::GT:
      return x > y;
    case CompareDir::GE:
      return x >= y;
  }
  return false;
}

template <typename T, typename Key>
void compareLoop(CompareDir dir, const T* x, const T* y, uint8_t* o, int64_t n, Key key) {
  switch (dir) {
#define TPUSIM_CMP_CASE(D, OP)                                     \
  case CompareDir::D:                                              \
    for (int64_t i = 0; i < n; ++i) o[i] = key(x[i]) OP key(y[i]); \
    break;
    TPUSIM_CMP_CASE(EQ, ==)
    TPUSIM_CMP_CASE(NE, !=)
    TPUSIM_CMP_CASE(LT, <)
    TPUSIM_CMP_CASE(LE, <=)
    TPUSIM_CMP_CASE(GT, >)
    TPUSIM_CMP_CASE(GE, >=)
#undef TPUSIM_CMP_CASE
  }
}

}  // namespace

std::string_view unaryOpName(UnaryOp op) {
  static const char* const kNames[] = {"abs",
                                       "negate",
                                       "sign",
                                       "floor",
                                       "ceil",
                                       "round-nearest-even",
                                       "round-nearest-afz",
                                       "exponential",
                                       "exponential-minus-one",
                                       "log",
                                       "log-plus-one",
                                       "sqrt",
                                       "rsqrt",
                                       "cbrt",
                                       "tanh",
                                       "logistic",
                                       "sine",
                                       "cosine",
                                       "tan",
                                       "erf",
                                       "is-finite",
                                       "not",
                                       "popcnt",
                                       "count-leading-zeros",
                                       "copy"};
  return kNames[static_cast<int>(op)];
}

std::string_view binaryOpName(BinaryOp op) {
  static const char* const kNames[] = {"add",
                                       "subtract",
                                       "multiply",
                                       "divide",
                                       "remainder",
                                       "power",
                                       "maximum",
                                       "minimum",
                                       "atan2",
                                       "and",
                                       "or",
                                       "xor",
                                       "shift-left",
                                       "shift-right-logical",
                                       "shift-right-arithmetic"};
  return kNames[static_cast<int>(op)];
}

Literal unary(UnaryOp op, const Literal& a) {
  requireArray(a, unaryOpName(op));
  if (!isFloat(a.type())) return detail::intUnary(op, a);
  if (op == UnaryOp::IsFinite) {
    Literal out = Literal::array(ElemType::Pred, a.dims());
    for (int64_t i = 0, n = a.numElements(); i < n; ++i)
      out.data<uint8_t>()[i] = std::isfinite(a.getDouble(i)) ? 1 : 0;
    return out;
  }
  return floatMap(
      a, nullptr, a.type(),
      [op](const auto* x, const auto*, auto* o, int64_t n) {
        return detail::floatUnary(op, x, o, n);
      },
      unaryOpName(op));
}

Literal binary(BinaryOp op, const Literal& a, const Literal& b) {
  requireSame(a, b, binaryOpName(op));
  if (!isFloat(a.type())) return detail::intBinary(op, a, b);
  return floatMap(
      a, &b, a.type(),
      [op](const auto* x, const auto* y, auto* o, int64_t n) {
        return detail::floatBinary(op, x, y, o, n);
      },
      binaryOpName(op));
}

Literal compare(CompareDir dir, bool totalOrder, const Literal& a, const Literal& b) {
  requireSame(a, b, "compare");
  Literal out = Literal::array(ElemType::Pred, a.dims());
  int64_t n = a.numElements();
  uint8_t* o = out.data<uint8_t>();
  auto id = [](auto v) { return v; };
  switch (a.type()) {
    case ElemType::Pred:
      compareLoop(dir, a.data<uint8_t>(), b.data<uint8_t>(), o, n, id);
      break;
    case ElemType::F16:
    case ElemType::BF16: {
      std::vector<float> x = loadAsF32(a), y = loadAsF32(b);
      if (totalOrder)
        compareLoop(dir, x.data(), y.data(), o, n, totalKey32);
      else
        compareLoop(dir, x.data(), y.data(), o, n, id);
      break;
    }
    case ElemType::F32:
      if (totalOrder)
        compareLoop(dir, a.data<float>(), b.data<float>(), o, n, totalKey32);
      else
        compareLoop(dir, a.data<float>(), b.data<float>(), o, n, id);
      break;
    case ElemType::F64:
      if (totalOrder)
        compareLoop(dir, a.data<double>(), b.data<double>(), o, n, totalKey64);
      else
        compareLoop(dir, a.data<double>(), b.data<double>(), o, n, id);
      break;
    default:
      dispatchInt(a.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        compareLoop(dir, a.data<T>(), b.data<T>(), o, n, id);
      });
  }
  return out;
}

Literal select(const Literal& pred, const Literal& a, const Literal& b) {
  requireSame(a, b, "select");
  requireArray(pred, "select");
  if (pred.type() != ElemType::Pred)
    throw EvalError(fmt::format("select: predicate is {}, not pred", pred.shapeString()));
  bool scalarPred = pred.rank() == 0;
  if (!scalarPred && pred.dims() != a.dims())
    throw EvalError(
        fmt::format("select: predicate {} does not match {}", pred.shapeString(), a.shapeString()));
  Literal out = Literal::array(a.type(), a.dims());
  size_t es = elemSize(a.type());
  const uint8_t* p = pred.data<uint8_t>();
  for (int64_t i = 0, n = a.numElements(); i < n; ++i) {
    bool take = scalarPred ? p[0] : p[i];
    std::memcpy(out.raw() + i * es, (take ? a.raw() : b.raw()) + i * es, es);
  }
  return out;
}

Literal clamp(const Literal& lo, const Literal& x, const Literal& hi) {
  requireArray(x, "clamp");
  auto expand = [&](const Literal& bound) {
    requireArray(bound, "clamp");
    if (bound.type() != x.type())
      throw EvalError(fmt::format("clamp: bound {} does not match operand {}", bound.shapeString(),
                                  x.shapeString()));
    if (bound.dims() == x.dims()) return bound;
    if (bound.rank() != 0)
      throw EvalError(fmt::format("clamp: bound {} is neither a scalar nor the shape of {}",
                                  bound.shapeString(), x.shapeString()));
    Literal full = Literal::array(x.type(), x.dims());
    size_t es = elemSize(x.type());
    for (int64_t i = 0; i < x.numElements(); ++i) std::memcpy(full.raw() + i * es, bound.raw(), es);
    return full;
  };
  return binary(BinaryOp::Min, binary(BinaryOp::Max, x, expand(lo)), expand(hi));
}

}  // namespace tpusim::hlo::eval
