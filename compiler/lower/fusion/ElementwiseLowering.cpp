// Element-wise HLO ops as kernel-DSL array expressions. Ops the VPU has
// (add ... rsqrt, compare, select, converts, bitwise ops, shifts) map one to
// one; logistic = 0.5 + 0.5 tanh(x / 2), expm1 / log1p with a short series near 0
// and sign are composed here; the longer expansions (rounding, trigonometry,
// power, remainder, atan2, erf, cbrt, integer division, popcnt, clz, u32
// compares and converts) are in ElementwiseMath.h. u32 values live in s32
// words: the ops whose result depends on signedness look at the HLO type.
// Anything else is CannotLower.
#include <fmt/format.h>

#include <cmath>

#include "compiler/lower/fusion/ElementwiseMath.h"
#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

using dsl::Array;
using hlo::HloOpcode;

namespace {

bool isFloat(dsl::DType t) { return t == dsl::F32 || t == dsl::BF16 || t == dsl::F16; }
bool isNarrowInt(dsl::DType t) {
  return t == dsl::S8 || t == dsl::S16 || t == dsl::U16 || t == dsl::U8;
}
bool isInt(dsl::DType t) { return t == dsl::S32 || isNarrowInt(t); }
int bitsOf(dsl::DType t) { return t == dsl::S8 || t == dsl::U8 ? 8 : 16; }

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

bool isUnsigned(const HloInstruction& i) { return i.shape().type == hlo::PrimitiveType::U32; }

Array ci(int32_t v) { return dsl::full(1, 1, v, dsl::S32); }

// The low 8 bits of an s32 word as s8, as XLA wraps (two's-complement
// truncation); the VPU's s32 -> s8 convert saturates, so the value is brought
// into range first.
Array wrapToS8(const Array& x) {
  return dsl::shift_right_arithmetic(dsl::shift_left(x, ci(24)), ci(24)).astype(dsl::S8);
}

// s8, s16, u16 and u8 integer arithmetic is computed on s32 words (sign- or
// zero-extended) and wrapped back (the DSL's s8 arithmetic saturates, XLA's
// wraps). Ops that look at the bits as unsigned take a signed operand
// zero-extended.
bool computesNarrowInS32(HloOpcode op) {
  switch (op) {
    case HloOpcode::Add:
    case HloOpcode::Subtract:
    case HloOpcode::Multiply:
    case HloOpcode::Divide:
    case HloOpcode::Remainder:
    case HloOpcode::Power:
    case HloOpcode::Negate:
    case HloOpcode::Abs:
    case HloOpcode::Sign:
    case HloOpcode::And:
    case HloOpcode::Or:
    case HloOpcode::Xor:
    case HloOpcode::Not:
    case HloOpcode::ShiftLeft:
    case HloOpcode::ShiftRightLogical:
    case HloOpcode::ShiftRightArithmetic:
    case HloOpcode::PopulationCount:
    case HloOpcode::CountLeadingZeros:
      return true;
    default:
      return false;
  }
}
bool readsNarrowUnsigned(HloOpcode op) {
  return op == HloOpcode::ShiftRightLogical || op == HloOpcode::PopulationCount ||
         op == HloOpcode::CountLeadingZeros;
}

const char* unsupportedWhy(HloOpcode op) {
  switch (op) {
    case HloOpcode::BitcastConvert:
      return "bitcast-convert is not lowered yet";
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

namespace {

Array emitOnWords(const ComputeGraph& g, const HloInstruction& inst, const std::vector<Array>& ops);

}  // namespace

Array emitElementwise(const ComputeGraph& g, const HloInstruction& inst,
                      const std::vector<Array>& ops) {
  std::string why;
  if (!elementwiseSupported(inst, &why)) g.fail(inst, why);
  const HloOpcode op = inst.opcode();
  const dsl::DType narrow = ops.empty() ? dsl::S32 : ops[0].dtype();
  if (isNarrowInt(narrow) && computesNarrowInS32(op)) {
    std::vector<Array> wide;
    const int bits = bitsOf(narrow);
    const bool isSigned = narrow == dsl::S8 || narrow == dsl::S16;
    try {
      for (const Array& o : ops) {
        Array w = isNarrowInt(o.dtype()) ? o.astype(dsl::S32) : o;
        // The shift amount is never zero-extended: amounts past the width (or
        // negative, as unsigned) shift every bit out either way.
        if (isSigned && readsNarrowUnsigned(op) && wide.empty())
          w = w & ci(int32_t((1u << bits) - 1));
        // An arithmetic shift reads the top bit of u8 / u16 as a sign, as XLA does.
        if (!isSigned && op == HloOpcode::ShiftRightArithmetic && wide.empty())
          w = dsl::shift_right_arithmetic(dsl::shift_left(w, ci(32 - bits)), ci(32 - bits));
        wide.push_back(w);
      }
      Array r = emitOnWords(g, inst, wide);
      if (op == HloOpcode::CountLeadingZeros) r = r - ci(32 - bits);
      return narrow == dsl::S8 ? wrapToS8(r) : r.astype(narrow);
    } catch (const dsl::Error& e) {
      g.fail(inst, fmt::format("the kernel DSL rejects it: {}", e.what()));
    }
  }
  return emitOnWords(g, inst, ops);
}

namespace {

Array emitOnWords(const ComputeGraph& g, const HloInstruction& inst,
                  const std::vector<Array>& ops) {
  const HloOpcode op = inst.opcode();
  const dsl::DType t = dslType(g, inst, inst.shape().type);
  const Array& a = ops.at(0);
  const dsl::DType at = a.dtype();
  auto needFloat = [&] {
    if (!isFloat(at)) g.fail(inst, fmt::format("needs a floating-point operand"));
  };
  auto needNumber = [&] {
    if (at == dsl::BOOL) g.fail(inst, "arithmetic on pred is not supported");
  };
  const bool uns = isUnsigned(*inst.operand(0));
  auto needInt = [&] {
    if (at != dsl::S32) g.fail(inst, "bit operations need integers");
  };
  auto unary = [&](Array (*f)(const Array&)) {
    needFloat();
    return back(f(inF32(a)), at);
  };
  auto binaryF = [&](Array (*f)(const Array&, const Array&)) {
    needFloat();
    return back(f(inF32(a), inF32(ops[1])), at);
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
        needNumber();
        if (at == dsl::S32) return math::integerDivide(a, ops[1], uns);
        return a / ops[1];
      case HloOpcode::Remainder:
        needNumber();
        if (at == dsl::S32) return math::integerRemainder(a, ops[1], uns);
        return binaryF(math::remainder);
      case HloOpcode::Power:
        needNumber();
        if (at == dsl::S32) return math::integerPower(a, ops[1], uns);
        return binaryF(math::power);
      case HloOpcode::Atan2:
        return binaryF(math::atan2);
      case HloOpcode::Maximum:
      case HloOpcode::Minimum: {
        bool mx = op == HloOpcode::Maximum;
        if (at == dsl::BOOL) return mx ? a | ops[1] : a & ops[1];
        if (uns)
          return math::biased(mx ? dsl::maximum(math::biased(a), math::biased(ops[1]))
                                 : dsl::minimum(math::biased(a), math::biased(ops[1])));
        return mx ? dsl::maximum(a, ops[1]) : dsl::minimum(a, ops[1]);
      }
      case HloOpcode::And:
        return a & ops[1];
      case HloOpcode::Or:
        return a | ops[1];
      case HloOpcode::Xor:
        if (at == dsl::BOOL) return toS32(a) != toS32(ops[1]);
        return a ^ ops[1];
      case HloOpcode::Not:
        if (at == dsl::BOOL) return toS32(a) == dsl::zeros(1, 1, dsl::S32);
        return a ^ constant(-1, at);
      case HloOpcode::ShiftLeft:
      case HloOpcode::ShiftRightLogical:
      case HloOpcode::ShiftRightArithmetic:
        needInt();
        return math::shift(a, ops[1],
                           op == HloOpcode::ShiftLeft           ? 0
                           : op == HloOpcode::ShiftRightLogical ? 1
                                                                : 2);
      case HloOpcode::PopulationCount:
        needInt();
        return math::popcount(a);
      case HloOpcode::CountLeadingZeros:
        needInt();
        return math::countLeadingZeros(a);
      case HloOpcode::Negate:
        needNumber();
        return -a;
      case HloOpcode::Abs:
        needNumber();
        return uns ? a : dsl::abs(a);
      case HloOpcode::Sign: {
        needNumber();
        Array zero = constant(0, at);
        if (uns) return dsl::where(a != zero, constant(1, at), zero);
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
        // 1 / (1 + exp(-x)) would take two EUP ops (exp, reciprocal) a
        // vreg; 0.5 + 0.5 tanh(x / 2), the same function, takes one (XLA's
        // LogisticExpansionType::kTanh): SwiGLU's sigmoid runs at the EUP's
        // issue interval.
        Array x = inF32(a);
        return back(0.5 + dsl::tanh(x * 0.5) * 0.5, at);
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
        return back(math::floorOrCeil(inF32(a), op == HloOpcode::Ceil), at);
      case HloOpcode::RoundNearestEven:
        return unary(math::roundNearestEven);
      case HloOpcode::RoundNearestAfz:
        return unary(math::roundNearestAfz);
      case HloOpcode::Sine:
      case HloOpcode::Cosine:
        needFloat();
        return back(math::sinOrCos(inF32(a), op == HloOpcode::Cosine), at);
      case HloOpcode::Tan:
        return unary(math::tan);
      case HloOpcode::Erf:
        return unary(math::erf);
      case HloOpcode::Cbrt:
        return unary(math::cbrt);
      case HloOpcode::IsFinite:
        needFloat();
        return dsl::abs(inF32(a)) < dsl::full(1, 1, INFINITY, dsl::F32);
      case HloOpcode::Clamp: {
        // clamp(lo, x, hi)
        Array x = ops[1];
        if (x.dtype() == dsl::BOOL) g.fail(inst, "clamp of pred is not supported");
        if (isUnsigned(*inst.operand(1)))
          return math::biased(dsl::minimum(dsl::maximum(math::biased(x), math::biased(ops[0])),
                                           math::biased(ops[2])));
        return dsl::minimum(dsl::maximum(x, ops[0]), ops[2]);
      }
      case HloOpcode::Select:
        // Masks are not values a select can pick: pick their 0 / 1 words.
        if (ops[1].dtype() == dsl::BOOL)
          return dsl::where(a, toS32(ops[1]), toS32(ops[2])) != dsl::zeros(1, 1, dsl::S32);
        return dsl::where(a, ops[1], ops[2]);
      case HloOpcode::Compare: {
        Array x = a, y = ops[1];
        if (at == dsl::BOOL) {
          x = toS32(x);
          y = toS32(y);
        }
        if (!inst.attrs().direction) g.fail(inst, "compare without a direction");
        if (uns) return math::compareUnsigned(x, y, int(*inst.attrs().direction));
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
      case HloOpcode::Convert: {
        const bool toUnsigned = isUnsigned(inst);
        if (at == dsl::BOOL) return dsl::where(a, constant(1, t), constant(0, t));
        if (t == dsl::BOOL) return a != constant(0, at);
        // u32 <-> float: the VPU converts s32 only.
        if (uns && isFloat(t)) return back(math::unsignedToF32(a), t);
        if (toUnsigned && isFloat(at)) return math::f32ToUnsigned(inF32(a));
        if (at == t) return a;  // also s32 <-> u32: the same bits
        // Integer narrowing wraps (XLA); float -> s8 saturates to the s8
        // range (f32 -> s32 -> s8, both converts saturate), as XLA defines it.
        if (isInt(at) && t == dsl::S8) return wrapToS8(at == dsl::S32 ? a : a.astype(dsl::S32));
        if (isFloat(at) && isNarrowInt(t) && t != dsl::S8) {
          // Saturate to the narrow range (f32 -> s32 saturates, NaN -> 0), then take its bits.
          const int bits = bitsOf(t);
          const bool isSigned = t == dsl::S16;
          Array w = inF32(a).astype(dsl::S32);
          w = dsl::minimum(dsl::maximum(w, ci(isSigned ? -(1 << (bits - 1)) : 0)),
                           ci(isSigned ? (1 << (bits - 1)) - 1 : (1 << bits) - 1));
          return w.astype(t);
        }
        return a.astype(t);
      }
      default:
        break;
    }
  } catch (const dsl::Error& e) {
    g.fail(inst, fmt::format("the kernel DSL rejects it: {}", e.what()));
  }
  g.fail(inst, "not supported inside a kernel");
}

}  // namespace

}  // namespace tpusim::lower::detail
