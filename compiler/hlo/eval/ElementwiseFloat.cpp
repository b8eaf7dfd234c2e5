// Float element-wise loops; one loop per op so each stays a plain, vectorizable loop.
#include <cmath>

#include "compiler/hlo/eval/ElementwiseKernels.h"
#include "compiler/hlo/eval/ScalarOps.h"

namespace tpusim::hlo::eval::detail {
using eval::maxNan;
using eval::minNan;
namespace {

template <typename F, typename Fn>
void map1(const F* a, F* out, int64_t n, Fn f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i]);
}
template <typename F, typename Fn>
void map2(const F* a, const F* b, F* out, int64_t n, Fn f) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

}  // namespace

template <typename F>
bool floatUnary(UnaryOp op, const F* a, F* o, int64_t n) {
  switch (op) {
    case UnaryOp::Abs:
      map1(a, o, n, [](F x) { return std::fabs(x); });
      return true;
    case UnaryOp::Negate:
      map1(a, o, n, [](F x) { return -x; });
      return true;
    case UnaryOp::Sign:
      map1(a, o, n, [](F x) { return std::isnan(x) || x == F(0) ? x : (x > F(0) ? F(1) : F(-1)); });
      return true;
    case UnaryOp::Floor:
      map1(a, o, n, [](F x) { return std::floor(x); });
      return true;
    case UnaryOp::Ceil:
      map1(a, o, n, [](F x) { return std::ceil(x); });
      return true;
    case UnaryOp::RoundNearestEven:
      map1(a, o, n, [](F x) { return std::nearbyint(x); });
      return true;
    case UnaryOp::RoundNearestAfz:
      map1(a, o, n, [](F x) { return std::round(x); });
      return true;
    case UnaryOp::Exp:
      map1(a, o, n, [](F x) { return std::exp(x); });
      return true;
    case UnaryOp::Expm1:
      map1(a, o, n, [](F x) { return std::expm1(x); });
      return true;
    case UnaryOp::Log:
      map1(a, o, n, [](F x) { return std::log(x); });
      return true;
    case UnaryOp::Log1p:
      map1(a, o, n, [](F x) { return std::log1p(x); });
      return true;
    case UnaryOp::Sqrt:
      map1(a, o, n, [](F x) { return std::sqrt(x); });
      return true;
    case UnaryOp::Rsqrt:
      map1(a, o, n, [](F x) { return F(1) / std::sqrt(x); });
      return true;
    case UnaryOp::Cbrt:
      map1(a, o, n, [](F x) { return std::cbrt(x); });
      return true;
    case UnaryOp::Tanh:
      map1(a, o, n, [](F x) { return std::tanh(x); });
      return true;
    case UnaryOp::Logistic:
      map1(a, o, n, [](F x) { return F(1) / (F(1) + std::exp(-x)); });
      return true;
    case UnaryOp::Sin:
      map1(a, o, n, [](F x) { return std::sin(x); });
      return true;
    case UnaryOp::Cos:
      map1(a, o, n, [](F x) { return std::cos(x); });
      return true;
    case UnaryOp::Tan:
      map1(a, o, n, [](F x) { return std::tan(x); });
      return true;
    case UnaryOp::Erf:
      map1(a, o, n, [](F x) { return std::erf(x); });
      return true;
    case UnaryOp::Copy:
      map1(a, o, n, [](F x) { return x; });
      return true;
    default:
      return false;
  }
}

template <typename F>
bool floatBinary(BinaryOp op, const F* a, const F* b, F* o, int64_t n) {
  switch (op) {
    case BinaryOp::Add:
      map2(a, b, o, n, [](F x, F y) { return x + y; });
      return true;
    case BinaryOp::Sub:
      map2(a, b, o, n, [](F x, F y) { return x - y; });
      return true;
    case BinaryOp::Mul:
      map2(a, b, o, n, [](F x, F y) { return x * y; });
      return true;
    case BinaryOp::Div:
      map2(a, b, o, n, [](F x, F y) { return x / y; });
      return true;
    case BinaryOp::Rem:
      map2(a, b, o, n, [](F x, F y) { return std::fmod(x, y); });
      return true;
    case BinaryOp::Pow:
      map2(a, b, o, n, [](F x, F y) { return std::pow(x, y); });
      return true;
    case BinaryOp::Max:
      map2(a, b, o, n, maxNan<F>);
      return true;
    case BinaryOp::Min:
      map2(a, b, o, n, minNan<F>);
      return true;
    case BinaryOp::Atan2:
      map2(a, b, o, n, [](F x, F y) { return std::atan2(x, y); });
      return true;
    default:
      return false;
  }
}

template bool floatUnary<float>(UnaryOp, const float*, float*, int64_t);
template bool floatUnary<double>(UnaryOp, const double*, double*, int64_t);
template bool floatBinary<float>(BinaryOp, const float*, const float*, float*, int64_t);
template bool floatBinary<double>(BinaryOp, const double*, const double*, double*, int64_t);

}  // namespace tpusim::hlo::eval::detail
