// Element-wise kernels on literals with XLA's numerics:
//   - f32 in f32, f64 in f64; f16 and bf16 computed in f32 and rounded to
//     nearest even after every op;
//   - integers wrap (two's complement); x / 0 = -1 (all ones for unsigned),
//     x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0; integer power with a
//     negative exponent is 0 unless the base is 1;
//   - shifts by an amount >= the bit width (amount read as unsigned) give 0,
//     or the sign fill for shift-right-arithmetic;
//   - maximum / minimum propagate NaN, and order -0 below +0;
//   - compare on floats is IEEE (NaN unordered) unless total order is asked for:
//     -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
// Operands of binary ops have equal dims; select and clamp accept scalars for
// the predicate / bounds. Each function throws EvalError for a type the op
// does not accept (e.g. `and` on f32).
#pragma once

#include <string_view>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

enum class UnaryOp {
  Abs,
  Negate,
  Sign,
  Floor,
  Ceil,
  RoundNearestEven,
  RoundNearestAfz,
  Exp,
  Expm1,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Cbrt,
  Tanh,
  Logistic,
  Sin,
  Cos,
  Tan,
  Erf,
  IsFinite,
  Not,
  PopCount,
  Clz,
  Copy
};
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Pow,
  Max,
  Min,
  Atan2,
  And,
  Or,
  Xor,
  Shl,
  ShrLogical,
  ShrArithmetic
};
enum class CompareDir { EQ, NE, LT, LE, GT, GE };

std::string_view unaryOpName(UnaryOp op);
std::string_view binaryOpName(BinaryOp op);

Literal unary(UnaryOp op, const Literal& a);
Literal binary(BinaryOp op, const Literal& a, const Literal& b);
Literal compare(CompareDir dir, bool totalOrder, const Literal& a, const Literal& b);
// pred may be a scalar or have the dims of a and b.
Literal select(const Literal& pred, const Literal& a, const Literal& b);
// lo and hi may be scalars or have the dims of x. Computes min(max(x, lo), hi).
Literal clamp(const Literal& lo, const Literal& x, const Literal& hi);

}  // namespace tpusim::hlo::eval
