// Algebraic simplification, applied until nothing changes:
//   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1          -> x
//   reshape(x) to x's own shape, reshape(reshape(x)) -> x / reshape(x)
//   transpose(transpose(x)) -> transpose(x) with the composed permutation (x if identity)
//   broadcast(x) with x's own shape and identity dims -> x
//   broadcast(broadcast of a scalar constant)        -> broadcast of the scalar
//   convert(x) to x's type -> x;  convert(convert(x)) where the inner one is
//   exact (a widening) -> convert(x) (x itself when the types match);
//   convert(pad(x, c)) to a type no wider, the pad used only there
//   -> pad(convert(x), convert(c)): the convert then fuses into x's producer
//   and the pad moves the narrower type (the training step's logits gradient,
//   padded in f32 then converted to bf16: two passes over 1 GiB become one
//   pass over 0.5 GiB).
//   concat(lo * A - hi * B, hi * A + lo * B), lo / hi the halves of x's last
//   dimension (the rotary embedding) -> x * concat(A, A) + concat(hi, lo) *
//   concat(-B, B), bit for bit (RotateHalf.cpp)
//   concat(f(x), f(x)) for a unary element-wise f -> f(concat(x, x))
//   op(reshape(a), reshape(b), ...) -> reshape(op(a, b, ...)) for an
//   element-wise op whose operands are all reshapes of one shape, each used
//   only there: dot-canonicalize leaves a reshape after every dot it
//   flattens, and a reshape is a fusion barrier, so the sum of two dots
//   (the backward FFN's two input gradients) was a kernel of its own; on the
//   dots' shape it joins a dot's epilogue. Beside a dot's reshape, another
//   operand of op's shape (a residual) is viewed in the dot's shape instead.
// "0" and "1" are constants whose elements all have that value, or broadcasts
// of them. Instructions left unused are removed.
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"
#include "compiler/passes/RotateHalf.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// Can every value of `from` be represented exactly in `to`?
bool exactWidening(PrimitiveType from, PrimitiveType to) {
  using hlo::bitWidth;
  if (from == to || from == PrimitiveType::Pred) return true;
  auto mantissa = [](PrimitiveType t) {
    switch (t) {
      case PrimitiveType::F16:
        return 11;
      case PrimitiveType::BF16:
        return 8;
      case PrimitiveType::F32:
        return 24;
      case PrimitiveType::F64:
        return 53;
      default:
        return 0;
    }
  };
  bool fromS = hlo::isSignedIntegralType(from), fromU = hlo::isUnsignedIntegralType(from);
  bool toS = hlo::isSignedIntegralType(to), toU = hlo::isUnsignedIntegralType(to);
  if (fromS && toS) return bitWidth(to) >= bitWidth(from);
  if (fromU && toU) return bitWidth(to) >= bitWidth(from);
  if (fromU && toS) return bitWidth(to) > bitWidth(from);
  if ((fromS || fromU) && mantissa(to)) return mantissa(to) >= bitWidth(from) - (fromS ? 1 : 0);
  if (mantissa(from) && mantissa(to)) {
    if (from == PrimitiveType::F16 && to == PrimitiveType::BF16) return false;
    if (from == PrimitiveType::BF16 && to == PrimitiveType::F16) return false;
    return mantissa(to) >= mantissa(from);
  }
  return false;
}

bool isValue(const HloInstruction* inst, double v) {
  auto s = splatValue(inst);
  return s && *s == v;
}

class AlgebraicSimplifierPass : public HloPass {
 public:
  std::string_view name() const override { return "algsimp"; }

  bool run(hlo::HloModule& module) override {
    bool changed = false;
    for (const auto& comp : module.computations()) {
      for (int round = 0; round < 16; ++round) {
        bool any = false;
        for (HloInstruction* inst : comp->postOrder()) any |= simplify(comp.get(), inst);
        if (!any) break;
        changed = true;
        comp->removeDeadInstructions();
      }
    }
    return changed;
  }

 private:
  // Replaces `inst` by `by` if their shapes agree (layouts ignored).
  static bool replace(HloInstruction* inst, HloInstruction* by) {
    if (inst == by || !inst->shape().compatible(by->shape())) return false;
    inst->replaceAllUsesWith(by);
    return true;
  }

  // convert(pad(x, c)) -> pad(convert(x), convert(c)), named after the convert.
  static bool convertBeforePad(hlo::HloComputation* comp, HloInstruction* convert,
                               HloInstruction* pad) {
    PrimitiveType to = convert->shape().type;
    auto narrowed = [&](HloInstruction* v, const std::string& name) {
      auto c = HloInstruction::create(HloOpcode::Convert, name, v->shape().withType(to), {v});
      c->attrs().metadata = convert->attrs().metadata;
      c->setSourceLine(convert->sourceLine());
      return comp->addInstruction(std::move(c));
    };
    HloInstruction* x = narrowed(pad->operand(0), convert->name() + ".operand");
    HloInstruction* c = narrowed(pad->operand(1), convert->name() + ".padding");
    auto p =
        pad->cloneWithOperands(pad->name() + "." + std::string(hlo::primitiveTypeName(to)), {x, c});
    p->setShape(pad->shape().withType(to));
    return replace(convert, comp->addInstruction(std::move(p)));
  }

  // Is `s`'s layout the default one (a reshape of it is then a bitcast)?
  static bool defaultLayout(const hlo::Shape& s) {
    auto m2m = s.minorToMajorOrDefault();
    for (size_t i = 0; i < m2m.size(); ++i)
      if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
    return true;
  }

  // op(reshape(a), reshape(b), ...) -> reshape(op(a, b, ...)), named after op.
  // Also op(reshape(dot), y, ...) with y of op's shape (a residual added to a
  // flattened dot's result): y is viewed in the dot's shape (a bitcast, or y's
  // own source when y is a reshape of that shape), so the add joins the dot's
  // epilogue instead of reading the dot's result back from HBM.
  static bool elementwiseBeforeReshape(hlo::HloComputation* comp, HloInstruction* inst) {
    if (!hlo::isElementwise(inst->opcode()) || inst->operandCount() < 2 || !inst->shape().isArray())
      return false;
    auto movable = [](const HloInstruction* o) {
      return o->opcode() == HloOpcode::Reshape && o->operandCount() == 1 && o->userCount() == 1 &&
             o->operand(0)->shape().isArray();
    };
    const hlo::Shape* from = nullptr;
    bool fromDot = false;
    for (HloInstruction* o : inst->operands()) {
      if (!movable(o)) continue;
      const hlo::Shape& s = o->operand(0)->shape();
      if (from && !from->sameDims(s)) return false;
      from = &s;
      fromDot |= o->operand(0)->opcode() == HloOpcode::Dot;
    }
    if (!from || from->sameDims(inst->shape())) return false;
    std::vector<HloInstruction*> sources;
    for (HloInstruction* o : inst->operands()) {
      if (movable(o)) {
        sources.push_back(o->operand(0));
        continue;
      }
      // Another operand: only beside a dot's reshape, of op's dims, bitcast to
      // `from`; not a broadcast or constant (the view would stop it fusing).
      if (!fromDot || o->opcode() == HloOpcode::Broadcast || o->opcode() == HloOpcode::Constant ||
          o->opcode() == HloOpcode::Iota || !o->shape().isArray() ||
          !o->shape().sameDims(inst->shape()) || !defaultLayout(o->shape()) ||
          !defaultLayout(*from))
        return false;
      if (o->opcode() == HloOpcode::Reshape && o->operand(0)->shape().sameDims(*from)) {
        sources.push_back(o->operand(0));
        continue;
      }
      hlo::Shape view = hlo::Shape::array(o->shape().type, from->dims);
      view.layout = from->layout;
      sources.push_back(comp->addInstruction(
          HloInstruction::create(HloOpcode::Reshape, o->name() + ".view", view, {o})));
    }
    hlo::Shape moved = hlo::Shape::array(inst->shape().type, from->dims);
    moved.layout = from->layout;
    auto op = inst->cloneWithOperands(inst->name() + ".unreshaped", sources);
    op->setShape(moved);
    HloInstruction* opInst = comp->addInstruction(std::move(op));
    auto back = HloInstruction::create(HloOpcode::Reshape, inst->name() + ".reshape", inst->shape(),
                                       {opInst});
    back->attrs().metadata = inst->attrs().metadata;
    back->setSourceLine(inst->sourceLine());
    return replace(inst, comp->addInstruction(std::move(back)));
  }

  bool simplify(hlo::HloComputation* comp, HloInstruction* inst) {
    if (inst->userCount() == 0 && comp->root() != inst) return false;
    if (elementwiseBeforeReshape(comp, inst)) return true;
    switch (inst->opcode()) {
      case HloOpcode::Add:
        return (isValue(inst->operand(1), 0) && replace(inst, inst->operand(0))) ||
               (isValue(inst->operand(0), 0) && replace(inst, inst->operand(1)));
      case HloOpcode::Subtract:
        return isValue(inst->operand(1), 0) && replace(inst, inst->operand(0));
      case HloOpcode::Multiply:
        return (isValue(inst->operand(1), 1) && replace(inst, inst->operand(0))) ||
               (isValue(inst->operand(0), 1) && replace(inst, inst->operand(1)));
      case HloOpcode::Divide:
        return isValue(inst->operand(1), 1) && replace(inst, inst->operand(0));
      case HloOpcode::Reshape: {
        HloInstruction* x = inst->operand(0);
        if (replace(inst, x)) return true;
        if (x->opcode() == HloOpcode::Reshape) {
          inst->replaceOperand(0, x->operand(0));
          return true;
        }
        return false;
      }
      case HloOpcode::Transpose: {
        HloInstruction* x = inst->operand(0);
        const auto& perm = inst->dimensions();
        bool identity = true;
        for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
        if (identity && replace(inst, x)) return true;
        if (x->opcode() != HloOpcode::Transpose) return false;
        // out[i] = x[perm[i]] = y[inner[perm[i]]]
        const auto& inner = x->dimensions();
        std::vector<int64_t> composed;
        for (int64_t p : perm) {
          if (p < 0 || static_cast<size_t>(p) >= inner.size()) return false;
          composed.push_back(inner[p]);
        }
        inst->attrs().dimensions = composed;
        inst->replaceOperand(0, x->operand(0));
        return true;
      }
      case HloOpcode::Broadcast: {
        HloInstruction* x = inst->operand(0);
        const auto& dims = inst->dimensions();
        bool identity = true;
        for (size_t i = 0; i < dims.size(); ++i) identity &= dims[i] == static_cast<int64_t>(i);
        if (identity && replace(inst, x)) return true;
        if (x->opcode() == HloOpcode::Broadcast && x->operandCount() == 1 &&
            x->operand(0)->shape().isScalar()) {
          inst->replaceOperand(0, x->operand(0));
          inst->attrs().dimensions = std::vector<int64_t>{};
          return true;
        }
        return false;
      }
      case HloOpcode::Convert: {
        HloInstruction* x = inst->operand(0);
        if (replace(inst, x)) return true;
        if (x->opcode() == HloOpcode::Convert &&
            exactWidening(x->operand(0)->shape().type, x->shape().type)) {
          HloInstruction* src = x->operand(0);
          if (replace(inst, src)) return true;
          inst->replaceOperand(0, src);
          return true;
        }
        if (x->opcode() == HloOpcode::Pad && x->userCount() == 1 && x->operandCount() == 2 &&
            hlo::bitWidth(inst->shape().type) <= hlo::bitWidth(x->shape().type))
          return convertBeforePad(comp, inst, x);
        return false;
      }
      case HloOpcode::Concatenate: {
        HloInstruction* r = rewriteRotateHalf(comp, inst);
        if (!r) r = hoistRepeatedUnary(comp, inst);
        return r && replace(inst, r);
      }
      default:
        return false;
    }
  }
};

}  // namespace

std::unique_ptr<HloPass> createAlgebraicSimplifierPass() {
  return std::make_unique<AlgebraicSimplifierPass>();
}

}  // namespace tpusim::passes
