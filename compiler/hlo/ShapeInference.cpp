#include "compiler/hlo/ShapeInference.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::hlo {
namespace {

std::optional<Shape> fail(std::string* why, std::string message) {
  if (why) *why = std::move(message);
  return std::nullopt;
}

Shape stripLayout(Shape s) {
  s.layout.reset();
  for (auto& e : s.tupleShapes) e = stripLayout(std::move(e));
  return s;
}

std::optional<Shape> calleeRootShape(const HloInstruction& inst, const std::string& key,
                                     std::string* why) {
  const HloComputation* c = inst.calledComputation(key);
  if (!c || !c->root()) return fail(why, fmt::format("it needs {}=", key));
  return stripLayout(c->root()->shape());
}

bool validDims(const std::vector<int64_t>& dims, int64_t rank, bool unique = true) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) return false;
    if (unique && seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

std::optional<Shape> elementwise(const HloInstruction& inst, std::string* why) {
  if (inst.operandCount() == 0) return fail(why, "it has no operands");
  HloOpcode opc = inst.opcode();
  // The result takes the dims of the first non-scalar operand (select's
  // predicate and clamp's bounds may be scalars) and the type of the data.
  const Shape* dimsFrom = nullptr;
  for (const HloInstruction* op : inst.operands()) {
    if (!op->shape().isArray()) return fail(why, "element-wise operands must be arrays");
    if (!dimsFrom || (dimsFrom->isScalar() && !op->shape().isScalar())) dimsFrom = &op->shape();
  }
  const Shape& typeFrom =
      (opc == HloOpcode::Select || opc == HloOpcode::Clamp) && inst.operandCount() == 3
          ? inst.operand(1)->shape()
          : inst.operand(0)->shape();
  Shape out = Shape::array(typeFrom.type, dimsFrom->dims);
  out.dynamicDims = dimsFrom->dynamicDims;
  if (opc == HloOpcode::Compare || opc == HloOpcode::IsFinite) out.type = PrimitiveType::Pred;
  if (opc == HloOpcode::Convert || opc == HloOpcode::BitcastConvert ||
      opc == HloOpcode::StochasticConvert || opc == HloOpcode::Real || opc == HloOpcode::Imag ||
      opc == HloOpcode::Complex)
    return fail(why, "the result type must be written");
  return out;
}

std::optional<Shape> reduceShape(const HloInstruction& inst, std::string* why) {
  int64_t n = inst.operandCount();
  if (n < 2 || n % 2) return fail(why, "reduce needs pairs of inputs and init values");
  const Shape& in = inst.operand(0)->shape();
  if (!in.isArray()) return fail(why, "reduce inputs must be arrays");
  const auto& dims = inst.dimensions();
  if (!validDims(dims, in.rank())) return fail(why, "invalid reduce dimensions");
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < in.rank(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) kept.push_back(in.dims[i]);
  std::vector<Shape> outs;
  for (int64_t i = 0; i < n / 2; ++i)
    outs.push_back(Shape::array(inst.operand(n / 2 + i)->shape().type, kept));
  if (outs.size() == 1) return outs.front();
  return Shape::tuple(outs);
}

}  // namespace

std::optional<Shape> inferDotShape(const Shape& lhs, const Shape& rhs, const DotDimensionNumbers& d,
                                   PrimitiveType resultType, std::string* why) {
  if (!lhs.isArray() || !rhs.isArray()) return fail(why, "dot operands must be arrays");
  if (d.lhsBatch.size() != d.rhsBatch.size())
    return fail(why, "lhs and rhs have different numbers of batch dimensions");
  if (d.lhsContracting.size() != d.rhsContracting.size())
    return fail(why, "lhs and rhs have different numbers of contracting dimensions");
  std::vector<int64_t> lhsUsed = d.lhsBatch, rhsUsed = d.rhsBatch;
  lhsUsed.insert(lhsUsed.end(), d.lhsContracting.begin(), d.lhsContracting.end());
  rhsUsed.insert(rhsUsed.end(), d.rhsContracting.begin(), d.rhsContracting.end());
  if (!validDims(lhsUsed, lhs.rank()) || !validDims(rhsUsed, rhs.rank()))
    return fail(why, "dot dimension numbers out of range or repeated");
  for (size_t i = 0; i < d.lhsBatch.size(); ++i)
    if (lhs.dims[d.lhsBatch[i]] != rhs.dims[d.rhsBatch[i]])
      return fail(why, fmt::format("batch dimension {} has size {} in lhs and {} in rhs", i,
                                   lhs.dims[d.lhsBatch[i]], rhs.dims[d.rhsBatch[i]]));
  for (size_t i = 0; i < d.lhsContracting.size(); ++i)
    if (lhs.dims[d.lhsContracting[i]] != rhs.dims[d.rhsContracting[i]])
      return fail(why, fmt::format("contracting dimension {} has size {} in lhs and {} in rhs", i,
                                   lhs.dims[d.lhsContracting[i]], rhs.dims[d.rhsContracting[i]]));
  std::vector<int64_t> dims;
  for (int64_t b : d.lhsBatch) dims.push_back(lhs.dims[b]);
  for (int64_t i = 0; i < lhs.rank(); ++i)
    if (std::find(lhsUsed.begin(), lhsUsed.end(), i) == lhsUsed.end()) dims.push_back(lhs.dims[i]);
  for (int64_t i = 0; i < rhs.rank(); ++i)
    if (std::find(rhsUsed.begin(), rhsUsed.end(), i) == rhsUsed.end()) dims.push_back(rhs.dims[i]);
  return Shape::array(resultType, dims);
}

std::optional<Shape> inferShape(const HloInstruction& inst, std::string* why) {
  const auto& ops = inst.operands();
  auto opShape = [&](size_t i) -> const Shape& { return ops[i]->shape(); };
  switch (inst.opcode()) {
    case HloOpcode::Tuple: {
      std::vector<Shape> elems;
      for (const HloInstruction* op : ops) elems.push_back(stripLayout(op->shape()));
      return Shape::tuple(elems);
    }
    case HloOpcode::GetTupleElement: {
      if (ops.size() != 1) return fail(why, "get-tuple-element needs 1 operand");
      auto idx = inst.tupleIndex();
      if (!idx) return fail(why, "get-tuple-element needs index=");
      const Shape& t = opShape(0);
      if (!t.isTuple()) return fail(why, "get-tuple-element's operand is not a tuple");
      if (*idx < 0 || static_cast<size_t>(*idx) >= t.tupleShapes.size())
        return fail(why, fmt::format("index {} is out of range for a tuple of {} elements", *idx,
                                     t.tupleShapes.size()));
      return stripLayout(t.tupleShapes[*idx]);
    }
    case HloOpcode::While:
      if (ops.size() != 1) return fail(why, "while needs 1 operand");
      return stripLayout(opShape(0));
    case HloOpcode::Call:
    case HloOpcode::Map:
      if (inst.opcode() == HloOpcode::Map) {
        auto root = calleeRootShape(inst, "to_apply", why);
        if (!root || ops.empty()) return fail(why, "map needs operands and to_apply=");
        return Shape::array(root->type, opShape(0).dims);
      }
      return calleeRootShape(inst, "to_apply", why);
    case HloOpcode::Fusion:
      return calleeRootShape(inst, "calls", why);
    case HloOpcode::Conditional: {
      auto comps = inst.calledComputations();
      if (comps.empty() || !comps.front() || !comps.front()->root())
        return fail(why, "conditional needs branch computations");
      return stripLayout(comps.front()->root()->shape());
    }
    case HloOpcode::AfterAll:
      return Shape::token();
    case HloOpcode::PartitionId:
    case HloOpcode::ReplicaId:
      return Shape::scalar(PrimitiveType::U32);
    case HloOpcode::GetDimensionSize:
      return Shape::scalar(PrimitiveType::S32);
    case HloOpcode::Copy:
    case HloOpcode::AllReduce:
    case HloOpcode::AllReduceStart:
    case HloOpcode::AllReduceDone:
    case HloOpcode::CollectivePermute:
    case HloOpcode::CollectivePermuteDone:
    case HloOpcode::OptimizationBarrier:
    case HloOpcode::AddDependency:
    case HloOpcode::DynamicUpdateSlice:
    case HloOpcode::Negate:
    case HloOpcode::Abs:
      if (ops.empty()) return fail(why, "it needs an operand");
      if (ops.size() > 1 && (inst.opcode() == HloOpcode::AllReduce)) {
        std::vector<Shape> elems;
        for (const HloInstruction* op : ops) elems.push_back(stripLayout(op->shape()));
        return Shape::tuple(elems);
      }
      return stripLayout(opShape(0));
    case HloOpcode::AllGatherDone:
      if (ops.size() != 1 || !opShape(0).isTuple() || opShape(0).tupleShapes.size() != 2)
        return fail(why, "all-gather-done needs the (input, output) tuple of all-gather-start");
      return stripLayout(opShape(0).tupleShapes[1]);
    case HloOpcode::Dot: {
      if (ops.size() != 2) return fail(why, "dot needs 2 operands");
      return inferDotShape(opShape(0), opShape(1), inst.attrs().dot, opShape(0).type, why);
    }
    case HloOpcode::Reduce:
      return reduceShape(inst, why);
    case HloOpcode::Transpose: {
      if (ops.size() != 1 || !opShape(0).isArray()) return fail(why, "transpose needs 1 array");
      const auto& perm = inst.dimensions();
      if (static_cast<int64_t>(perm.size()) != opShape(0).rank() ||
          !validDims(perm, opShape(0).rank()))
        return fail(why, "dimensions is not a permutation of the operand's dimensions");
      std::vector<int64_t> dims;
      for (int64_t p : perm) dims.push_back(opShape(0).dims[p]);
      return Shape::array(opShape(0).type, dims);
    }
    case HloOpcode::Slice: {
      if (ops.size() != 1 || !opShape(0).isArray()) return fail(why, "slice needs 1 array");
      if (!inst.attrs().slice) return fail(why, "slice needs slice=");
      const auto& s = *inst.attrs().slice;
      if (static_cast<int64_t>(s.size()) != opShape(0).rank())
        return fail(why, "slice has a range count different from the operand's rank");
      std::vector<int64_t> dims;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i].start < 0 || s[i].limit < s[i].start || s[i].limit > opShape(0).dims[i] ||
            s[i].stride <= 0)
          return fail(why, fmt::format("slice range [{}:{}:{}] is out of bounds for dimension {} "
                                       "of size {}",
                                       s[i].start, s[i].limit, s[i].stride, i, opShape(0).dims[i]));
        dims.push_back((s[i].limit - s[i].start + s[i].stride - 1) / s[i].stride);
      }
      return Shape::array(opShape(0).type, dims);
    }
    case HloOpcode::Concatenate: {
      if (ops.empty() || inst.dimensions().size() != 1)
        return fail(why, "concatenate needs operands and one dimension");
      int64_t d = inst.dimensions()[0];
      Shape out = stripLayout(opShape(0));
      if (!out.isArray() || d < 0 || d >= out.rank())
        return fail(why, "concatenate dimension out of range");
      for (size_t i = 1; i < ops.size(); ++i) {
        const Shape& s = opShape(i);
        if (!s.isArray() || s.rank() != out.rank()) return fail(why, "operand ranks differ");
        for (int64_t k = 0; k < s.rank(); ++k)
          if (k != d && s.dims[k] != out.dims[k])
            return fail(why, fmt::format("operand {} differs in dimension {}", i, k));
        if (out.dims[d] > INT64_MAX / 2 || s.dims[d] > INT64_MAX / 2)
          return fail(why, "dimension too large");
        out.dims[d] += s.dims[d];
      }
      return out;
    }
    case HloOpcode::Reverse:
      if (ops.size() != 1) return fail(why, "reverse needs 1 operand");
      return stripLayout(opShape(0));
    case HloOpcode::Pad: {
      if (ops.size() != 2 || !opShape(0).isArray()) return fail(why, "pad needs 2 operands");
      if (!inst.attrs().padding) return fail(why, "pad needs padding=");
      const auto& p = *inst.attrs().padding;
      if (static_cast<int64_t>(p.size()) != opShape(0).rank())
        return fail(why, "padding has a dimension count different from the operand's rank");
      std::vector<int64_t> dims;
      for (size_t i = 0; i < p.size(); ++i) {
        int64_t n = opShape(0).dims[i];
        if (p[i].interior < 0 || std::abs(p[i].low) > (1LL << 40) ||
            std::abs(p[i].high) > (1LL << 40) || p[i].interior > (1LL << 20) || n > (1LL << 40))
          return fail(why, "padding amounts out of range");
        int64_t size = n + p[i].low + p[i].high + std::max<int64_t>(n - 1, 0) * p[i].interior;
        if (size < 0) return fail(why, "padding makes a dimension negative");
        dims.push_back(size);
      }
      return Shape::array(opShape(0).type, dims);
    }
    default:
      break;
  }
  if (isElementwise(inst.opcode())) return elementwise(inst, why);
  return fail(why, fmt::format("shapes of {} are not inferred", opcodeName(inst.opcode())));
}

}  // namespace tpusim::hlo
