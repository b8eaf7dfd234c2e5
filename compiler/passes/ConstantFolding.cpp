// Constant folding: an element-wise instruction (or reshape) whose operands
// are all constants is replaced by a constant holding its value, when the
// result has at most kMaxElements elements. The arithmetic is done here for
// the simple cases (f32 in float, f64 in double, bf16/f16 computed in float
// and rounded, integers with wraparound); anything else is left alone.
#include <cmath>

#include "compiler/hlo/HloModule.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::PrimitiveType;

constexpr int64_t kMaxElements = 1024;

// Element i of operand `op`, which may be a scalar used against an array.
struct Operand {
  const Literal* lit;
  double f(int64_t i) const { return lit->getDouble(lit->size() == 1 ? 0 : i); }
  int64_t s(int64_t i) const { return lit->getInt(lit->size() == 1 ? 0 : i); }
  uint64_t u(int64_t i) const { return lit->getUnsigned(lit->size() == 1 ? 0 : i); }
};

std::optional<double> floatOp(HloOpcode op, PrimitiveType t, double a, double b) {
  bool f64 = t == PrimitiveType::F64;
  auto r = [&](double v) { return f64 ? v : static_cast<double>(static_cast<float>(v)); };
  float fa = static_cast<float>(a), fb = static_cast<float>(b);
  switch (op) {
    case HloOpcode::Add:
      return r(a + b);
    case HloOpcode::Subtract:
      return r(a - b);
    case HloOpcode::Multiply:
      return r(a * b);
    case HloOpcode::Divide:
      return r(a / b);
    case HloOpcode::Maximum:
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case HloOpcode::Minimum:
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    case HloOpcode::Negate:
      return -a;
    case HloOpcode::Abs:
      return std::fabs(a);
    case HloOpcode::Sqrt:
      return f64 ? std::sqrt(a) : std::sqrt(fa);
    case HloOpcode::Rsqrt:
      return f64 ? 1 / std::sqrt(a) : 1.0f / std::sqrt(fa);
    case HloOpcode::Exp:
      return f64 ? std::exp(a) : std::exp(fa);
    case HloOpcode::Log:
      return f64 ? std::log(a) : std::log(fa);
    case HloOpcode::Tanh:
      return f64 ? std::tanh(a) : std::tanh(fa);
    case HloOpcode::Floor:
      return std::floor(a);
    case HloOpcode::Ceil:
      return std::ceil(a);
    case HloOpcode::Power:
      return f64 ? std::pow(a, b) : std::pow(fa, fb);
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> intOp(HloOpcode op, PrimitiveType t, const Operand& x, const Operand& y,
                             int64_t i) {
  bool isUnsigned = hlo::isUnsignedIntegralType(t) || t == PrimitiveType::Pred;
  uint64_t ua = x.u(i), ub = y.lit ? y.u(i) : 0;
  int64_t a = x.s(i), b = y.lit ? y.s(i) : 0;
  switch (op) {
    case HloOpcode::Add:
      return static_cast<int64_t>(ua + ub);
    case HloOpcode::Subtract:
      return static_cast<int64_t>(ua - ub);
    case HloOpcode::Multiply:
      return static_cast<int64_t>(ua * ub);
    case HloOpcode::Negate:
      return static_cast<int64_t>(0 - ua);
    case HloOpcode::And:
      return a & b;
    case HloOpcode::Or:
      return a | b;
    case HloOpcode::Xor:
      return a ^ b;
    case HloOpcode::Not:
      return t == PrimitiveType::Pred ? !a : ~a;
    case HloOpcode::Maximum:
      return isUnsigned ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b);
    case HloOpcode::Minimum:
      return isUnsigned ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b);
    case HloOpcode::Abs:
      return a < 0 ? static_cast<int64_t>(0 - ua) : a;
    case HloOpcode::Divide:
      // XLA: x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN.
      if (b == 0) return -1;
      if (isUnsigned) return static_cast<int64_t>(ua / ub);
      if (b == -1) return static_cast<int64_t>(0 - ua);
      return a / b;
    default:
      return std::nullopt;
  }
}

bool compare(hlo::ComparisonDirection d, double a, double b) {
  switch (d) {
    case hlo::ComparisonDirection::EQ:
      return a == b;
    case hlo::ComparisonDirection::NE:
      return a != b;
    case hlo::ComparisonDirection::LT:
      return a < b;
    case hlo::ComparisonDirection::LE:
      return a <= b;
    case hlo::ComparisonDirection::GT:
      return a > b;
    case hlo::ComparisonDirection::GE:
      return a >= b;
  }
  return false;
}

template <typename T>
bool compareT(hlo::ComparisonDirection d, T a, T b) {
  switch (d) {
    case hlo::ComparisonDirection::EQ:
      return a == b;
    case hlo::ComparisonDirection::NE:
      return a != b;
    case hlo::ComparisonDirection::LT:
      return a < b;
    case hlo::ComparisonDirection::LE:
      return a <= b;
    case hlo::ComparisonDirection::GT:
      return a > b;
    case hlo::ComparisonDirection::GE:
      return a >= b;
  }
  return false;
}

std::optional<Literal> fold(const HloInstruction& inst) {
  const hlo::Shape& shape = inst.shape();
  if (!shape.isArray() || shape.elementCount() > kMaxElements) return std::nullopt;
  if (!hlo::isFloatingType(shape.type) && !hlo::isIntegralType(shape.type) &&
      shape.type != PrimitiveType::Pred)
    return std::nullopt;
  if (hlo::isF8Type(shape.type)) return std::nullopt;
  std::vector<Operand> ops;
  for (const HloInstruction* op : inst.operands()) {
    const Literal* l = op->literal();
    if (op->opcode() != HloOpcode::Constant || !l || l->elided || l->shape.isTuple() ||
        hlo::isF8Type(l->shape.type) || hlo::isComplexType(l->shape.type))
      return std::nullopt;
    if (l->size() != 1 && l->size() != shape.elementCount()) return std::nullopt;
    ops.push_back({l});
  }
  if (ops.empty()) return std::nullopt;
  Literal out = Literal::zeros(shape);
  HloOpcode opc = inst.opcode();
  PrimitiveType inType = ops[0].lit->shape.type;
  for (int64_t i = 0; i < out.size(); ++i) {
    if (opc == HloOpcode::Reshape || opc == HloOpcode::Copy || opc == HloOpcode::Convert) {
      if (opc == HloOpcode::Convert && hlo::isFloatingType(inType) &&
          !hlo::isFloatingType(shape.type))
        return std::nullopt;  // float -> int saturation rules: left to the evaluator
      if (hlo::isFloatingType(inType))
        out.setDouble(i, ops[0].f(i));
      else if (hlo::isFloatingType(shape.type) && hlo::isUnsignedIntegralType(inType))
        out.setDouble(i, static_cast<double>(ops[0].u(i)));
      else
        out.setInt(i, ops[0].s(i));
      continue;
    }
    if (opc == HloOpcode::Select) {
      if (ops.size() != 3) return std::nullopt;
      const Operand& pick = ops[0].s(i) ? ops[1] : ops[2];
      if (out.usesFloats())
        out.setDouble(i, pick.f(i));
      else
        out.setInt(i, pick.s(i));
      continue;
    }
    if (opc == HloOpcode::Compare) {
      if (ops.size() != 2 || !inst.attrs().direction) return std::nullopt;
      auto d = *inst.attrs().direction;
      bool r = hlo::isFloatingType(inType)           ? compare(d, ops[0].f(i), ops[1].f(i))
               : hlo::isUnsignedIntegralType(inType) ? compareT(d, ops[0].u(i), ops[1].u(i))
                                                     : compareT(d, ops[0].s(i), ops[1].s(i));
      out.setInt(i, r);
      continue;
    }
    if (ops.size() > 2 || !(hlo::isElementwiseUnary(opc) || hlo::isElementwiseBinary(opc)))
      return std::nullopt;
    Operand none{nullptr};
    const Operand& y = ops.size() == 2 ? ops[1] : none;
    if (out.usesFloats()) {
      auto v = floatOp(opc, shape.type, ops[0].f(i), y.lit ? y.f(i) : 0.0);
      if (!v) return std::nullopt;
      out.setDouble(i, *v);
    } else {
      auto v = intOp(opc, shape.type, ops[0], y, i);
      if (!v) return std::nullopt;
      out.setInt(i, *v);
    }
  }
  return out;
}

class ConstantFoldingPass : public HloPass {
 public:
  std::string_view name() const override { return "constant-folding"; }
  bool run(hlo::HloModule& module) override {
    bool changed = false;
    for (const auto& comp : module.computations()) {
      bool any = false;
      for (HloInstruction* inst : comp->postOrder()) {
        if (inst->opcode() == HloOpcode::Constant || inst->hasSideEffect()) continue;
        HloOpcode op = inst->opcode();
        if (!hlo::isElementwise(op) && op != HloOpcode::Reshape) continue;
        auto lit = fold(*inst);
        if (!lit) continue;
        HloInstruction* c =
            addNew(comp.get(), HloOpcode::Constant, inst->name() + ".folded", inst->shape(), {});
        lit->shape = inst->shape();
        c->attrs().literal = std::move(*lit);
        c->attrs().metadata = inst->attrs().metadata;
        inst->replaceAllUsesWith(c);
        any = true;
      }
      if (any) comp->removeDeadInstructions();
      changed |= any;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<HloPass> createConstantFoldingPass() {
  return std::make_unique<ConstantFoldingPass>();
}

}  // namespace tpusim::passes
