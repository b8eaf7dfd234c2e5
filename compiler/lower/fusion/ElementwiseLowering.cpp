// Element-wise HLO ops as kernel-DSL array expressions. Ops the VPU has
// (add ... rsqrt, compare, select, converts) map one to one; a few others are
// composed from them in f32: logistic = 1 / (1 + exp(-x)), expm1 / log1p with
// a short series near 0, sign, floor / ceil through an integer convert, xor as
// (a | b) - (a & b), not as -x - 1, sine / cosine by reduction to [-pi/4, pi/4]
// (three-part pi/2, accurate to a few f32 ulps for |x| < 2^16) and polynomials.
// Anything else is CannotLower.
#include <fmt/format.h>

#include <cmath>

#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

using dsl::Array;
using hlo::HloOpcode;

namespace {

bool isFloat(dsl::DType t) { return t == dsl::F32 || t == dsl::BF16; }
bool isInt(dsl::DType t) { return t == dsl::S32 || t == dsl::S8; }

Array constant(double v, dsl::DType t) {
  if (t == dsl::BOOL)
    return dsl::full(1, 1, v != 0 ? 1 : 0, dsl::S32) != dsl::zeros(1, 1, dsl::S32);
  return dsl::full(1, 1, v, t);
}
Array toS32(const Array& m) {
  return dsl::where(m, dsl::full(1, 1, 1, dsl::S32), dsl::zeros(1, 1, dsl::S32));
}
// Composite float math runs in f32 and rounds to bf16 once at the end.
Array inF32(const Array& a) { return a.dtype() == dsl::F32 ? a : a.astype(dsl::F32); }
Array back(const Array& a, dsl::DType t) { return a.dtype() == t ? a : a.astype(t); }

// floor / ceil of f32 values: the integer convert truncates toward zero; values
// of magnitude >= 2^23 are integers already (and may not fit s32).
Array roundToward(const Array& xIn, bool up) {
  Array x = materialized(xIn);
  Array t = materialized(x.astype(dsl::S32).astype(dsl::F32));
  Array one = dsl::full(1, 1, 1.0, dsl::F32), zero = dsl::zeros(1, 1, dsl::F32);
  Array r = up ? t + dsl::where(t < x, one, zero) : t - dsl::where(t > x, one, zero);
  return dsl::where(dsl::abs(x) < dsl::full(1, 1, 8388608.0, dsl::F32), r, x);
}

// sin(x) (cosine: quarter = 1, i.e. sin(x + pi/2)) in f32: x = q pi/2 + r with
// |r| <= pi/4, then the sine or cosine polynomial of r by the quadrant q mod 4.
Array sinQuadrant(const Array& xIn, int quarter) {
  using dsl::full;
  auto c = [](double v) { return full(1, 1, v, dsl::F32); };
  // Stored between steps: every value below is read several times.
  Array x = materialized(xIn);
  Array q = materialized(roundToward(x * 0.63661977236758134 + 0.5, false));  // round(x / (pi/2))
  Array r = materialized(((x - q * 1.5703125) - q * 4.837512969970703125e-4) -
                         q * 7.54978995489188216e-8);
  Array r2 = materialized(r * r);
  Array sinp =
      r + r * r2 * (c(-1.6666654611e-1) + r2 * (c(8.3321608736e-3) + r2 * -1.9515295891e-4));
  Array cosp = (1.0 - r2 * 0.5) + r2 * r2 *
                                      (c(4.166664568298827e-2) +
                                       r2 * (c(-1.388731625493765e-3) + r2 * 2.443315711809948e-5));
  sinp = materialized(sinp);
  cosp = materialized(cosp);
  Array n = materialized((q.astype(dsl::S32) + quarter) & full(1, 1, 3, dsl::S32));
  Array v = dsl::where(n == full(1, 1, 0, dsl::S32), sinp,
                       dsl::where(n == full(1, 1, 1, dsl::S32), cosp,
                                  dsl::where(n == full(1, 1, 2, dsl::S32), -sinp, -cosp)));
  return v;
}

const char* unsupportedWhy(HloOpcode op) {
  switch (op) {
    case HloOpcode::Power:
    case HloOpcode::Remainder:
    case HloOpcode::Atan2:
    case HloOpcode::Cbrt:
    case HloOpcode::Erf:
    case HloOpcode::Tan:
    case HloOpcode::RoundNearestAfz:
    case HloOpcode::RoundNearestEven:
      return "the VPU has no instruction for it and the back end has no expansion yet";
    case HloOpcode::ShiftLeft:
    case HloOpcode::ShiftRightArithmetic:
    case HloOpcode::ShiftRightLogical:
    case HloOpcode::PopulationCount:
    case HloOpcode::CountLeadingZeros:
    case HloOpcode::BitcastConvert:
      return "bit manipulation is not exposed by the kernel DSL yet";
    case HloOpcode::Real:
    case HloOpcode::Imag:
    case HloOpcode::Complex:
      return "complex numbers are not supported";
    case HloOpcode::ReducePrecision:
    case HloOpcode::StochasticConvert:
      return "not supported by the back end";
    default:
      return nullptr;
  }
}

}  // namespace

bool elementwiseSupported(const HloInstruction& inst, std::string* why) {
  if (const char* w = unsupportedWhy(inst.opcode())) {
    *why = w;
    return false;
  }
  return true;
}

Array emitScalarConstant(const ComputeGraph& g, const HloInstruction& inst) {
  const hlo::Literal* lit = inst.literal();
  if (!lit || lit->elided || lit->size() != 1) g.fail(inst, "a constant without a value");
  dsl::DType t = dslType(g, inst, inst.shape().type);
  if (isInt(t) || t == dsl::BOOL) return constant(static_cast<double>(lit->getInt(0)), t);
  return constant(lit->getDouble(0), t);
}

Array emitElementwise(const ComputeGraph& g, const HloInstruction& inst,
                      const std::vector<Array>& ops) {
  const HloOpcode op = inst.opcode();
  std::string why;
  if (!elementwiseSupported(inst, &why)) g.fail(inst, why);
  const dsl::DType t = dslType(g, inst, inst.shape().type);
  const Array& a = ops.at(0);
  const dsl::DType at = a.dtype();
  auto needFloat = [&] {
    if (!isFloat(at)) g.fail(inst, fmt::format("needs a floating-point operand"));
  };
  auto needNumber = [&] {
    if (at == dsl::BOOL) g.fail(inst, "arithmetic on pred is not supported");
  };
  try {
    switch (op) {
      case HloOpcode::Add:
        needNumber();
        return a + ops[1];
      case HloOpcode::Subtract:
        needNumber();
        return a - ops[1];
      case HloOpcode::Multiply:
        needNumber();
        return a * ops[1];
      case HloOpcode::Divide:
        if (!isFloat(at))
          g.fail(inst, "integer division is not supported (the VPU has no divider)");
        return a / ops[1];
      case HloOpcode::Maximum:
        if (at == dsl::BOOL) return a | ops[1];
        return dsl::maximum(a, ops[1]);
      case HloOpcode::Minimum:
        if (at == dsl::BOOL) return a & ops[1];
        return dsl::minimum(a, ops[1]);
      case HloOpcode::And:
        return a & ops[1];
      case HloOpcode::Or:
        return a | ops[1];
      case HloOpcode::Xor:
        if (at == dsl::BOOL) return toS32(a) != toS32(ops[1]);
        return (a | ops[1]) - (a & ops[1]);
      case HloOpcode::Not:
        if (at == dsl::BOOL) return toS32(a) == dsl::zeros(1, 1, dsl::S32);
        return -a - 1.0;
      case HloOpcode::Negate:
        needNumber();
        return -a;
      case HloOpcode::Abs:
        needNumber();
        return dsl::abs(a);
      case HloOpcode::Sign: {
        needNumber();
        Array zero = constant(0, at);
        return dsl::where(a > zero, constant(1, at), dsl::where(a < zero, constant(-1, at), a));
      }
      case HloOpcode::Exp:
        needFloat();
        return dsl::exp(a);
      case HloOpcode::Log:
        needFloat();
        return dsl::log(a);
      case HloOpcode::Tanh:
        needFloat();
        return dsl::tanh(a);
      case HloOpcode::Sqrt:
        needFloat();
        return dsl::sqrt(a);
      case HloOpcode::Rsqrt:
        needFloat();
        return dsl::rsqrt(a);
      case HloOpcode::Logistic: {
        needFloat();
        Array x = inF32(a);
        return back(dsl::reciprocal(1.0 + dsl::exp(-x)), at);
      }
      case HloOpcode::Expm1: {
        needFloat();
        Array x = materialized(inF32(a));
        Array small = dsl::abs(x) < dsl::full(1, 1, 1e-3, dsl::F32);
        return back(dsl::where(small, x + x * x * 0.5, dsl::exp(x) - 1.0), at);
      }
      case HloOpcode::Log1p: {
        needFloat();
        Array x = materialized(inF32(a));
        Array small = dsl::abs(x) < dsl::full(1, 1, 1e-4, dsl::F32);
        return back(dsl::where(small, x - x * x * 0.5, dsl::log(x + 1.0)), at);
      }
      case HloOpcode::Floor:
      case HloOpcode::Ceil:
        needFloat();
        return back(roundToward(inF32(a), op == HloOpcode::Ceil), at);
      case HloOpcode::Sine:
      case HloOpcode::Cosine:
        needFloat();
        return back(sinQuadrant(inF32(a), op == HloOpcode::Cosine ? 1 : 0), at);
      case HloOpcode::IsFinite:
        needFloat();
        return dsl::abs(inF32(a)) < dsl::full(1, 1, INFINITY, dsl::F32);
      case HloOpcode::Clamp: {
        // clamp(lo, x, hi)
        Array x = ops[1];
        if (x.dtype() == dsl::BOOL) g.fail(inst, "clamp of pred is not supported");
        return dsl::minimum(dsl::maximum(x, ops[0]), ops[2]);
      }
      case HloOpcode::Select:
        return dsl::where(a, ops[1], ops[2]);
      case HloOpcode::Compare: {
        Array x = a, y = ops[1];
        if (at == dsl::BOOL) {
          x = toS32(x);
          y = toS32(y);
        }
        if (!inst.attrs().direction) g.fail(inst, "compare without a direction");
        switch (*inst.attrs().direction) {
          case hlo::ComparisonDirection::EQ:
            return x == y;
          case hlo::ComparisonDirection::NE:
            return x != y;
          case hlo::ComparisonDirection::LT:
            return x < y;
          case hlo::ComparisonDirection::LE:
            return x <= y;
          case hlo::ComparisonDirection::GT:
            return x > y;
          case hlo::ComparisonDirection::GE:
            return x >= y;
        }
        break;
      }
      case HloOpcode::Convert:
        if (at == t) return a;
        if (at == dsl::BOOL) return dsl::where(a, constant(1, t), constant(0, t));
        if (t == dsl::BOOL) return a != constant(0, at);
        return a.astype(t);
      default:
        break;
    }
  } catch (const dsl::Error& e) {
    g.fail(inst, fmt::format("the kernel DSL rejects it: {}", e.what()));
  }
  g.fail(inst, "not supported inside a kernel");
}

}  // namespace tpusim::lower::detail
