// The interpreter's core: walks a computation in post order and dispatches each
// instruction; element-wise and data-movement opcodes are handled here.
#include "compiler/hlo/eval/Interpreter.h"

#include <fmt/format.h>

#include <unordered_map>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/Convert.h"
#include "compiler/hlo/eval/Elementwise.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/RngBitGenerator.h"
#include "compiler/hlo/eval/ShapeOps.h"

namespace tpusim::hlo::eval {
namespace {

constexpr int kMaxCallDepth = 200;

std::optional<UnaryOp> unaryOpOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::Abs:
      return UnaryOp::Abs;
    case HloOpcode::Negate:
      return UnaryOp::Negate;
    case HloOpcode::Sign:
      return UnaryOp::Sign;
    case HloOpcode::Floor:
      return UnaryOp::Floor;
    case HloOpcode::Ceil:
      return UnaryOp::Ceil;
    case HloOpcode::RoundNearestEven:
      return UnaryOp::RoundNearestEven;
    case HloOpcode::RoundNearestAfz:
      return UnaryOp::RoundNearestAfz;
    case HloOpcode::Exp:
      return UnaryOp::Exp;
    case HloOpcode::Expm1:
      return UnaryOp::Expm1;
    case HloOpcode::Log:
      return UnaryOp::Log;
    case HloOpcode::Log1p:
      return UnaryOp::Log1p;
    case HloOpcode::Sqrt:
      return UnaryOp::Sqrt;
    case HloOpcode::Rsqrt:
      return UnaryOp::Rsqrt;
    case HloOpcode::Cbrt:
      return UnaryOp::Cbrt;
    case HloOpcode::Tanh:
      return UnaryOp::Tanh;
    case HloOpcode::Logistic:
      return UnaryOp::Logistic;
    case HloOpcode::Sine:
      return UnaryOp::Sin;
    case HloOpcode::Cosine:
      return UnaryOp::Cos;
    case HloOpcode::Tan:
      return UnaryOp::Tan;
    case HloOpcode::Erf:
      return UnaryOp::Erf;
    case HloOpcode::IsFinite:
      return UnaryOp::IsFinite;
    case HloOpcode::Not:
      return UnaryOp::Not;
    case HloOpcode::PopulationCount:
      return UnaryOp::PopCount;
    case HloOpcode::CountLeadingZeros:
      return UnaryOp::Clz;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<BinaryOp> binaryOpOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::Add:
      return BinaryOp::Add;
    case HloOpcode::Subtract:
      return BinaryOp::Sub;
    case HloOpcode::Multiply:
      return BinaryOp::Mul;
    case HloOpcode::Divide:
      return BinaryOp::Div;
    case HloOpcode::Remainder:
      return BinaryOp::Rem;
    case HloOpcode::Power:
      return BinaryOp::Pow;
    case HloOpcode::Maximum:
      return BinaryOp::Max;
    case HloOpcode::Minimum:
      return BinaryOp::Min;
    case HloOpcode::Atan2:
      return BinaryOp::Atan2;
    case HloOpcode::And:
      return BinaryOp::And;
    case HloOpcode::Or:
      return BinaryOp::Or;
    case HloOpcode::Xor:
      return BinaryOp::Xor;
    case HloOpcode::ShiftLeft:
      return BinaryOp::Shl;
    case HloOpcode::ShiftRightLogical:
      return BinaryOp::ShrLogical;
    case HloOpcode::ShiftRightArithmetic:
      return BinaryOp::ShrArithmetic;
    default:
      return std::nullopt;
  }
}

CompareDir compareDirOf(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::EQ:
      return CompareDir::EQ;
    case ComparisonDirection::NE:
      return CompareDir::NE;
    case ComparisonDirection::LT:
      return CompareDir::LT;
    case ComparisonDirection::LE:
      return CompareDir::LE;
    case ComparisonDirection::GT:
      return CompareDir::GT;
    case ComparisonDirection::GE:
      return CompareDir::GE;
  }
  return CompareDir::EQ;
}

std::string describe(const HloInstruction& inst) {
  std::string s = fmt::format("%{} ({})", inst.name(), opcodeName(inst.opcode()));
  const HloComputation* comp = inst.parent();
  const HloModule* mod = comp ? comp->parent() : nullptr;
  if (inst.sourceLine() > 0)
    s += fmt::format(" at {}:{}", mod && !mod->sourceFile().empty() ? mod->sourceFile() : "<input>",
                     inst.sourceLine());
  return s;
}

Literal Interpreter::run(const HloComputation& comp, const std::vector<const Literal*>& args) {
  if (++depth_ > kMaxCallDepth) {
    --depth_;
    throw EvalError(fmt::format("computation %{}: calls nested deeper than {} (recursion?)",
                                comp.name(), kMaxCallDepth));
  }
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{depth_};
  if (!comp.root()) throw EvalError(fmt::format("computation %{} has no root", comp.name()));
  std::unordered_map<const HloInstruction*, Literal> values;
  std::vector<const Literal*> ops;
  for (const HloInstruction* inst : comp.postOrder()) {
    ops.clear();
    for (const HloInstruction* op : inst->operands()) {
      auto it = values.find(op);
      if (it == values.end())
        throw InstructionError(fmt::format("evaluating {}: operand %{} has no value (cycle?)",
                                           describe(*inst), op->name()));
      ops.push_back(&it->second);
    }
    Literal value;
    try {
      if (inst->opcode() == HloOpcode::Parameter) {
        int64_t n = inst->attrs().parameterNumber;
        if (n < 0 || n >= static_cast<int64_t>(args.size()))
          throw EvalError(fmt::format("parameter {} has no argument ({} given)", n, args.size()));
        if (!matchesShape(*args[static_cast<size_t>(n)], inst->shape()))
          throw EvalError(fmt::format("argument {} is {} but the parameter is {}", n,
                                      args[static_cast<size_t>(n)]->shapeString(),
                                      inst->shape().toString(false)));
        value = *args[static_cast<size_t>(n)];
      } else {
        value = eval(*inst, ops);
        if (!matchesShape(value, inst->shape()))
          throw EvalError(fmt::format("internal: produced {} for shape {}", value.shapeString(),
                                      inst->shape().toString(false)));
      }
    } catch (const InstructionError&) {
      throw;
    } catch (const EvalError& e) {
      throw InstructionError(fmt::format("evaluating {}: {}", describe(*inst), e.what()));
    }
    values.emplace(inst, std::move(value));
  }
  auto it = values.find(comp.root());
  if (it == values.end())
    throw EvalError(fmt::format("computation %{}: the root has no value", comp.name()));
  return std::move(it->second);
}

Literal Interpreter::eval(const HloInstruction& inst, const std::vector<const Literal*>& ops) {
  HloOpcode op = inst.opcode();
  if (isElementwise(op) || op == HloOpcode::Convert || op == HloOpcode::BitcastConvert)
    return evalElementwise(inst, ops);
  switch (op) {
    case HloOpcode::Constant: {
      if (!inst.literal()) throw EvalError("constant without a value");
      return fromConstant(*inst.literal(), describe(inst));
    }
    case HloOpcode::Iota:
    case HloOpcode::Broadcast:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Transpose:
    case HloOpcode::Slice:
    case HloOpcode::DynamicSlice:
    case HloOpcode::DynamicUpdateSlice:
    case HloOpcode::Concatenate:
    case HloOpcode::Pad:
    case HloOpcode::Reverse:
    case HloOpcode::GetDimensionSize:
      return evalShapeOp(inst, ops);
    case HloOpcode::Tuple: {
      std::vector<Literal> elems;
      for (const Literal* l : ops) elems.push_back(*l);
      return Literal::tuple(std::move(elems));
    }
    case HloOpcode::GetTupleElement: {
      auto index = inst.tupleIndex();
      if (!ops[0]->isTuple() || !index || *index < 0 ||
          *index >= static_cast<int64_t>(ops[0]->elements().size()))
        throw EvalError("get-tuple-element index out of range");
      return ops[0]->elements()[static_cast<size_t>(*index)];
    }
    case HloOpcode::AfterAll:
      return Literal::tuple({});
    case HloOpcode::AddDependency:
    case HloOpcode::OptimizationBarrier:
    case HloOpcode::Domain:
      return *ops.at(0);
    case HloOpcode::CopyStart: {
      // (destination, source, context): the copy happens at once.
      std::vector<Literal> elems{*ops[0], *ops[0]};
      for (size_t i = 2; i < inst.shape().tupleShapes.size(); ++i)
        elems.push_back(zerosOf(inst.shape().tupleShapes[i], describe(inst)));
      return Literal::tuple(std::move(elems));
    }
    case HloOpcode::CopyDone:
      if (!ops[0]->isTuple() || ops[0]->elements().empty())
        throw EvalError("copy-done operand is not a copy-start tuple");
      return ops[0]->elements()[0];
    case HloOpcode::ReplicaId:
    case HloOpcode::PartitionId: {
      Literal l = zerosOf(inst.shape(), describe(inst));
      l.setInt(0, replica_);
      return l;
    }
    case HloOpcode::Dot:
    case HloOpcode::Reduce:
    case HloOpcode::ReduceWindow:
    case HloOpcode::Gather:
    case HloOpcode::Scatter:
    case HloOpcode::Sort:
    case HloOpcode::Map:
    case HloOpcode::ReducePrecision:
      return evalCompute(inst, ops);
    case HloOpcode::Call:
    case HloOpcode::Fusion:
    case HloOpcode::While:
    case HloOpcode::Conditional:
    case HloOpcode::CustomCall:
    case HloOpcode::AsyncStart:
    case HloOpcode::AsyncUpdate:
    case HloOpcode::AsyncDone:
      return evalControl(inst, ops);
    case HloOpcode::RngBitGenerator: {
      const Shape& s = inst.shape();
      if (!s.isTuple() || s.tupleShapes.size() != 2 || !s.tupleShapes[1].isArray())
        throw EvalError("rng-bit-generator must produce (state, values)");
      return rngBitGenerator(*ops[0], inst.identAttr("algorithm").value_or("rng_default"),
                             toElemType(s.tupleShapes[1].type, describe(inst)),
                             s.tupleShapes[1].dims);
    }
    case HloOpcode::Rng:
    case HloOpcode::RngGetAndUpdateState:
      throw EvalError(
          fmt::format("{} is not supported by the reference evaluator (its bits are "
                      "backend-defined); feed random values as a parameter instead",
                      opcodeName(op)));
    default:
      if (isCollective(op) || op == HloOpcode::CollectiveBroadcast)
        return evalCollective(inst, ops);
      throw EvalError(
          fmt::format("opcode {} is not supported by the reference evaluator", opcodeName(op)));
  }
}

Literal Interpreter::evalElementwise(const HloInstruction& inst,
                                     const std::vector<const Literal*>& ops) {
  HloOpcode op = inst.opcode();
  const std::string what = describe(inst);
  switch (op) {
    case HloOpcode::Convert:
      return convertLiteral(*ops[0], toElemType(inst.shape().type, what));
    case HloOpcode::BitcastConvert:
      return bitcastLiteral(*ops[0], toElemType(inst.shape().type, what), inst.shape().dims);
    case HloOpcode::Copy:
      return *ops[0];
    case HloOpcode::Select:
      return select(*ops[0], *ops[1], *ops[2]);
    case HloOpcode::Clamp:
      return clamp(*ops[0], *ops[1], *ops[2]);
    case HloOpcode::Compare: {
      if (!inst.attrs().direction) throw EvalError("compare without a direction");
      auto type = inst.identAttr("type");
      bool total = type && *type == "TOTALORDER";
      return compare(compareDirOf(*inst.attrs().direction), total, *ops[0], *ops[1]);
    }
    default:
      break;
  }
  if (auto u = unaryOpOf(op)) return unary(*u, *ops[0]);
  if (auto b = binaryOpOf(op)) return binary(*b, *ops[0], *ops[1]);
  throw EvalError(
      fmt::format("opcode {} is not supported by the reference evaluator", opcodeName(op)));
}

Literal Interpreter::evalShapeOp(const HloInstruction& inst,
                                 const std::vector<const Literal*>& ops) {
  const Shape& shape = inst.shape();
  const std::string what = describe(inst);
  switch (inst.opcode()) {
    case HloOpcode::Iota: {
      auto dim = inst.intAttr("iota_dimension");
      if (!dim || *dim < 0 || *dim >= shape.rank()) throw EvalError("bad iota_dimension");
      return iotaLit(toElemType(shape.type, what), shape.dims, *dim);
    }
    case HloOpcode::Broadcast:
      return broadcastLit(*ops[0], shape.dims, inst.dimensions());
    case HloOpcode::Reshape:
      return reshapeLit(*ops[0], shape.dims);
    case HloOpcode::Bitcast: {
      const Shape& from = inst.operand(0)->shape();
      if (from.type != shape.type)
        throw EvalError("bitcast that changes the element type (use bitcast-convert)");
      return bitcastLit(*ops[0], from.minorToMajorOrDefault(), shape.dims,
                        shape.minorToMajorOrDefault());
    }
    case HloOpcode::Transpose:
      return transposeLit(*ops[0], inst.dimensions());
    case HloOpcode::Slice: {
      if (!inst.attrs().slice) throw EvalError("slice without slice={...}");
      std::vector<int64_t> starts, limits, strides;
      for (const SliceDim& s : *inst.attrs().slice) {
        starts.push_back(s.start);
        limits.push_back(s.limit);
        strides.push_back(s.stride);
      }
      return sliceLit(*ops[0], starts, limits, strides);
    }
    case HloOpcode::DynamicSlice: {
      std::vector<int64_t> starts;
      for (size_t i = 1; i < ops.size(); ++i) starts.push_back(ops[i]->getInt(0));
      return dynamicSliceLit(*ops[0], starts, shape.dims);
    }
    case HloOpcode::DynamicUpdateSlice: {
      std::vector<int64_t> starts;
      for (size_t i = 2; i < ops.size(); ++i) starts.push_back(ops[i]->getInt(0));
      return dynamicUpdateSliceLit(*ops[0], *ops[1], starts);
    }
    case HloOpcode::Concatenate: {
      if (inst.dimensions().size() != 1) throw EvalError("concatenate needs dimensions={d}");
      return concatenateLit(ops, inst.dimensions()[0]);
    }
    case HloOpcode::Pad: {
      std::vector<int64_t> lo, hi, in;
      if (inst.attrs().padding)
        for (const PaddingDim& p : *inst.attrs().padding) {
          lo.push_back(p.low);
          hi.push_back(p.high);
          in.push_back(p.interior);
        }
      if (static_cast<int64_t>(lo.size()) != ops[0]->rank())
        throw EvalError("padding does not give one entry per dimension");
      return padLit(*ops[0], *ops[1], lo, hi, in);
    }
    case HloOpcode::Reverse:
      return reverseLit(*ops[0], inst.dimensions());
    case HloOpcode::GetDimensionSize: {
      if (inst.dimensions().size() != 1) throw EvalError("get-dimension-size needs dimensions={d}");
      Literal l = zerosOf(shape, what);
      l.setInt(0, ops[0]->dims().at(static_cast<size_t>(inst.dimensions()[0])));
      return l;
    }
    default:
      break;
  }
  throw EvalError("internal: not a shape op");
}

}  // namespace tpusim::hlo::eval
