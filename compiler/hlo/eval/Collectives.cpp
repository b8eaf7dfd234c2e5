#include "compiler/hlo/eval/Collectives.h"

#include <fmt/format.h>

#include <numeric>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Interpreter.h"
#include "compiler/hlo/eval/ShapeOps.h"

namespace tpusim::hlo::eval {

std::shared_ptr<const std::vector<Literal>> Rendezvous::exchange(int64_t seq, int64_t replica,
                                                                 const std::string& key,
                                                                 Literal value) {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) throw EvalError(why_);
  Slot& slot = slots_[seq];
  if (!slot.values) {
    slot.values = std::make_shared<std::vector<Literal>>(static_cast<size_t>(replicas_));
    slot.key = key;
  } else if (slot.key != key) {
    aborted_ = true;
    why_ = fmt::format("replicas diverged: collective #{} is %{} on one replica and %{} on another",
                       seq, slot.key, key);
    cv_.notify_all();
    throw EvalError(why_);
  }
  (*slot.values)[static_cast<size_t>(replica)] = std::move(value);
  ++slot.deposited;
  cv_.notify_all();
  cv_.wait(lock, [&] { return aborted_ || slot.deposited == replicas_; });
  if (aborted_) throw EvalError(why_);
  std::shared_ptr<const std::vector<Literal>> all = slot.values;
  if (++slot.taken == replicas_) slots_.erase(seq);
  return all;
}

void Rendezvous::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_) {
    aborted_ = true;
    why_ = why;
  }
  cv_.notify_all();
}

namespace {

// The group holding `replica`, and its position in it.
std::pair<std::vector<int64_t>, size_t> groupOf(const HloInstruction& inst, int64_t replica,
                                                int64_t replicas) {
  std::vector<std::vector<int64_t>> groups;
  if (inst.attrs().replicaGroups) groups = inst.attrs().replicaGroups->expand();
  std::vector<int64_t> all(static_cast<size_t>(replicas));
  std::iota(all.begin(), all.end(), 0);
  if (groups.empty() || (groups.size() == 1 && groups[0].empty())) return {all, replica};
  for (const auto& g : groups) {
    for (int64_t id : g)
      if (id < 0 || id >= replicas)
        throw EvalError(
            fmt::format("replica_groups name device {} but the module is evaluated on "
                        "{} replica(s); evaluate with more replicas (--replicas)",
                        id, replicas));
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == replica) return {g, i};
  }
  throw EvalError(fmt::format("replica {} is in none of the replica_groups", replica));
}

// Element-wise a (+) b with the reducer (tuples element by element).
Literal combine(const Reducer& r, const Literal& a, const Literal& b) {
  if (a.isTuple()) {
    std::vector<Literal> elems;
    for (size_t i = 0; i < a.elements().size(); ++i)
      elems.push_back(combine(r, a.elements()[i], b.elements().at(i)));
    return Literal::tuple(std::move(elems));
  }
  if (r.fast) return binary(*r.fast, a, b);
  Literal out = a;
  std::vector<Literal> args(2);
  for (int64_t i = 0; i < a.numElements(); ++i) {
    args[0] = scalarAt(a, i);
    args[1] = scalarAt(b, i);
    std::vector<Literal> v = r.call(args);
    if (v.size() != 1 || v[0].isTuple() || v[0].type() != a.type())
      throw EvalError("the reduction computation returned a value of the wrong type");
    setScalarAt(out, i, v[0]);
  }
  return out;
}

// Applies f to an array value or to each element of a tuple value.
template <typename F>
Literal perArray(const Literal& v, F f) {
  if (!v.isTuple()) return f(v, 0);
  std::vector<Literal> elems;
  for (size_t i = 0; i < v.elements().size(); ++i) elems.push_back(f(v.elements()[i], i));
  return Literal::tuple(std::move(elems));
}

Literal chunk(const Literal& v, int64_t dim, int64_t parts, int64_t index) {
  if (dim < 0 || dim >= v.rank()) throw EvalError(fmt::format("dimension {} is out of range", dim));
  int64_t size = v.dims()[static_cast<size_t>(dim)];
  if (parts <= 0 || size % parts != 0)
    throw EvalError(
        fmt::format("dimension {} of size {} does not split into {} parts", dim, size, parts));
  std::vector<int64_t> starts(v.dims().size(), 0), limits = v.dims(), strides(v.dims().size(), 1);
  starts[static_cast<size_t>(dim)] = index * (size / parts);
  limits[static_cast<size_t>(dim)] = (index + 1) * (size / parts);
  return sliceLit(v, starts, limits, strides);
}

bool isStart(HloOpcode op) {
  return op == HloOpcode::AllReduceStart || op == HloOpcode::AllGatherStart ||
         op == HloOpcode::CollectivePermuteStart;
}

}  // namespace

Literal Interpreter::evalCollective(const HloInstruction& inst,
                                    const std::vector<const Literal*>& ops) {
  HloOpcode op = inst.opcode();
  if (op == HloOpcode::AllReduceDone || op == HloOpcode::AllGatherDone ||
      op == HloOpcode::CollectivePermuteDone) {
    // The start already holds the result: itself, or element 1 of (operand, result, ...).
    if (matchesShape(*ops[0], inst.shape())) return *ops[0];
    if (ops[0]->isTuple() && ops[0]->elements().size() >= 2) return ops[0]->elements()[1];
    throw EvalError("the operand is not the value of a matching -start");
  }
  if (op == HloOpcode::RaggedAllToAll)
    throw EvalError("ragged-all-to-all is not supported by the reference evaluator");

  Literal mine = ops.size() == 1 ? *ops[0] : Literal::tuple([&] {
    std::vector<Literal> v;
    for (const Literal* l : ops) v.push_back(*l);
    return v;
  }());
  std::shared_ptr<const std::vector<Literal>> all =
      rendezvous_ ? rendezvous_->exchange(collectiveSeq_++, replica_, inst.name(), mine)
                  : std::make_shared<const std::vector<Literal>>(1, mine);
  auto [group, pos] = groupOf(inst, replica_, replicas_);
  auto member = [&](size_t i) -> const Literal& { return all->at(static_cast<size_t>(group[i])); };
  const std::vector<int64_t>& dims = inst.dimensions();
  int64_t g = static_cast<int64_t>(group.size());

  Literal result;
  switch (op) {
    case HloOpcode::AllReduce:
    case HloOpcode::AllReduceStart:
    case HloOpcode::ReduceScatter: {
      Reducer r = makeReducer(inst.toApply(), inst);
      Literal acc = member(0);
      for (size_t i = 1; i < group.size(); ++i) acc = combine(r, acc, member(i));
      if (op == HloOpcode::ReduceScatter) {
        if (dims.size() != 1) throw EvalError("reduce-scatter needs dimensions={d}");
        acc = perArray(acc, [&](const Literal& v, size_t) {
          return chunk(v, dims[0], g, static_cast<int64_t>(pos));
        });
      }
      result = std::move(acc);
      break;
    }
    case HloOpcode::AllGather:
    case HloOpcode::AllGatherStart: {
      if (dims.size() != 1) throw EvalError("all-gather needs dimensions={d}");
      result = perArray(mine, [&](const Literal&, size_t e) {
        std::vector<const Literal*> parts;
        for (size_t i = 0; i < group.size(); ++i)
          parts.push_back(mine.isTuple() ? &member(i).elements().at(e) : &member(i));
        return concatenateLit(parts, dims[0]);
      });
      break;
    }
    case HloOpcode::AllToAll: {
      if (!dims.empty()) {
        if (ops.size() != 1) throw EvalError("all-to-all with dimensions needs one operand");
        std::vector<Literal> pieces;
        for (size_t i = 0; i < group.size(); ++i)
          pieces.push_back(chunk(member(i), dims[0], g, static_cast<int64_t>(pos)));
        std::vector<const Literal*> ptrs;
        for (const Literal& p : pieces) ptrs.push_back(&p);
        result = concatenateLit(ptrs, dims[0]);
      } else {
        if (static_cast<int64_t>(ops.size()) != g)
          throw EvalError(
              fmt::format("all-to-all without dimensions needs one operand per group "
                          "member ({}), got {}",
                          g, ops.size()));
        std::vector<Literal> elems;
        for (size_t i = 0; i < group.size(); ++i)
          elems.push_back(g == 1 ? member(i) : member(i).elements().at(pos));
        result = g == 1 && !inst.shape().isTuple() ? std::move(elems[0])
                                                   : Literal::tuple(std::move(elems));
      }
      break;
    }
    case HloOpcode::CollectivePermute:
    case HloOpcode::CollectivePermuteStart: {
      const NamedAttr* pairs = inst.findGeneric("source_target_pairs");
      result = Literal();
      bool found = false;
      if (pairs)
        for (const auto& p : pairs->value.lists) {
          if (p.size() != 2) throw EvalError("source_target_pairs entries must be {source,target}");
          if (p[0] < 0 || p[0] >= replicas_ || p[1] < 0 || p[1] >= replicas_)
            throw EvalError(
                fmt::format("source_target_pairs name device {} but the module is "
                            "evaluated on {} replica(s)",
                            std::max(p[0], p[1]), replicas_));
          if (p[1] == replica_) {
            result = all->at(static_cast<size_t>(p[0]));
            found = true;
          }
        }
      if (!found)
        result = perArray(
            mine, [](const Literal& v, size_t) { return Literal::array(v.type(), v.dims()); });
      break;
    }
    case HloOpcode::CollectiveBroadcast:
      result = member(0);
      break;
    default:
      throw EvalError(
          fmt::format("collective {} is not supported by the reference evaluator", opcodeName(op)));
  }
  if (!isStart(op) || matchesShape(result, inst.shape())) return result;
  // -start forms whose shape is (operand(s), result, context...).
  if (!inst.shape().isTuple() || inst.shape().tupleShapes.size() < 2)
    throw EvalError(
        fmt::format("unexpected shape {} for {}", inst.shape().toString(false), opcodeName(op)));
  std::vector<Literal> elems{mine, std::move(result)};
  for (size_t i = 2; i < inst.shape().tupleShapes.size(); ++i)
    elems.push_back(zerosOf(inst.shape().tupleShapes[i], describe(inst)));
  return Literal::tuple(std::move(elems));
}

}  // namespace tpusim::hlo::eval
