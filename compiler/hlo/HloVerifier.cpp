#include "compiler/hlo/HloVerifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/ShapeInference.h"

namespace tpusim::hlo {

std::string VerifierResult::message() const {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

namespace {

class Verifier {
 public:
  explicit Verifier(const HloModule& m) : m_(m) {}

  VerifierResult run() {
    if (!m_.entry()) report(nullptr, nullptr, "the module has no entry computation");
    std::unordered_set<const HloComputation*> mine;
    for (const auto& c : m_.computations()) mine.insert(c.get());
    for (const auto& c : m_.computations()) {
      comp_ = c.get();
      verifyComputation(*c, mine);
    }
    comp_ = nullptr;
    checkCallGraphAcyclic();
    return std::move(result_);
  }

 private:
  void report(const HloComputation* comp, const HloInstruction* inst, const std::string& msg) {
    std::string where = m_.sourceFile().empty() ? "<module " + m_.name() + ">" : m_.sourceFile();
    if (inst && inst->sourceLine()) where += fmt::format(":{}", inst->sourceLine());
    std::string ctx;
    if (comp) ctx += "in computation %" + comp->name() + ", ";
    if (inst)
      ctx += fmt::format("instruction %{} ({}): ", inst->name(), opcodeName(inst->opcode()));
    result_.errors.push_back(fmt::format("{}: error: {}{}", where, ctx, msg));
  }
  bool fail(const HloInstruction& i, const std::string& msg) {
    report(comp_, &i, msg);
    return false;
  }

  void verifyComputation(const HloComputation& c,
                         const std::unordered_set<const HloComputation*>& mine) {
    if (!c.root()) report(&c, nullptr, "the computation has no root");
    std::unordered_set<const HloInstruction*> own;
    for (const auto& i : c.instructions()) own.insert(i.get());
    if (c.root() && !own.count(c.root())) report(&c, nullptr, "the root is not in the computation");
    std::vector<bool> seenParam(own.size(), false);
    bool structural = true;
    for (const auto& i : c.instructions()) {
      for (const HloInstruction* op : i->operands())
        if (!op || !own.count(op)) {
          fail(*i, "an operand is not an instruction of this computation");
          structural = false;
        }
      for (const HloComputation* callee : i->calledComputations())
        if (!callee || !mine.count(callee)) {
          fail(*i, "calls a computation that is not in the module");
          structural = false;
        }
      if (i->opcode() == HloOpcode::Parameter) {
        int64_t n = i->attrs().parameterNumber;
        if (n < 0 || n >= c.parameterCount())
          fail(*i, fmt::format("parameter number {} is out of range: the computation has {} "
                               "parameters",
                               n, c.parameterCount()));
        else if (seenParam[n])
          fail(*i, fmt::format("parameter number {} is used twice", n));
        else
          seenParam[n] = true;
      }
    }
    if (!structural) return;
    if (!checkAcyclic(c)) return;
    for (const auto& i : c.instructions()) verifyInstruction(*i);
  }

  bool checkAcyclic(const HloComputation& c) {
    std::unordered_map<const HloInstruction*, int> state;
    for (const auto& start : c.instructions()) {
      if (state[start.get()]) continue;
      std::vector<std::pair<const HloInstruction*, size_t>> stack{{start.get(), 0}};
      state[start.get()] = 1;
      while (!stack.empty()) {
        auto& [inst, next] = stack.back();
        if (next < inst->operands().size()) {
          const HloInstruction* op = inst->operands()[next++];
          int& s = state[op];
          if (s == 1) return fail(*op, "is on a cycle of operands");
          if (s == 0) {
            s = 1;
            stack.push_back({op, 0});
          }
          continue;
        }
        state[inst] = 2;
        stack.pop_back();
      }
    }
    return true;
  }

  void checkCallGraphAcyclic() {
    std::unordered_map<const HloComputation*, int> state;
    for (const auto& start : m_.computations()) {
      if (state[start.get()]) continue;
      std::vector<std::pair<const HloComputation*, std::vector<HloComputation*>>> stack;
      auto push = [&](const HloComputation* c) {
        std::vector<HloComputation*> callees;
        for (const auto& i : c->instructions())
          for (HloComputation* callee : i->calledComputations())
            if (callee) callees.push_back(callee);
        state[c] = 1;
        stack.push_back({c, std::move(callees)});
      };
      push(start.get());
      while (!stack.empty()) {
        auto& [c, callees] = stack.back();
        if (callees.empty()) {
          state[c] = 2;
          stack.pop_back();
          continue;
        }
        HloComputation* next = callees.back();
        callees.pop_back();
        if (state[next] == 1) {
          report(next, nullptr, "the computation calls itself (recursion is not allowed)");
          return;
        }
        if (state[next] == 0) push(next);
      }
    }
  }

  // ---- helpers ----
  bool operands(const HloInstruction& i, int64_t n) {
    if (i.operandCount() != n)
      return fail(
          i, fmt::format("expects {} operand{}, has {}", n, n == 1 ? "" : "s", i.operandCount()));
    return true;
  }
  bool atLeast(const HloInstruction& i, int64_t n) {
    if (i.operandCount() < n)
      return fail(i, fmt::format("expects at least {} operands, has {}", n, i.operandCount()));
    return true;
  }
  bool arrays(const HloInstruction& i) {
    for (int64_t k = 0; k < i.operandCount(); ++k)
      if (!i.operand(k)->shape().isArray())
        return fail(i, fmt::format("operand {} must be an array, is {}", k,
                                   i.operand(k)->shape().toString(false)));
    if (!i.shape().isArray())
      return fail(i, fmt::format("result must be an array, is {}", i.shape().toString(false)));
    return true;
  }
  bool sameShape(const HloInstruction& i, const Shape& expected, const char* what) {
    if (!i.shape().compatible(expected))
      return fail(i, fmt::format("result shape {} does not match {} {}", i.shape().toString(false),
                                 what, expected.toString(false)));
    return true;
  }
  bool inferred(const HloInstruction& i, bool dimsOnly = false) {
    std::string why;
    auto s = inferShape(i, &why);
    if (!s) return fail(i, why);
    if (dimsOnly ? (i.shape().isArray() && s->isArray() && i.shape().dims == s->dims)
                 : i.shape().compatible(*s))
      return true;
    return fail(i, fmt::format("result shape {} does not match the expected {}",
                               i.shape().toString(false), s->toString(false)));
  }
  const HloComputation* callee(const HloInstruction& i, const char* key) {
    const HloComputation* c = i.calledComputation(key);
    if (!c) fail(i, fmt::format("needs {}=", key));
    return c;
  }
  // `c` takes params compatible with `params` and returns `result` (if given).
  bool signature(const HloInstruction& i, const HloComputation* c, const std::vector<Shape>& params,
                 const Shape* result) {
    if (!c) return false;
    if (c->parameterCount() != static_cast<int64_t>(params.size()))
      return fail(i, fmt::format("calls %{} with {} arguments, it takes {}", c->name(),
                                 params.size(), c->parameterCount()));
    auto ps = c->parameters();
    for (size_t k = 0; k < params.size(); ++k)
      if (ps[k] && !ps[k]->shape().compatible(params[k]))
        return fail(i, fmt::format("argument {} of %{} is {}, the parameter is {}", k, c->name(),
                                   params[k].toString(false), ps[k]->shape().toString(false)));
    if (result && c->root() && !c->root()->shape().compatible(*result))
      return fail(i, fmt::format("%{} returns {}, expected {}", c->name(),
                                 c->root()->shape().toString(false), result->toString(false)));
    return true;
  }
  std::vector<Shape> operandShapes(const HloInstruction& i, int64_t from = 0) {
    std::vector<Shape> out;
    for (int64_t k = from; k < i.operandCount(); ++k) out.push_back(i.operand(k)->shape());
    return out;
  }
  // A reducer taking 2*n scalars.
  bool reducer(const HloInstruction& i, int64_t n) {
    const HloComputation* c = callee(i, "to_apply");
    if (!c) return false;
    if (c->parameterCount() != 2 * n)
      return fail(i, fmt::format("to_apply=%{} takes {} parameters, expected {}", c->name(),
                                 c->parameterCount(), 2 * n));
    return true;
  }

  bool verifyElementwise(const HloInstruction& i) {
    HloOpcode op = i.opcode();
    if (isElementwiseUnary(op) && !operands(i, 1)) return false;
    if (isElementwiseBinary(op) && !operands(i, 2)) return false;
    if ((op == HloOpcode::Select || op == HloOpcode::Clamp) && !operands(i, 3)) return false;
    if (!arrays(i)) return false;
    for (int64_t k = 0; k < i.operandCount(); ++k) {
      const Shape& s = i.operand(k)->shape();
      bool scalarOk = (op == HloOpcode::Select && k == 0) || (op == HloOpcode::Clamp && k != 1);
      if (s.dims != i.shape().dims && !(scalarOk && s.isScalar()))
        return fail(i, fmt::format("operand {} has shape {}, the result has {}", k,
                                   s.toString(false), i.shape().toString(false)));
    }
    PrimitiveType rt = i.shape().type;
    switch (op) {
      case HloOpcode::Convert:
      case HloOpcode::StochasticConvert:
      case HloOpcode::Real:
      case HloOpcode::Imag:
      case HloOpcode::Complex:
        return true;
      case HloOpcode::BitcastConvert:
        return true;
      case HloOpcode::Compare:
        if (!i.attrs().direction) return fail(i, "compare needs direction=");
        if (rt != PrimitiveType::Pred) return fail(i, "compare must produce pred");
        if (i.operand(0)->shape().type != i.operand(1)->shape().type)
          return fail(i, "compare operands have different element types");
        return true;
      case HloOpcode::IsFinite:
        if (rt != PrimitiveType::Pred) return fail(i, "is-finite must produce pred");
        return true;
      case HloOpcode::Select:
        if (i.operand(0)->shape().type != PrimitiveType::Pred)
          return fail(i, "select's predicate must be pred");
        if (i.operand(1)->shape().type != rt || i.operand(2)->shape().type != rt)
          return fail(i, "select's branches must have the result's element type");
        return true;
      default:
        for (int64_t k = 0; k < i.operandCount(); ++k)
          if (i.operand(k)->shape().type != rt)
            return fail(i, fmt::format("operand {} has element type {}, the result has {}", k,
                                       primitiveTypeName(i.operand(k)->shape().type),
                                       primitiveTypeName(rt)));
        return true;
    }
  }

  bool verifyBroadcast(const HloInstruction& i) {
    if (!operands(i, 1) || !arrays(i)) return false;
    const Shape& in = i.operand(0)->shape();
    const auto& dims = i.dimensions();
    if (static_cast<int64_t>(dims.size()) != in.rank())
      return fail(i, fmt::format("dimensions has {} entries, the operand has rank {}", dims.size(),
                                 in.rank()));
    std::vector<bool> used(static_cast<size_t>(i.shape().rank()), false);
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] < 0 || dims[k] >= i.shape().rank() || used[dims[k]])
        return fail(i, fmt::format("dimensions entry {} is invalid", dims[k]));
      used[dims[k]] = true;
      if (i.shape().dims[dims[k]] != in.dims[k])
        return fail(i, fmt::format("operand dimension {} (size {}) maps to result dimension {} "
                                   "(size {})",
                                   k, in.dims[k], dims[k], i.shape().dims[dims[k]]));
    }
    if (in.type != i.shape().type) return fail(i, "broadcast changes the element type");
    return true;
  }

  bool verifyDynamicSlice(const HloInstruction& i, bool update) {
    int64_t base = update ? 2 : 1;
    if (!atLeast(i, base)) return false;
    const Shape& in = i.operand(0)->shape();
    if (!in.isArray()) return fail(i, "operand 0 must be an array");
    if (i.operandCount() != base + in.rank())
      return fail(
          i, fmt::format("expects {} start indices, has {}", in.rank(), i.operandCount() - base));
    for (int64_t k = base; k < i.operandCount(); ++k) {
      const Shape& s = i.operand(k)->shape();
      if (!s.isScalar() || !isIntegralType(s.type))
        return fail(i, fmt::format("start index {} must be an integer scalar", k - base));
    }
    if (update) {
      const Shape& u = i.operand(1)->shape();
      if (!u.isArray() || u.rank() != in.rank()) return fail(i, "update rank differs");
      for (int64_t d = 0; d < in.rank(); ++d)
        if (u.dims[d] > in.dims[d]) return fail(i, "update is larger than the operand");
      return sameShape(i, in, "the operand");
    }
    auto sizes = i.intListAttr("dynamic_slice_sizes");
    if (!sizes) return fail(i, "needs dynamic_slice_sizes=");
    if (static_cast<int64_t>(sizes->size()) != in.rank())
      return fail(i, "dynamic_slice_sizes has the wrong length");
    for (int64_t d = 0; d < in.rank(); ++d)
      if ((*sizes)[d] < 0 || (*sizes)[d] > in.dims[d])
        return fail(i, fmt::format("slice size {} is out of bounds", (*sizes)[d]));
    return sameShape(i, Shape::array(in.type, *sizes), "dynamic_slice_sizes");
  }

  bool verifyInstruction(const HloInstruction& i) {
    const Shape& s = i.shape();
    if (!s.isValid()) return fail(i, "has no shape");
    HloOpcode op = i.opcode();
    if (isElementwise(op)) return verifyElementwise(i);
    switch (op) {
      case HloOpcode::Parameter:
        return operands(i, 0);
      case HloOpcode::Constant: {
        if (!operands(i, 0)) return false;
        const Literal* l = i.literal();
        if (!l) return fail(i, "constant has no value");
        if (!l->shape.compatible(s)) return fail(i, "the value's shape differs from the result");
        return true;
      }
      case HloOpcode::Iota: {
        if (!operands(i, 0) || !arrays(i)) return false;
        auto d = i.intAttr("iota_dimension");
        if (!d || *d < 0 || *d >= std::max<int64_t>(s.rank(), 1))
          return fail(i, "needs iota_dimension= within the result's rank");
        return true;
      }
      case HloOpcode::Broadcast:
        return verifyBroadcast(i);
      case HloOpcode::Reshape:
        if (!operands(i, 1) || !arrays(i)) return false;
        if (i.operand(0)->shape().type != s.type)
          return fail(i, "reshape changes the element type");
        if (i.operand(0)->shape().elementCount() != s.elementCount())
          return fail(i, fmt::format("reshape from {} to {} changes the element count",
                                     i.operand(0)->shape().toString(false), s.toString(false)));
        return true;
      case HloOpcode::Bitcast: {
        if (!operands(i, 1)) return false;
        const Shape& in = i.operand(0)->shape();
        if (in.isArray() && s.isArray() &&
            in.elementCount() * bitWidth(in.type) != s.elementCount() * bitWidth(s.type))
          return fail(i, fmt::format("bitcast from {} to {} changes the size in bytes",
                                     in.toString(false), s.toString(false)));
        return true;
      }
      case HloOpcode::Transpose:
      case HloOpcode::Slice:
      case HloOpcode::Concatenate:
      case HloOpcode::Pad:
      case HloOpcode::Reverse:
        if (!arrays(i)) return false;
        if (op == HloOpcode::Reverse) {
          for (int64_t d : i.dimensions())
            if (d < 0 || d >= s.rank()) return fail(i, "reverse dimension out of range");
        }
        if (op == HloOpcode::Pad && !operands(i, 2)) return false;
        if (op == HloOpcode::Pad && !i.operand(1)->shape().isScalar())
          return fail(i, "the padding value must be a scalar");
        return inferred(i);
      case HloOpcode::Dot:
        if (!operands(i, 2) || !arrays(i)) return false;
        return inferred(i, /*dimsOnly=*/true);
      case HloOpcode::Reduce: {
        if (i.operandCount() < 2 || i.operandCount() % 2)
          return fail(i, "reduce needs N inputs and N init values");
        int64_t n = i.operandCount() / 2;
        for (int64_t k = 0; k < n; ++k) {
          if (!i.operand(k)->shape().isArray() ||
              i.operand(k)->shape().dims != i.operand(0)->shape().dims)
            return fail(i, "reduce inputs must be arrays of one shape");
          if (!i.operand(n + k)->shape().isScalar())
            return fail(i, fmt::format("init value {} must be a scalar", k));
        }
        if (!reducer(i, n)) return false;
        return inferred(i, n == 1);
      }
      case HloOpcode::Tuple:
      case HloOpcode::GetTupleElement:
        return inferred(i);
      case HloOpcode::DynamicSlice:
        return verifyDynamicSlice(i, false);
      case HloOpcode::DynamicUpdateSlice:
        return verifyDynamicSlice(i, true);
      case HloOpcode::Copy:
        return operands(i, 1) && sameShape(i, i.operand(0)->shape(), "the operand");
      case HloOpcode::While: {
        if (!operands(i, 1)) return false;
        const Shape& in = i.operand(0)->shape();
        if (!sameShape(i, in, "the operand")) return false;
        Shape pred = Shape::scalar(PrimitiveType::Pred);
        return signature(i, callee(i, "condition"), {in}, &pred) &&
               signature(i, callee(i, "body"), {in}, &in);
      }
      case HloOpcode::Conditional: {
        if (!atLeast(i, 1)) return false;
        const Shape& sel = i.operand(0)->shape();
        if (!sel.isScalar() || (sel.type != PrimitiveType::Pred && sel.type != PrimitiveType::S32))
          return fail(i, "the branch selector must be pred[] or s32[]");
        auto branches = i.calledComputations();
        if (static_cast<int64_t>(branches.size()) != i.operandCount() - 1)
          return fail(i, fmt::format("has {} branches and {} branch operands", branches.size(),
                                     i.operandCount() - 1));
        if (sel.type == PrimitiveType::Pred && branches.size() != 2)
          return fail(i, "a pred conditional needs exactly 2 branches");
        for (size_t b = 0; b < branches.size(); ++b)
          if (!signature(i, branches[b], {i.operand(static_cast<int64_t>(b) + 1)->shape()}, &s))
            return false;
        return true;
      }
      case HloOpcode::Call:
        return signature(i, callee(i, "to_apply"), operandShapes(i), &s);
      case HloOpcode::Fusion:
        return signature(i, callee(i, "calls"), operandShapes(i), &s);
      case HloOpcode::Map: {
        if (!atLeast(i, 1) || !arrays(i)) return false;
        for (int64_t k = 0; k < i.operandCount(); ++k)
          if (i.operand(k)->shape().dims != s.dims)
            return fail(i, "map operands must have the result's dimensions");
        const HloComputation* c = callee(i, "to_apply");
        return c && (c->parameterCount() == i.operandCount() ||
                     fail(i, "to_apply takes a different number of parameters"));
      }
      case HloOpcode::Sort: {
        if (!atLeast(i, 1)) return false;
        for (int64_t k = 0; k < i.operandCount(); ++k)
          if (!i.operand(k)->shape().isArray() ||
              i.operand(k)->shape().dims != i.operand(0)->shape().dims)
            return fail(i, "sort operands must be arrays of one shape");
        return reducer(i, i.operandCount());
      }
      case HloOpcode::ReduceWindow: {
        if (i.operandCount() < 2 || i.operandCount() % 2)
          return fail(i, "reduce-window needs N inputs and N init values");
        if (!i.attrs().window) return fail(i, "needs window=");
        if (static_cast<int64_t>(i.attrs().window->size()) != i.operand(0)->shape().rank())
          return fail(i, "the window's rank differs from the operand's");
        return reducer(i, i.operandCount() / 2);
      }
      case HloOpcode::SelectAndScatter:
        if (!operands(i, 3)) return false;
        if (!i.attrs().window) return fail(i, "needs window=");
        return callee(i, "select") && callee(i, "scatter");
      case HloOpcode::Gather:
        if (!operands(i, 2) || !arrays(i)) return false;
        if (!i.intListAttr("slice_sizes")) return fail(i, "needs slice_sizes=");
        if (i.operand(0)->shape().type != s.type) return fail(i, "gather changes the element type");
        return true;
      case HloOpcode::Scatter:
        if (i.operandCount() < 3 || i.operandCount() % 2 == 0)
          return fail(i, "scatter needs N operands, the indices and N updates");
        return reducer(i, (i.operandCount() - 1) / 2) &&
               (s.compatible(i.operand(0)->shape()) || s.isTuple() ||
                fail(i, "scatter's result must have the operand's shape"));
      case HloOpcode::CustomCall:
        if (!i.attrs().customCallTarget) return fail(i, "needs custom_call_target=");
        return true;
      case HloOpcode::AllReduce:
      case HloOpcode::AllReduceStart:
        if (!atLeast(i, 1) || !reducer(i, 1)) return false;
        return inferred(i);
      case HloOpcode::ReduceScatter:
        if (!atLeast(i, 1) || !reducer(i, 1)) return false;
        if (i.dimensions().size() != 1) return fail(i, "needs one dimension in dimensions=");
        return true;
      case HloOpcode::AllGather: {
        if (!atLeast(i, 1)) return false;
        if (i.dimensions().size() != 1) return fail(i, "needs one dimension in dimensions=");
        int64_t d = i.dimensions()[0];
        std::vector<Shape> outs = s.isTuple() ? s.tupleShapes : std::vector<Shape>{s};
        if (static_cast<int64_t>(outs.size()) != i.operandCount())
          return fail(i, "needs one result per operand");
        for (int64_t k = 0; k < i.operandCount(); ++k) {
          const Shape& in = i.operand(k)->shape();
          const Shape& o = outs[k];
          if (!in.isArray() || !o.isArray() || in.rank() != o.rank() || in.type != o.type)
            return fail(i, fmt::format("operand {} and its result differ in rank or type", k));
          if (in.rank() == 0) continue;
          if (d < 0 || d >= in.rank()) return fail(i, "all-gather dimension out of range");
          for (int64_t r = 0; r < in.rank(); ++r)
            if (r == d ? (in.dims[r] == 0 ? o.dims[r] != 0 : o.dims[r] % in.dims[r] != 0)
                       : in.dims[r] != o.dims[r])
              return fail(i, fmt::format("result {} is not a gather of operand {} along "
                                         "dimension {}",
                                         o.toString(false), in.toString(false), d));
        }
        return true;
      }
      case HloOpcode::CollectivePermute:
        if (!atLeast(i, 1)) return false;
        return sameShape(i, i.operand(0)->shape(), "the operand");
      case HloOpcode::AllReduceDone:
      case HloOpcode::AllGatherDone:
      case HloOpcode::CollectivePermuteDone:
      case HloOpcode::CopyDone:
      case HloOpcode::AsyncDone:
      case HloOpcode::SendDone:
      case HloOpcode::RecvDone:
        if (!operands(i, 1)) return false;
        if (op == HloOpcode::AllReduceDone || op == HloOpcode::AllGatherDone) return inferred(i);
        return true;
      case HloOpcode::AllGatherStart:
        return atLeast(i, 1);
      case HloOpcode::AddDependency:
        // add-dependency(value, token): the value, ordered after the token.
        if (!operands(i, 2)) return false;
        if (!i.operand(1)->shape().isToken())
          return fail(i, "add-dependency's second operand must be a token");
        return sameShape(i, i.operand(0)->shape(), "the operand");
      case HloOpcode::Domain:
        return operands(i, 1) && sameShape(i, i.operand(0)->shape(), "the operand");
      case HloOpcode::Send:
      case HloOpcode::Recv: {
        // send(data, token) / recv(token) -> (data, u32[] context, token[]).
        bool send = op == HloOpcode::Send;
        if (!operands(i, send ? 2 : 1)) return false;
        if (!i.operand(send ? 1 : 0)->shape().isToken())
          return fail(i, fmt::format("{}'s last operand must be a token", send ? "send" : "recv"));
        if (!s.isTuple() || s.tupleShapes.size() != 3 || !s.tupleShapes[2].isToken() ||
            !s.tupleShapes[1].compatible(Shape::scalar(PrimitiveType::U32)))
          return fail(
              i, fmt::format("{} must produce (data, u32[], token[])", send ? "send" : "recv"));
        if (send && !s.tupleShapes[0].compatible(i.operand(0)->shape()))
          return fail(i, "send's data result must have the operand's shape");
        return true;
      }
      case HloOpcode::SetDimensionSize: {
        // set-dimension-size(array, s32[] size), dimensions={d}: the array.
        if (!operands(i, 2)) return false;
        const Shape& in = i.operand(0)->shape();
        if (!in.isArray()) return fail(i, "operand 0 must be an array");
        if (!i.operand(1)->shape().compatible(Shape::scalar(PrimitiveType::S32)))
          return fail(i, "the size operand must be s32[]");
        if (i.dimensions().size() != 1 || i.dimensions()[0] < 0 || i.dimensions()[0] >= in.rank())
          return fail(i, "needs one dimension in dimensions= within the operand's rank");
        return sameShape(i, in, "the operand");
      }
      case HloOpcode::PartitionId:
      case HloOpcode::ReplicaId:
        return operands(i, 0) && sameShape(i, Shape::scalar(PrimitiveType::U32), "u32[]");
      case HloOpcode::AfterAll:
        for (const HloInstruction* o : i.operands())
          if (!o->shape().isToken()) return fail(i, "after-all operands must be tokens");
        return s.isToken() || fail(i, "after-all must produce a token");
      case HloOpcode::Infeed:
        if (!operands(i, 1)) return false;
        if (!i.operand(0)->shape().isToken()) return fail(i, "infeed's operand must be a token");
        if (!s.isTuple() || s.tupleShapes.size() != 2 || !s.tupleShapes[1].isToken())
          return fail(i, "infeed must produce (data, token[])");
        return true;
      case HloOpcode::RngBitGenerator:
        if (!operands(i, 1)) return false;
        if (!s.isTuple() || s.tupleShapes.size() != 2)
          return fail(i, "rng-bit-generator must produce (state, values)");
        return s.tupleShapes[0].compatible(i.operand(0)->shape()) ||
               fail(i, "the returned state must have the input state's shape");
      case HloOpcode::BatchNormTraining:
      case HloOpcode::BatchNormGrad:
      case HloOpcode::BatchNormInference: {
        int64_t n = op == HloOpcode::BatchNormTraining ? 3 : 5;
        if (!operands(i, n)) return false;
        auto f = i.intAttr("feature_index");
        if (!f || *f < 0 || *f >= i.operand(0)->shape().rank())
          return fail(i, "needs feature_index= within the operand's rank");
        if (op == HloOpcode::BatchNormInference)
          return sameShape(i, i.operand(0)->shape(), "the operand");
        if (!s.isTuple() || s.tupleShapes.size() != 3) return fail(i, "must produce a 3-tuple");
        return s.tupleShapes[0].compatible(i.operand(0)->shape()) ||
               fail(i, "the first result must have the operand's shape");
      }
      default:
        return true;
    }
  }

  const HloModule& m_;
  const HloComputation* comp_ = nullptr;
  VerifierResult result_;
};

}  // namespace

VerifierResult verifyModule(const HloModule& module) { return Verifier(module).run(); }

}  // namespace tpusim::hlo
