// The interpreter's computing opcodes: dot, reduce, reduce-window, gather,
// scatter, sort, map, reduce-precision; and calling scalar computations.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "compiler/hlo/DotPrecision.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/Dot.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/GatherScatter.h"
#include "compiler/hlo/eval/Interpreter.h"
#include "compiler/hlo/eval/Sort.h"
#include "compiler/hlo/eval/TypeDispatch.h"

namespace tpusim::hlo::eval {
namespace {

std::vector<int64_t> listAttr(const HloInstruction& inst, const char* key) {
  return inst.intListAttr(key).value_or(std::vector<int64_t>{});
}

// Rounds an f32/f64 value to `exp` exponent bits and `mant` mantissa bits
// (reduce-precision): RNE on the mantissa, overflow to infinity, underflow to
// zero (denormals of the reduced format flush), NaN kept.
double reducePrecision(double v, int64_t exp, int64_t mant) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e;
  double m = std::frexp(v, &e);  // v = m * 2^e, 0.5 <= |m| < 1
  double scale = std::ldexp(1.0, static_cast<int>(mant) + 1);
  double r = std::nearbyint(m * scale) / scale;
  double out = std::ldexp(r, e);
  int64_t bias = (int64_t{1} << (exp - 1)) - 1;
  int outE;
  std::frexp(out, &outE);
  if (outE - 1 > bias) return std::copysign(INFINITY, v);
  if (outE - 1 < 1 - bias) return std::copysign(0.0, v);
  return out;
}

}  // namespace

const HloComputation& Interpreter::called(const HloInstruction& inst, const char* key) {
  const HloComputation* c = inst.calledComputation(key);
  if (!c) throw EvalError(fmt::format("missing {}=", key));
  return *c;
}

std::vector<Literal> Interpreter::callScalar(const HloComputation& comp,
                                             const std::vector<Literal>& args) {
  std::vector<const Literal*> ptrs;
  for (const Literal& a : args) ptrs.push_back(&a);
  Literal r = run(comp, ptrs);
  if (r.isTuple()) return std::move(r.elements());
  std::vector<Literal> out;
  out.push_back(std::move(r));
  return out;
}

Reducer Interpreter::makeReducer(const HloComputation* comp, const HloInstruction& user) {
  if (!comp) throw EvalError("missing to_apply=");
  Reducer r;
  r.call = [this, comp](const std::vector<Literal>& args) { return callScalar(*comp, args); };
  const HloInstruction* root = comp->root();
  if (comp->parameterCount() != 2 || !root) return r;
  const HloInstruction* p0 = comp->parameter(0);
  const HloInstruction* p1 = comp->parameter(1);
  if (!p0 || !p1 || !p0->shape().isScalar() || p0->shape().type != p1->shape().type) return r;
  if (root == p1) {
    r.takeSecond = true;
    return r;
  }
  auto op = binaryOpOf(root->opcode());
  if (!op || root->operandCount() != 2 || root->shape().type != p0->shape().type) return r;
  bool direct = (root->operand(0) == p0 && root->operand(1) == p1) ||
                (root->operand(0) == p1 && root->operand(1) == p0);
  bool commutative = *op == BinaryOp::Add || *op == BinaryOp::Mul || *op == BinaryOp::Max ||
                     *op == BinaryOp::Min || *op == BinaryOp::And || *op == BinaryOp::Or ||
                     *op == BinaryOp::Xor;
  if (!direct || !commutative) return r;
  r.fast = op;
  BinaryOp fop = *op;
  r.call = [fop](const std::vector<Literal>& args) {
    std::vector<Literal> out;
    out.push_back(binary(fop, args[0], args[1]));
    return out;
  };
  (void)user;
  return r;
}

Literal Interpreter::evalCompute(const HloInstruction& inst,
                                 const std::vector<const Literal*>& ops) {
  const Shape& shape = inst.shape();
  const std::string what = describe(inst);
  switch (inst.opcode()) {
    case HloOpcode::Dot: {
      const DotDimensionNumbers& d = inst.attrs().dot;
      return dotLit(*ops[0], *ops[1], {d.lhsBatch, d.lhsContracting, d.rhsBatch, d.rhsContracting},
                    toElemType(shape.type, what),
                    mxuDotPrecision_ ? static_cast<int>(mxuDotPasses(inst)) : 0);
    }
    case HloOpcode::Reduce:
    case HloOpcode::ReduceWindow: {
      size_t n = ops.size() / 2;
      if (n == 0 || ops.size() != 2 * n) throw EvalError("needs operands followed by init values");
      std::vector<const Literal*> inputs(ops.begin(), ops.begin() + static_cast<long>(n));
      std::vector<const Literal*> inits(ops.begin() + static_cast<long>(n), ops.end());
      Reducer reducer = makeReducer(inst.toApply(), inst);
      std::vector<Literal> outs;
      if (inst.opcode() == HloOpcode::Reduce) {
        outs = reduceLit(inputs, inits, inst.dimensions(), reducer);
      } else {
        std::vector<WindowDims> window;
        if (inst.attrs().window)
          for (const WindowDim& w : *inst.attrs().window)
            window.push_back(
                {w.size, w.stride, w.padLow, w.padHigh, w.baseDilation, w.windowDilation});
        outs = reduceWindowLit(inputs, inits, window, reducer);
      }
      if (n == 1 && !shape.isTuple()) return std::move(outs[0]);
      return Literal::tuple(std::move(outs));
    }
    case HloOpcode::Gather: {
      GatherDims g;
      g.offsetDims = listAttr(inst, "offset_dims");
      g.collapsedSliceDims = listAttr(inst, "collapsed_slice_dims");
      g.startIndexMap = listAttr(inst, "start_index_map");
      g.operandBatchingDims = listAttr(inst, "operand_batching_dims");
      g.startIndicesBatchingDims = listAttr(inst, "start_indices_batching_dims");
      g.sliceSizes = listAttr(inst, "slice_sizes");
      g.indexVectorDim = inst.intAttr("index_vector_dim").value_or(ops[1]->rank());
      return gatherLit(*ops[0], *ops[1], g, shape.dims);
    }
    case HloOpcode::Scatter: {
      size_t n = (ops.size() - 1) / 2;
      if (n == 0 || ops.size() != 2 * n + 1)
        throw EvalError("scatter needs operands, indices and as many updates as operands");
      ScatterDims sd;
      sd.updateWindowDims = listAttr(inst, "update_window_dims");
      sd.insertedWindowDims = listAttr(inst, "inserted_window_dims");
      sd.scatterDimsToOperandDims = listAttr(inst, "scatter_dims_to_operand_dims");
      sd.inputBatchingDims = listAttr(inst, "input_batching_dims");
      sd.scatterIndicesBatchingDims = listAttr(inst, "scatter_indices_batching_dims");
      sd.indexVectorDim = inst.intAttr("index_vector_dim").value_or(ops[n]->rank());
      std::vector<const Literal*> operands(ops.begin(), ops.begin() + static_cast<long>(n));
      std::vector<const Literal*> updates(ops.begin() + static_cast<long>(n) + 1, ops.end());
      std::vector<Literal> outs =
          scatterLit(operands, *ops[n], updates, sd, makeReducer(inst.toApply(), inst));
      if (n == 1 && !shape.isTuple()) return std::move(outs[0]);
      return Literal::tuple(std::move(outs));
    }
    case HloOpcode::Sort: {
      if (inst.dimensions().size() != 1) throw EvalError("sort needs dimensions={d}");
      const HloComputation* cmp = inst.toApply();
      if (!cmp) throw EvalError("sort without a comparator (to_apply=)");
      SortLess less;
      const HloInstruction* root = cmp->root();
      if (root && root->opcode() == HloOpcode::Compare && root->attrs().direction &&
          root->operandCount() == 2 && root->operand(0) == cmp->parameter(0) &&
          root->operand(1) == cmp->parameter(1) &&
          (*root->attrs().direction == ComparisonDirection::LT ||
           *root->attrs().direction == ComparisonDirection::GT)) {
        auto type = root->identAttr("type");
        less = compareLess(*ops[0], compareDirOf(*root->attrs().direction),
                           type && *type == "TOTALORDER");
      } else {
        less = [&](int64_t a, int64_t b) {
          std::vector<Literal> args;
          for (const Literal* l : ops) {
            args.push_back(scalarAt(*l, a));
            args.push_back(scalarAt(*l, b));
          }
          std::vector<Literal> r = callScalar(*cmp, args);
          if (r.size() != 1 || r[0].type() != ElemType::Pred || r[0].rank() != 0)
            throw EvalError("the sort comparator must return pred[]");
          return r[0].data<uint8_t>()[0] != 0;
        };
      }
      std::vector<Literal> outs = sortLit(ops, inst.dimensions()[0], less);
      if (ops.size() == 1 && !shape.isTuple()) return std::move(outs[0]);
      return Literal::tuple(std::move(outs));
    }
    case HloOpcode::Map: {
      const HloComputation& f = called(inst, "to_apply");
      Literal out = zerosOf(shape, what);
      std::vector<Literal> args(ops.size());
      for (int64_t i = 0; i < out.numElements(); ++i) {
        for (size_t j = 0; j < ops.size(); ++j) args[j] = scalarAt(*ops[j], i);
        std::vector<Literal> r = callScalar(f, args);
        if (r.size() != 1 || r[0].type() != out.type() || r[0].rank() != 0)
          throw EvalError("map's computation must return one scalar of the result type");
        setScalarAt(out, i, r[0]);
      }
      return out;
    }
    case HloOpcode::ReducePrecision: {
      auto eb = inst.intAttr("exponent_bits"), mb = inst.intAttr("mantissa_bits");
      if (!eb || !mb || *eb < 1 || *eb > 11 || *mb < 0 || *mb > 52)
        throw EvalError("reduce-precision needs exponent_bits (1..11) and mantissa_bits (0..52)");
      const Literal& in = *ops[0];
      if (!isFloat(in.type())) throw EvalError("reduce-precision of a non-float type");
      Literal out = Literal::array(in.type(), in.dims());
      for (int64_t i = 0; i < in.numElements(); ++i)
        out.setDouble(i, reducePrecision(in.getDouble(i), *eb, *mb));
      return out;
    }
    default:
      break;
  }
  throw EvalError("internal: not a compute op");
}

}  // namespace tpusim::hlo::eval
