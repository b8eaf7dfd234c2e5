// spmd-collectives: every collective becomes the few SPMD primitives the back
// end lowers to remote DMAs (compiler/lower/collectives/CollectiveLowering.h:
// collective-permute, all-gather along dimension 0, the device id) plus
// ordinary HLO the chip already runs (slices, element-wise reductions,
// dynamic-slice / dynamic-update-slice at per-device indices, transposes).
//
//  - all-reduce: one-shot (all-gather of every member's operand, then the
//    members combined in group order with to_apply's op) or ring (n - 1
//    reduce-scatter steps: send a chunk to the ring neighbour, combine what
//    arrives; with more than 2 members and an even chunk, half of it goes
//    each way round in one ring permute (custom-call "tpusim$ring-permute");
//    then an all-gather of the reduced chunks), as
//    chooseReductionAlgorithm (SpmdPlan.h) picks for the size and the slice;
//    or, where the groups are sub-grids of the slice and its estimate is
//    lower, the grid reduce-scatter (custom-call "tpusim$grid-reduce-scatter",
//    GridReduceScatter.h: pipelined per-dimension rings, the combine on the
//    VPU inside the collective) then the all-gather of the shares.
//  - reduce-scatter: the same on the operand with the scattered dimension made
//    major, keeping this member's chunk.
//  - all-gather: along dimension 0 it is a primitive; along another, an
//    all-gather of [1, ...] and a transpose.
//  - all-to-all: n - 1 collective-permutes (member p sends chunk p + s to
//    member p + s); tuple all-to-all stacks its operands first.
//  - collective-permute-start / -done of one array: the async primitives
//    (custom-calls "tpusim$permute-start" / "-done"), so the work between
//    them overlaps the transfer; all-gather-start / -done and
//    all-reduce-start / -done: the synchronous op's expansion with its
//    all-gathers as the async primitives "tpusim$all-gather-start" / "-done"
//    (the one-shot all-reduce's exchange overlaps that work, its combine
//    follows the done); the other -start / -done pairs: the synchronous op at
//    the -done.
//  - tuple operands: one collective per array.
// convert(partition-id or replica-id) becomes a convert of the s32 device id.
// Indices that depend on the device (a member's position, the chunk a ring
// step sends) are tables: a constant s32[devices] read at the device id
// (custom-call "tpusim$device-id").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/lower/buffers/ShapeBytes.h"
#include "compiler/lower/collectives/CollectiveLowering.h"
#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/GridReduceScatter.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;
using lower::CannotLower;
using lower::DeviceGroups;

bool isCollectiveToExpand(HloOpcode op) {
  switch (op) {
    case HloOpcode::AllReduce:
    case HloOpcode::AllReduceStart:
    case HloOpcode::AllReduceDone:
    case HloOpcode::AllGather:
    case HloOpcode::AllGatherStart:
    case HloOpcode::AllGatherDone:
    case HloOpcode::ReduceScatter:
    case HloOpcode::AllToAll:
    case HloOpcode::CollectivePermute:
    case HloOpcode::CollectivePermuteStart:
    case HloOpcode::CollectivePermuteDone:
      return true;
    default:
      return false;
  }
}

// The element-wise op of a to_apply computation `op(p0, p1)`.
std::optional<HloOpcode> reducerOp(const HloComputation* c) {
  if (!c || !c->root()) return std::nullopt;
  const HloInstruction* r = c->root();
  static const HloOpcode kOps[] = {HloOpcode::Add,     HloOpcode::Multiply, HloOpcode::Maximum,
                                   HloOpcode::Minimum, HloOpcode::And,      HloOpcode::Or,
                                   HloOpcode::Xor};
  if (std::find(std::begin(kOps), std::end(kOps), r->opcode()) == std::end(kOps)) return {};
  if (r->operandCount() != 2) return {};
  const HloInstruction* a = r->operand(0);
  const HloInstruction* b = r->operand(1);
  if (a->opcode() != HloOpcode::Parameter || b->opcode() != HloOpcode::Parameter) return {};
  std::vector<int64_t> ps{a->attrs().parameterNumber, b->attrs().parameterNumber};
  std::sort(ps.begin(), ps.end());
  if (ps != std::vector<int64_t>{0, 1}) return {};
  return r->opcode();
}

class Expander {
 public:
  Expander(HloComputation* comp, int64_t devices, std::vector<int> slice,
           const target::ChipConfig& chip)
      : comp_(comp), devices_(devices), slice_(std::move(slice)), chip_(chip) {}

  // Expands `inst`; returns its replacement. With `async` (the synchronous
  // form of an all-gather-start / all-reduce-start pair) its all-gathers are
  // the async primitives, so the work between the pair runs while the
  // exchange is in flight.
  HloInstruction* expand(HloInstruction* inst, bool async = false) {
    async_ = async;
    HloInstruction* r = expandOne(inst);
    async_ = false;
    return r;
  }

 private:
  HloInstruction* add(HloOpcode op, const std::string& base, Shape shape,
                      std::vector<HloInstruction*> operands) {
    HloInstruction* i = addNew(comp_, op, base, std::move(shape), std::move(operands));
    i->attrs().metadata = current_->attrs().metadata;
    return i;
  }
  std::string base() const { return current_->name(); }

  HloInstruction* reshape(HloInstruction* x, const std::vector<int64_t>& dims) {
    if (x->shape().dims == dims) return x;
    return add(HloOpcode::Reshape, base() + ".reshape", Shape::array(x->shape().type, dims), {x});
  }
  HloInstruction* transpose(HloInstruction* x, const std::vector<int64_t>& perm) {
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int64_t(i);
    if (identity) return x;
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(x->shape().dims[size_t(p)]);
    HloInstruction* t =
        add(HloOpcode::Transpose, base() + ".transpose", Shape::array(x->shape().type, dims), {x});
    t->attrs().dimensions = perm;
    return t;
  }
  // x[i] along dimension 0, without that dimension.
  HloInstruction* row(HloInstruction* x, int64_t i) {
    std::vector<int64_t> dims = x->shape().dims;
    std::vector<hlo::SliceDim> sl;
    for (size_t k = 0; k < dims.size(); ++k)
      sl.push_back(k == 0 ? hlo::SliceDim{i, i + 1, 1} : hlo::SliceDim{0, dims[k], 1});
    dims[0] = 1;
    HloInstruction* s =
        add(HloOpcode::Slice, base() + ".slice", Shape::array(x->shape().type, dims), {x});
    s->attrs().slice = sl;
    return reshape(s, std::vector<int64_t>(dims.begin() + 1, dims.end()));
  }
  HloInstruction* binary(HloOpcode op, HloInstruction* a, HloInstruction* b) {
    return add(op, base() + ".combine", a->shape(), {a, b});
  }
  HloInstruction* s32Constant(const std::vector<int64_t>& values, bool scalar) {
    Shape s = scalar ? Shape::array(hlo::PrimitiveType::S32, {})
                     : Shape::array(hlo::PrimitiveType::S32, {int64_t(values.size())});
    hlo::Literal lit = hlo::Literal::zeros(s);
    for (size_t i = 0; i < values.size(); ++i) lit.setInt(int64_t(i), values[i]);
    HloInstruction* c = add(HloOpcode::Constant, base() + ".table", s, {});
    c->attrs().literal = lit;
    return c;
  }
  HloInstruction* deviceId() {
    if (deviceId_) return deviceId_;
    deviceId_ =
        add(HloOpcode::CustomCall, "device-id", Shape::array(hlo::PrimitiveType::S32, {}), {});
    deviceId_->attrs().customCallTarget = "tpusim$device-id";
    return deviceId_;
  }
  // The s32[] value perDevice[device id].
  HloInstruction* perDevice(const std::vector<int64_t>& perDevice) {
    bool same = std::all_of(perDevice.begin(), perDevice.end(),
                            [&](int64_t v) { return v == perDevice[0]; });
    if (same) return s32Constant({perDevice[0]}, true);
    HloInstruction* table = s32Constant(perDevice, false);
    HloInstruction* ds = add(HloOpcode::DynamicSlice, base() + ".index",
                             Shape::array(hlo::PrimitiveType::S32, {1}), {table, deviceId()});
    ds->setGeneric("dynamic_slice_sizes", intList({1}));
    return reshape(ds, {});
  }
  static hlo::AttrValue intList(std::vector<int64_t> v) {
    hlo::AttrValue a;
    a.kind = hlo::AttrValue::Kind::IntList;
    a.list = std::move(v);
    return a;
  }
  std::vector<HloInstruction*> indices(HloInstruction* first, int64_t rank) {
    std::vector<HloInstruction*> out{first};
    for (int64_t k = 1; k < rank; ++k) out.push_back(s32Constant({0}, true));
    return out;
  }
  // x[index] along dimension 0 (kept, size 1).
  HloInstruction* dynRow(HloInstruction* x, HloInstruction* index) {
    std::vector<int64_t> dims = x->shape().dims;
    dims[0] = 1;
    std::vector<HloInstruction*> ops{x};
    for (HloInstruction* i : indices(index, x->shape().rank())) ops.push_back(i);
    HloInstruction* ds =
        add(HloOpcode::DynamicSlice, base() + ".chunk", Shape::array(x->shape().type, dims), ops);
    ds->setGeneric("dynamic_slice_sizes", intList(dims));
    return ds;
  }
  HloInstruction* dynUpdateRow(HloInstruction* x, HloInstruction* update, HloInstruction* index) {
    std::vector<HloInstruction*> ops{x, update};
    for (HloInstruction* i : indices(index, x->shape().rank())) ops.push_back(i);
    return add(HloOpcode::DynamicUpdateSlice, base() + ".update", x->shape(), ops);
  }
  void setGroups(HloInstruction* i, const DeviceGroups& groups) {
    hlo::ReplicaGroups g;
    g.groups = groups;
    i->attrs().replicaGroups = g;
  }
  // [n * x0, ...]: every member's x stacked along dimension 0; in an async
  // pair's expansion the async primitives (its done).
  HloInstruction* allGather0(HloInstruction* x, const DeviceGroups& groups) {
    std::vector<int64_t> dims = x->shape().dims;
    dims[0] *= int64_t(groups[0].size());
    const Shape shape = Shape::array(x->shape().type, dims);
    if (async_) {
      HloInstruction* s = add(HloOpcode::CustomCall, base() + ".all-gather-start", shape, {x});
      s->attrs().customCallTarget = std::string(lower::kAllGatherStartTarget);
      setGroups(s, groups);
      HloInstruction* d = add(HloOpcode::CustomCall, base() + ".all-gather-done", shape, {s, x});
      d->attrs().customCallTarget = std::string(lower::kAllGatherDoneTarget);
      return d;
    }
    HloInstruction* g = add(HloOpcode::AllGather, base() + ".all-gather", shape, {x});
    g->attrs().dimensions = std::vector<int64_t>{0};
    setGroups(g, groups);
    return g;
  }
  HloInstruction* permute(HloInstruction* x,
                          const std::vector<std::pair<int64_t, int64_t>>& pairs) {
    if (async_)
      return asyncPair(x, pairs, lower::kPermuteStartTarget, ".permute-start", ".permute-done");
    HloInstruction* p = add(HloOpcode::CollectivePermute, base() + ".permute", x->shape(), {x});
    setPairs(p, pairs);
    return p;
  }
  void setPairs(HloInstruction* i, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
    hlo::AttrValue v;
    v.kind = hlo::AttrValue::Kind::IntListList;
    for (auto [s, t] : pairs) v.lists.push_back({s, t});
    i->setGeneric("source_target_pairs", v);
  }
  // The async primitives of a (ring) permute in an async pair's expansion:
  // the work the scheduler puts between them overlaps the step's transfer.
  HloInstruction* asyncPair(HloInstruction* x,
                            const std::vector<std::pair<int64_t, int64_t>>& pairs,
                            std::string_view startTarget, const char* startName,
                            const char* doneName) {
    HloInstruction* s = add(HloOpcode::CustomCall, base() + startName, x->shape(), {x});
    s->attrs().customCallTarget = std::string(startTarget);
    setPairs(s, pairs);
    HloInstruction* d = add(HloOpcode::CustomCall, base() + doneName, x->shape(), {s, x});
    d->attrs().customCallTarget = std::string(lower::kPermuteDoneTarget);
    return d;
  }
  // x[r0:r1, c0:c1] of a rank-2 x.
  HloInstruction* slice2(HloInstruction* x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    HloInstruction* s = add(HloOpcode::Slice, base() + ".slice",
                            Shape::array(x->shape().type, {r1 - r0, c1 - c0}), {x});
    s->attrs().slice = {hlo::SliceDim{r0, r1, 1}, hlo::SliceDim{c0, c1, 1}};
    return s;
  }
  HloInstruction* concat(std::vector<HloInstruction*> parts, int64_t dim) {
    std::vector<int64_t> dims = parts[0]->shape().dims;
    dims[size_t(dim)] = 0;
    for (HloInstruction* p : parts) dims[size_t(dim)] += p->shape().dims[size_t(dim)];
    HloInstruction* c = add(HloOpcode::Concatenate, base() + ".concatenate",
                            Shape::array(parts[0]->shape().type, dims), parts);
    c->attrs().dimensions = std::vector<int64_t>{dim};
    return c;
  }
  // Row 0 of x ([2, ...]) to each device's target, row 1 to its source
  // (lower::kRingPermuteTarget).
  HloInstruction* ringPermute(HloInstruction* x,
                              const std::vector<std::pair<int64_t, int64_t>>& pairs) {
    if (async_)
      return asyncPair(x, pairs, lower::kRingPermuteStartTarget, ".ring-permute-start",
                       ".ring-permute-done");
    HloInstruction* p = add(HloOpcode::CustomCall, base() + ".ring-permute", x->shape(), {x});
    p->attrs().customCallTarget = std::string(lower::kRingPermuteTarget);
    setPairs(p, pairs);
    return p;
  }
  std::vector<int64_t> positions(const DeviceGroups& groups) {
    std::vector<int64_t> pos(size_t(devices_), 0);
    for (const auto& g : groups)
      for (size_t p = 0; p < g.size(); ++p) pos[size_t(g[p])] = int64_t(p);
    return pos;
  }

  DeviceGroups groupsOf(const HloInstruction& inst) {
    try {
      return lower::collectiveGroups(inst, devices_);
    } catch (const std::invalid_argument& e) {
      throw CannotLower::of(inst, e.what());
    }
  }
  HloOpcode reducerOf(const HloInstruction& inst) {
    std::optional<HloOpcode> op = reducerOp(inst.toApply());
    if (!op)
      throw CannotLower::of(inst,
                            "to_apply is not one element-wise op of its two parameters "
                            "(add, multiply, maximum, minimum, and, or, xor)");
    return *op;
  }

  HloInstruction* allReduce(HloInstruction* x, const DeviceGroups& groups, HloOpcode op);
  // x as [n, c]: this member's reduced row (its group position), [1, c].
  HloInstruction* reduceRows(HloInstruction* x, const DeviceGroups& groups, HloOpcode op,
                             bool ring);
  HloInstruction* oneShotReduce(HloInstruction* x, const DeviceGroups& groups, HloOpcode op);
  // The one-shot combine of more than kChainMembers members is a reduce over
  // them (add, maximum, minimum of f32, bf16 or s32 with a to_apply of x's
  // type, whose identities are the init); a chain of
  // binary ops would be one fusion reading every member as a stream of its
  // own, and the kernels have fewer sync flags than a 64-chip slice has
  // members. Other ops over that many members take the ring instead.
  static constexpr size_t kChainMembers = 16;
  bool reducesRows(HloInstruction* x, const DeviceGroups& groups, HloOpcode op) const {
    const HloComputation* f = current_->toApply();
    const hlo::PrimitiveType t = x->shape().type;
    return groups[0].size() > kChainMembers &&
           (op == HloOpcode::Add || op == HloOpcode::Maximum || op == HloOpcode::Minimum) &&
           (t == hlo::PrimitiveType::F32 || t == hlo::PrimitiveType::BF16 ||
            t == hlo::PrimitiveType::S32) &&
           f && f->root() && f->root()->shape() == Shape::array(t, {});
  }
  bool oneShotAllowed(HloInstruction* x, const DeviceGroups& groups, HloOpcode op) const {
    return groups[0].size() <= kChainMembers || reducesRows(x, groups, op);
  }
  HloInstruction* reduceScatter(HloInstruction* x, const DeviceGroups& groups, HloOpcode op,
                                int64_t dim);
  HloInstruction* allGather(HloInstruction* x, const DeviceGroups& groups, int64_t dim);
  HloInstruction* allToAllRows(HloInstruction* x, const DeviceGroups& groups);
  HloInstruction* allToAll(HloInstruction* x, const DeviceGroups& groups, int64_t dim);
  // Estimated cycles of the grid reduce-scatter (GridReduceScatter.h) of
  // `bytes` per device over `groups`, plus the all-gather of the shares when
  // `gather`; nullopt where it does not apply.
  std::optional<double> gridReduceCycles(const DeviceGroups& groups, HloOpcode op,
                                         hlo::PrimitiveType type, int64_t elements, bool gather) {
    const int64_t n = int64_t(groups[0].size());
    if (n < 2 || elements % n != 0 || slice_.empty()) return std::nullopt;
    std::optional<std::vector<int>> dims = lower::gridGatherDims(groups, slice_);
    if (!dims) return std::nullopt;
    const uint64_t share = uint64_t(lower::shapeBytes(Shape::array(type, {elements / n})));
    lower::GridReduce g{groups, slice_, *dims, share, 0, 0, type, op, {}};
    if (!lower::gridReduceScatterFits(g, chip_)) return std::nullopt;
    double cycles = lower::gridReduceScatterCycles(g, chip_);
    if (gather) {
      lower::GridGather gg{groups, slice_, *dims, share, 0, 0, {}};
      double oneShot = lower::oneShotGatherCycles(share, groups, slice_, chip_);
      cycles += n > 2 && lower::gridAllGatherFits(gg)
                    ? std::min(oneShot, lower::gridAllGatherCycles(gg, chip_))
                    : oneShot;
    }
    return cycles;
  }
  // x [n, k] (row p: the contribution to member p's share) reduced by the
  // grid reduce-scatter: this member's share, [1, k].
  HloInstruction* gridReduceRows(HloInstruction* x, const DeviceGroups& groups, HloOpcode op) {
    HloInstruction* r = add(HloOpcode::CustomCall, base() + ".grid-reduce-scatter",
                            Shape::array(x->shape().type, {1, x->shape().dims[1]}), {x});
    r->attrs().customCallTarget = std::string(lower::kGridReduceScatterTarget);
    setGroups(r, groups);
    hlo::AttrValue v;
    v.kind = hlo::AttrValue::Kind::Ident;
    v.s = std::string(hlo::opcodeName(op));
    r->setGeneric(std::string(lower::kGridReduceOpAttr), v);
    return r;
  }
  static double chosenCycles(const lower::AlgorithmChoice& c) {
    return c.algorithm == lower::CollectiveAlgorithm::OneShot ? c.oneShotCycles : c.ringCycles;
  }
  lower::AlgorithmChoice choose(HloInstruction* x, const DeviceGroups& groups, int64_t chunks) {
    int64_t elements = 1;
    for (int64_t d : x->shape().dims) elements *= d;
    return lower::chooseReductionAlgorithm(uint64_t(lower::shapeBytes(x->shape())), groups[0],
                                           slice_, elements % chunks == 0, chip_);
  }

  HloComputation* comp_;
  int64_t devices_;
  std::vector<int> slice_;
  const target::ChipConfig& chip_;
  HloInstruction* current_ = nullptr;
  HloInstruction* deviceId_ = nullptr;
  bool async_ = false;

  HloInstruction* expandOne(HloInstruction* inst);
};

HloInstruction* Expander::oneShotReduce(HloInstruction* x, const DeviceGroups& groups,
                                        HloOpcode op) {
  std::vector<int64_t> dims = x->shape().dims;
  std::vector<int64_t> one = dims;
  one.insert(one.begin(), 1);
  HloInstruction* g = allGather0(reshape(x, one), groups);
  if (reducesRows(x, groups, op)) {
    // One reduce over the members (a kernel with one input stream, where the
    // chain below would fuse into one with a stream and a flag per member).
    hlo::PrimitiveType t = x->shape().type;
    hlo::Literal init = hlo::Literal::zeros(Shape::array(t, {}));
    const bool fl = hlo::isFloatingType(t);
    if (op == HloOpcode::Maximum) {
      if (fl)
        init.setDouble(0, -INFINITY);
      else
        init.setInt(0, std::numeric_limits<int32_t>::min());
    } else if (op == HloOpcode::Minimum) {
      if (fl)
        init.setDouble(0, INFINITY);
      else
        init.setInt(0, std::numeric_limits<int32_t>::max());
    }
    HloInstruction* c = add(HloOpcode::Constant, base() + ".identity", Shape::array(t, {}), {});
    c->attrs().literal = init;
    HloInstruction* r = add(HloOpcode::Reduce, base() + ".reduce", x->shape(), {g, c});
    r->attrs().dimensions = std::vector<int64_t>{0};
    r->attrs().calls.push_back(hlo::CalledComputations{"to_apply", {current_->toApply()}, false});
    return r;
  }
  HloInstruction* acc = row(g, 0);
  for (size_t i = 1; i < groups[0].size(); ++i) acc = binary(op, acc, row(g, int64_t(i)));
  return acc;
}

HloInstruction* Expander::reduceRows(HloInstruction* x, const DeviceGroups& groups, HloOpcode op,
                                     bool ring) {
  const int64_t n = int64_t(groups[0].size());
  std::vector<int64_t> pos = positions(groups);
  if (!ring) return dynRow(oneShotReduce(x, groups, op), perDevice(pos));
  // Ring position q of each device and the chunk (its group position) that
  // ring position q ends up holding.
  std::vector<int64_t> q(size_t(devices_), 0);
  std::vector<std::vector<int64_t>> chunkAt;  // per group: chunk of ring position
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const auto& g : groups) {
    std::vector<int64_t> r = lower::ringOrder(g, slice_);
    std::vector<int64_t> c;
    for (size_t i = 0; i < r.size(); ++i) {
      q[size_t(r[i])] = int64_t(i);
      c.push_back(pos[size_t(r[i])]);
      pairs.emplace_back(r[i], r[(i + 1) % r.size()]);
    }
    chunkAt.push_back(c);
  }
  auto chunkTable = [&](int64_t shift) {
    std::vector<int64_t> t(size_t(devices_), 0);
    for (size_t gi = 0; gi < groups.size(); ++gi)
      for (int64_t d : groups[gi])
        t[size_t(d)] = chunkAt[gi][size_t(((q[size_t(d)] + shift) % n + n) % n)];
    return t;
  };
  const int64_t c = x->shape().dims[1];
  if (n > 2 && c % 2 == 0) {
    // Bidirectional: the first half of every chunk goes round to the right
    // (as below), the second half to the left, both in one ring permute.
    HloInstruction* accR = slice2(x, 0, n, 0, c / 2);
    HloInstruction* accL = slice2(x, 0, n, c / 2, c);
    for (int64_t k = 0; k < n - 1; ++k) {
      HloInstruction* both = concat(
          {dynRow(accR, perDevice(chunkTable(-k - 1))), dynRow(accL, perDevice(chunkTable(k + 1)))},
          0);
      HloInstruction* got = ringPermute(both, pairs);
      HloInstruction* idxR = perDevice(chunkTable(-k - 2));
      HloInstruction* idxL = perDevice(chunkTable(k + 2));
      accR = dynUpdateRow(accR, binary(op, dynRow(accR, idxR), slice2(got, 0, 1, 0, c / 2)), idxR);
      accL = dynUpdateRow(accL, binary(op, dynRow(accL, idxL), slice2(got, 1, 2, 0, c / 2)), idxL);
    }
    HloInstruction* p = perDevice(pos);
    return concat({dynRow(accR, p), dynRow(accL, p)}, 1);
  }
  HloInstruction* acc = x;
  for (int64_t k = 0; k < n - 1; ++k) {
    HloInstruction* got = permute(dynRow(acc, perDevice(chunkTable(-k - 1))), pairs);
    HloInstruction* recvIndex = perDevice(chunkTable(-k - 2));
    HloInstruction* cur = dynRow(acc, recvIndex);
    acc = dynUpdateRow(acc, binary(op, cur, got), recvIndex);
  }
  return dynRow(acc, perDevice(pos));
}

HloInstruction* Expander::allReduce(HloInstruction* x, const DeviceGroups& groups, HloOpcode op) {
  const int64_t n = int64_t(groups[0].size());
  if (n == 1) return x;
  lower::AlgorithmChoice c = choose(x, groups, n);
  std::vector<int64_t> dims = x->shape().dims;
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  std::optional<double> grid = gridReduceCycles(groups, op, x->shape().type, elements, true);
  if (grid && *grid < chosenCycles(c)) {
    HloInstruction* mine = gridReduceRows(reshape(x, {n, elements / n}), groups, op);
    return reshape(allGather0(mine, groups), dims);
  }
  if (c.algorithm == lower::CollectiveAlgorithm::OneShot && oneShotAllowed(x, groups, op))
    return oneShotReduce(x, groups, op);
  if (elements % n != 0)
    throw CannotLower::of(*current_,
                          fmt::format("{} members: the one-shot combine of more than {} takes add, "
                                      "maximum or minimum, and the ring needs the {} elements "
                                      "to split into {} chunks",
                                      n, kChainMembers, elements, n));
  HloInstruction* mine = reduceRows(reshape(x, {n, elements / n}), groups, op, true);
  return reshape(allGather0(mine, groups), dims);
}

HloInstruction* Expander::reduceScatter(HloInstruction* x, const DeviceGroups& groups, HloOpcode op,
                                        int64_t dim) {
  const int64_t n = int64_t(groups[0].size());
  const std::vector<int64_t> dims = x->shape().dims;
  if (dim < 0 || dim >= int64_t(dims.size()) || dims[size_t(dim)] % n != 0)
    throw CannotLower::of(*current_,
                          fmt::format("dimension {} does not split into {} parts", dim, n));
  if (n == 1) return x;
  // The scattered dimension first: row p of [n, c] is member p's part.
  std::vector<int64_t> perm{dim};
  for (int64_t k = 0; k < int64_t(dims.size()); ++k)
    if (k != dim) perm.push_back(k);
  HloInstruction* t = transpose(x, perm);
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  lower::AlgorithmChoice c = choose(x, groups, n);
  std::optional<double> grid = gridReduceCycles(groups, op, x->shape().type, elements, false);
  HloInstruction* mine = grid && *grid < chosenCycles(c)
                             ? gridReduceRows(reshape(t, {n, elements / n}), groups, op)
                             : reduceRows(reshape(t, {n, elements / n}), groups, op,
                                          c.algorithm == lower::CollectiveAlgorithm::Ring ||
                                              !oneShotAllowed(x, groups, op));
  std::vector<int64_t> partT;
  for (int64_t p : perm) partT.push_back(dims[size_t(p)]);
  partT[0] /= n;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return transpose(reshape(mine, partT), inverse);
}

HloInstruction* Expander::allGather(HloInstruction* x, const DeviceGroups& groups, int64_t dim) {
  const int64_t n = int64_t(groups[0].size());
  std::vector<int64_t> dims = x->shape().dims;
  if (dim < 0 || dim >= int64_t(dims.size()))
    throw CannotLower::of(*current_, fmt::format("all-gather dimension {} out of range", dim));
  if (n == 1) return x;
  if (dim == 0) return allGather0(x, groups);
  std::vector<int64_t> one = dims;
  one.insert(one.begin(), 1);
  HloInstruction* g = allGather0(reshape(x, one), groups);  // [n] + dims
  std::vector<int64_t> perm;
  for (int64_t k = 1; k <= dim; ++k) perm.push_back(k);
  perm.push_back(0);
  for (int64_t k = dim + 1; k <= int64_t(dims.size()); ++k) perm.push_back(k);
  std::vector<int64_t> out = dims;
  out[size_t(dim)] *= n;
  return reshape(transpose(g, perm), out);
}

HloInstruction* Expander::allToAllRows(HloInstruction* x, const DeviceGroups& groups) {
  // x is [n, c]; row j goes to member j, and row j of the result comes from member j.
  const int64_t n = int64_t(groups[0].size());
  std::vector<int64_t> pos = positions(groups);
  HloInstruction* acc = x;
  for (int64_t s = 1; s < n; ++s) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (const auto& g : groups)
      for (int64_t p = 0; p < n; ++p) pairs.emplace_back(g[size_t(p)], g[size_t((p + s) % n)]);
    std::vector<int64_t> send(static_cast<size_t>(devices_)), recv(static_cast<size_t>(devices_));
    for (int64_t d = 0; d < devices_; ++d) {
      send[size_t(d)] = (pos[size_t(d)] + s) % n;
      recv[size_t(d)] = (pos[size_t(d)] - s + n) % n;
    }
    HloInstruction* got = permute(dynRow(x, perDevice(send)), pairs);
    acc = dynUpdateRow(acc, got, perDevice(recv));
  }
  return acc;
}

HloInstruction* Expander::allToAll(HloInstruction* x, const DeviceGroups& groups, int64_t dim) {
  const int64_t n = int64_t(groups[0].size());
  const std::vector<int64_t> dims = x->shape().dims;
  if (dim < 0 || dim >= int64_t(dims.size()) || dims[size_t(dim)] % n != 0)
    throw CannotLower::of(*current_,
                          fmt::format("dimension {} does not split into {} parts", dim, n));
  if (n == 1) return x;
  std::vector<int64_t> perm{dim};
  for (int64_t k = 0; k < int64_t(dims.size()); ++k)
    if (k != dim) perm.push_back(k);
  HloInstruction* t = transpose(x, perm);
  std::vector<int64_t> tdims = t->shape().dims;
  int64_t elements = 1;
  for (int64_t d : dims) elements *= d;
  HloInstruction* r = reshape(allToAllRows(reshape(t, {n, elements / n}), groups), tdims);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return transpose(r, inverse);
}

HloInstruction* Expander::expandOne(HloInstruction* inst) {
  current_ = inst;
  HloOpcode op = inst->opcode();
  std::vector<HloInstruction*> ops = inst->operands();
  auto perArray = [&](auto f) -> HloInstruction* {
    if (ops.size() == 1 && inst->shape().isArray()) return f(ops[0], 0);
    std::vector<HloInstruction*> parts;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!ops[i]->shape().isArray()) throw CannotLower::of(*inst, "an operand is not an array");
      parts.push_back(f(ops[i], i));
      shapes.push_back(parts.back()->shape());
    }
    return add(HloOpcode::Tuple, base() + ".tuple", Shape::tuple(shapes), parts);
  };
  switch (op) {
    case HloOpcode::AllReduce: {
      DeviceGroups groups = groupsOf(*inst);
      HloOpcode r = reducerOf(*inst);
      return perArray([&](HloInstruction* x, size_t) { return allReduce(x, groups, r); });
    }
    case HloOpcode::ReduceScatter: {
      DeviceGroups groups = groupsOf(*inst);
      HloOpcode r = reducerOf(*inst);
      if (inst->dimensions().size() != 1)
        throw CannotLower::of(*inst, "reduce-scatter needs dimensions={d}");
      int64_t d = inst->dimensions()[0];
      return perArray([&](HloInstruction* x, size_t) { return reduceScatter(x, groups, r, d); });
    }
    case HloOpcode::AllGather: {
      DeviceGroups groups = groupsOf(*inst);
      if (inst->dimensions().size() != 1)
        throw CannotLower::of(*inst, "all-gather needs dimensions={d}");
      int64_t d = inst->dimensions()[0];
      return perArray([&](HloInstruction* x, size_t) {
        // torch-xla passes a scalar along in its tuple all-gathers; its
        // result is the scalar again.
        return x->shape().rank() == 0 ? x : allGather(x, groups, d);
      });
    }
    case HloOpcode::AllToAll: {
      DeviceGroups groups = groupsOf(*inst);
      const int64_t n = int64_t(groups[0].size());
      if (!inst->dimensions().empty()) {
        if (ops.size() != 1) throw CannotLower::of(*inst, "all-to-all with dimensions= and tuple");
        return allToAll(ops[0], groups, inst->dimensions()[0]);
      }
      if (int64_t(ops.size()) != n)
        throw CannotLower::of(*inst, fmt::format("all-to-all without dimensions needs one operand "
                                                 "per group member ({}), got {}",
                                                 n, ops.size()));
      std::vector<HloInstruction*> rows;
      const Shape& s = ops[0]->shape();
      int64_t elements = 1;
      for (int64_t d : s.dims) elements *= d;
      for (HloInstruction* o : ops) {
        if (!o->shape().isArray() || o->shape().dims != s.dims || o->shape().type != s.type)
          throw CannotLower::of(*inst, "all-to-all operands of different shapes");
        rows.push_back(reshape(o, {1, elements}));
      }
      HloInstruction* stacked = rows[0];
      if (n > 1) {
        stacked = add(HloOpcode::Concatenate, base() + ".stack",
                      Shape::array(s.type, {n, elements}), rows);
        stacked->attrs().dimensions = std::vector<int64_t>{0};
      }
      HloInstruction* r = allToAllRows(stacked, groups);
      std::vector<HloInstruction*> parts;
      std::vector<Shape> shapes;
      for (int64_t j = 0; j < n; ++j) {
        parts.push_back(reshape(row(r, j), s.dims));
        shapes.push_back(parts.back()->shape());
      }
      if (!inst->shape().isTuple() && n == 1) return parts[0];
      return add(HloOpcode::Tuple, base() + ".tuple", Shape::tuple(shapes), parts);
    }
    case HloOpcode::CollectivePermute:
      if (devices_ == 1) {  // {0,0}: the value itself
        if (!inst->findGeneric("source_target_pairs"))
          throw CannotLower::of(*inst, "collective-permute without source_target_pairs");
        return perArray([&](HloInstruction* x, size_t) { return x; });
      }
      return perArray([&](HloInstruction* x, size_t) {
        HloInstruction* p = add(HloOpcode::CollectivePermute, base() + ".permute", x->shape(), {x});
        p->attrs() = inst->attrs();
        p->attrs().metadata = inst->attrs().metadata;
        return p;
      });
    default:
      throw CannotLower::of(*inst, "internal: not a collective to expand");
  }
}

// The synchronous form of a -start (at its -done): the start's operands and
// attributes, the done's shape.
HloInstruction* synchronousOf(HloComputation* comp, HloInstruction* done) {
  HloInstruction* start = done->operand(0);
  HloOpcode op = done->opcode() == HloOpcode::AllReduceDone   ? HloOpcode::AllReduce
                 : done->opcode() == HloOpcode::AllGatherDone ? HloOpcode::AllGather
                                                              : HloOpcode::CollectivePermute;
  for (HloInstruction* u : start->users())
    if (u != done)
      throw CannotLower::of(*start,
                            fmt::format("the -start is used by %{} besides its -done", u->name()));
  HloInstruction* sync =
      addNew(comp, op, start->name() + ".sync", done->shape(), start->operands());
  sync->attrs() = start->attrs();
  return sync;
}

// A collective-permute-start / -done of one array as the async primitives
// (CollectiveLowering.h: the transfer runs while the work between them does);
// false (nothing changed) for other forms.
bool asyncPermute(HloComputation* comp, HloInstruction* done) {
  HloInstruction* start = done->operand(0);
  if (done->opcode() != HloOpcode::CollectivePermuteDone || start->operandCount() != 1 ||
      !done->shape().isArray() || start->operand(0)->shape() != done->shape() ||
      start->users().size() != 1)
    return false;
  HloInstruction* x = start->operand(0);
  HloInstruction* s = addNew(comp, HloOpcode::CustomCall, start->name(), done->shape(), {x});
  s->attrs() = start->attrs();
  s->attrs().customCallTarget = std::string(lower::kPermuteStartTarget);
  HloInstruction* d = addNew(comp, HloOpcode::CustomCall, done->name(), done->shape(), {s, x});
  d->attrs().metadata = done->attrs().metadata;
  d->attrs().customCallTarget = std::string(lower::kPermuteDoneTarget);
  done->replaceAllUsesWith(d);
  comp->removeInstruction(done);
  comp->removeInstruction(start);
  return true;
}

class SpmdCollectivesPass : public HloPass {
 public:
  std::string_view name() const override { return "spmd-collectives"; }
  bool run(hlo::HloModule& module) override {
    bool any = false;
    for (const auto& comp : module.computations())
      for (const auto& inst : comp->instructions()) any |= isCollectiveToExpand(inst->opcode());
    for (const auto& comp : module.computations())
      for (const auto& inst : comp->instructions())
        any |= inst->opcode() == HloOpcode::PartitionId || inst->opcode() == HloOpcode::ReplicaId;
    if (!any) return false;
    int64_t devices = 1;
    try {
      devices = lower::spmdDeviceCount(module);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
    const PassOptions& o = passOptions();
    lower::TargetDescription target =
        o.chipConfig ? lower::describeTarget(*o.chipConfig) : lower::loadTarget(o.chip);
    std::vector<int> slice;
    try {
      slice = lower::spmdSlice(devices, target.chip.ici);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("module '{}': {}", module.name(), e.what()));
    }
    for (const auto& comp : module.computations()) {
      // -done first: its -start becomes the synchronous op, expanded below.
      std::vector<HloInstruction*> insts;
      for (const auto& i : comp->instructions()) insts.push_back(i.get());
      std::set<HloInstruction*> fromAsync;  // expanded with the async all-gather
      for (HloInstruction* inst : insts) {
        HloOpcode op = inst->opcode();
        if (op != HloOpcode::AllReduceDone && op != HloOpcode::AllGatherDone &&
            op != HloOpcode::CollectivePermuteDone)
          continue;
        HloInstruction* start = inst->operand(0);
        if (devices > 1 && asyncPermute(comp.get(), inst)) continue;
        HloInstruction* sync = synchronousOf(comp.get(), inst);
        if (devices > 1 && op != HloOpcode::CollectivePermuteDone) fromAsync.insert(sync);
        inst->replaceAllUsesWith(sync);
        comp->removeInstruction(inst);
        comp->removeInstruction(start);
      }
      insts.clear();
      for (const auto& i : comp->instructions()) insts.push_back(i.get());
      // convert(partition-id or replica-id): a convert of the s32 device id
      // (the id itself for s32, an index as JAX emits it), so no u32
      // arithmetic is left to lower.
      for (HloInstruction* inst : insts) {
        if (inst->opcode() != HloOpcode::Convert || !inst->shape().isArray() ||
            inst->shape().rank() != 0)
          continue;
        HloOpcode from = inst->operand(0)->opcode();
        if (from != HloOpcode::PartitionId && from != HloOpcode::ReplicaId) continue;
        HloInstruction* id = addNew(comp.get(), HloOpcode::CustomCall, inst->name() + ".device-id",
                                    Shape::array(hlo::PrimitiveType::S32, {}), {});
        id->attrs().customCallTarget = "tpusim$device-id";
        if (inst->shape().type != hlo::PrimitiveType::S32)
          id = addNew(comp.get(), HloOpcode::Convert, inst->name() + ".from-s32", inst->shape(),
                      {id});
        inst->replaceAllUsesWith(id);
      }
      Expander ex(comp.get(), devices, slice, target.chip);
      for (HloInstruction* inst : insts) {
        HloOpcode op = inst->opcode();
        if (!isCollectiveToExpand(op)) continue;
        if (op == HloOpcode::AllReduceStart || op == HloOpcode::AllGatherStart ||
            op == HloOpcode::CollectivePermuteStart)
          throw CannotLower::of(*inst, "a -start without its -done");
        const bool async = fromAsync.count(inst) > 0;
        if (devices > 1 && !async && lower::isSpmdPrimitive(*inst)) continue;
        HloInstruction* r = ex.expand(inst, async);
        inst->replaceAllUsesWith(r);
        comp->removeInstruction(inst);
      }
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<HloPass> createSpmdCollectivesPass() {
  return std::make_unique<SpmdCollectivesPass>();
}

}  // namespace tpusim::passes
