// Index spaces, embeddings and axes of fusion lowering (FusionLoweringInternal.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/lower/fusion/FusionLoweringInternal.h"
#include "kernels/dsl/Emit.h"

namespace tpusim::lower::detail {

using hlo::HloOpcode;

void ComputeGraph::fail(const HloInstruction& at, const std::string& reason) const {
  if (inst->opcode() == HloOpcode::Fusion) throw CannotLower::inFusion(*inst, at, reason);
  if (&at != inst) throw CannotLower::of(*inst, fmt::format("operand %{}: {}", at.name(), reason));
  throw CannotLower::of(*inst, reason);
}

dsl::DType dslType(const ComputeGraph& g, const HloInstruction& at, hlo::PrimitiveType t) {
  switch (t) {
    case hlo::PrimitiveType::F32:
      return dsl::F32;
    case hlo::PrimitiveType::BF16:
      return dsl::BF16;
    case hlo::PrimitiveType::S32:
      return dsl::S32;
    case hlo::PrimitiveType::S8:
      return dsl::S8;
    case hlo::PrimitiveType::S16:
      return dsl::S16;
    case hlo::PrimitiveType::U16:
      return dsl::U16;
    case hlo::PrimitiveType::U8:
      return dsl::U8;
    case hlo::PrimitiveType::Pred:
      return dsl::BOOL;
    case hlo::PrimitiveType::F16:
      return dsl::F16;
    case hlo::PrimitiveType::U32:
      // The same 32-bit words as s32; the ops whose result differs (compares,
      // min / max, converts, shifts) look at the HLO type (ElementwiseLowering).
      return dsl::S32;
    case hlo::PrimitiveType::F64:
      g.fail(at,
             "f64 cannot be emulated: the VPU computes in f32 at most (convert to f32 "
             "before the computation)");
    default:
      g.fail(at, fmt::format("element type {} is not supported inside a kernel (f32, bf16, f16, "
                             "s32, u32, s16, u16, s8, u8 and pred are)",
                             hlo::primitiveTypeName(t)));
  }
}

dsl::DType memoryType(dsl::DType t) { return t == dsl::BOOL ? dsl::S8 : t; }

Embedding identity(int64_t rank) {
  Embedding e(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) e[static_cast<size_t>(i)] = static_cast<int>(i);
  return e;
}

namespace {

// Unit value dims run along nothing.
Embedding normalized(const hlo::Shape& s, Embedding e) {
  for (size_t j = 0; j < e.size(); ++j)
    if (s.dims[j] == 1) e[j] = -1;
  return e;
}

std::vector<int64_t> nonUnitDims(const hlo::Shape& s) {
  std::vector<int64_t> out;
  for (int64_t j = 0; j < s.rank(); ++j)
    if (s.dims[static_cast<size_t>(j)] != 1) out.push_back(j);
  return out;
}

}  // namespace

bool isInPlaceTranspose(const ComputeGraph&, const HloInstruction& inst) {
  if (inst.opcode() != HloOpcode::Transpose) return false;
  std::vector<int64_t> from = nonUnitDims(inst.operand(0)->shape()), to = nonUnitDims(inst.shape());
  if (from.empty() || to.empty()) return false;
  return inst.dimensions()[static_cast<size_t>(to.back())] == from.back();
}

Embedding operandEmbedding(const ComputeGraph& g, const HloInstruction& inst, int64_t operand,
                           const Embedding& emb) {
  const hlo::Shape& os = inst.operand(operand)->shape();
  const hlo::Shape& rs = inst.shape();
  if (!os.isArray()) g.fail(inst, "an operand is not an array");
  HloOpcode op = inst.opcode();
  if (hlo::isElementwise(op)) {
    if (os.rank() == 0) return {};
    if (os.dims != rs.dims) g.fail(inst, "operand shapes differ from the result's");
    return normalized(os, emb);
  }
  switch (op) {
    case HloOpcode::Broadcast: {
      const auto& dims = inst.dimensions();
      if (static_cast<int64_t>(dims.size()) != os.rank())
        g.fail(inst, "broadcast dimensions do not match the operand's rank");
      Embedding e(dims.size(), -1);
      for (size_t j = 0; j < dims.size(); ++j) {
        if (j > 0 && dims[j] <= dims[j - 1])
          g.fail(inst, "a broadcast that reorders dimensions is a transpose");
        e[j] = emb[static_cast<size_t>(dims[j])];
      }
      return normalized(os, e);
    }
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Transpose: {
      if (op == HloOpcode::Transpose && isInPlaceTranspose(g, inst)) {
        // The kernel reads the operand's buffer through strides (addLeafInputs).
        const auto& perm = inst.dimensions();
        Embedding e(static_cast<size_t>(os.rank()), -1);
        for (size_t i = 0; i < perm.size(); ++i) e[static_cast<size_t>(perm[i])] = emb[i];
        return normalized(os, e);
      }
      // Only unit dims may move: the non-unit dims keep their sizes and order.
      std::vector<int64_t> from = nonUnitDims(os), to = nonUnitDims(rs);
      std::vector<int64_t> perm;
      if (op == HloOpcode::Transpose) perm = inst.dimensions();
      bool ok = from.size() == to.size();
      Embedding e(static_cast<size_t>(os.rank()), -1);
      for (size_t i = 0; ok && i < to.size(); ++i) {
        int64_t src = op == HloOpcode::Transpose ? perm[static_cast<size_t>(to[i])] : from[i];
        ok = src == from[i] &&
             os.dims[static_cast<size_t>(src)] == rs.dims[static_cast<size_t>(to[i])];
        if (ok) e[static_cast<size_t>(src)] = emb[static_cast<size_t>(to[i])];
      }
      if (!ok)
        g.fail(inst, fmt::format("{} {} -> {} moves data between tiles (only unit dimensions may "
                                 "change inside a kernel)",
                                 hlo::opcodeName(op), os.toString(false), rs.toString(false)));
      return e;
    }
    default:
      g.fail(inst, "not an element-wise or view operation");
  }
}

void Region::analyze(const HloInstruction* inst, const Embedding& emb,
                     const std::vector<const HloInstruction*>& stops) {
  stops_ = stops;
  analyze(inst, emb);
}

void Region::analyze(const HloInstruction* inst, const Embedding& emb, const HloInstruction* stop) {
  if (stop) stops_ = {stop};
  if (isStop(inst)) {
    Embedding e = normalized(inst->shape(), emb);
    if (sawStop_ && e != stopEmb_)
      g_->fail(*inst, stops_.size() > 1
                          ? "the sibling dots' results are used with different shapes in their "
                            "epilogue"
                          : "the dot's result is used with two different shapes in its epilogue");
    sawStop_ = true;
    stopEmb_ = e;
    return;
  }
  if (!analyzed_.insert({inst, emb}).second) return;
  const ComputeGraph& g = *g_;
  if (!inst->shape().isArray()) g.fail(*inst, "the value is not an array (tuples are not lowered)");
  dslType(g, *inst, inst->shape().type);
  if (g.isLeaf(inst)) {
    Embedding e = normalized(inst->shape(), emb);
    for (const LeafUse& u : leaves_)
      if (u.leaf == inst && u.emb == e) return;
    leaves_.push_back({inst, e, -1});
    return;
  }
  HloOpcode op = inst->opcode();
  switch (op) {
    case HloOpcode::Constant:
      if (inst->shape().elementCount() != 1)
        g.fail(*inst, "an array constant inside a kernel (only scalars are folded)");
      return;
    case HloOpcode::Iota: {
      auto d = inst->intAttr("iota_dimension");
      if (!d || *d < 0 || *d >= inst->shape().rank()) g.fail(*inst, "iota without iota_dimension");
      int sd = emb[static_cast<size_t>(*d)];
      if (sd >= 0 && inst->shape().dims[static_cast<size_t>(*d)] > 1) {
        iotaDims_.push_back(sd);
        masks_.push_back({sd});
      }
      return;
    }
    case HloOpcode::Parameter:
      g.fail(*inst, "a parameter that is not an operand of the kernel");
    case HloOpcode::Broadcast:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Transpose:
      analyze(inst->operand(0), operandEmbedding(g, *inst, 0, emb));
      return;
    case HloOpcode::Slice:
    case HloOpcode::Concatenate:
      analyzeLaneShuffle(inst, emb);
      return;
    case HloOpcode::Reduce:
      analyzeRowReduce(inst, emb);
      return;
    default:
      break;
  }
  if (!hlo::isElementwise(op)) g.fail(*inst, "not supported inside a kernel");
  std::string why;
  if (!elementwiseSupported(*inst, &why)) g.fail(*inst, why);
  for (int64_t k = 0; k < inst->operandCount(); ++k)
    analyze(inst->operand(k), operandEmbedding(g, *inst, k, emb));
}

void Region::analyzeLaneShuffle(const HloInstruction* inst, const Embedding& emb) {
  const ComputeGraph& g = *g_;
  if (!laneShufflesAllowed_)
    g.fail(*inst, "a slice or concatenate inside a kernel is lowered in loop fusions only");
  const hlo::Shape& s = inst->shape();
  const int minor = static_cast<int>(dims_.size()) - 1;
  const int64_t lanes = 128;
  if (s.rank() == 0 || emb.back() != minor || dims_.back() < 2 || dims_.back() > lanes)
    g.fail(*inst, fmt::format("a {} inside a kernel must work on the kernel's lanes: the last "
                              "dimension of the fusion's result, 2..{} wide",
                              hlo::opcodeName(inst->opcode()), lanes));
  if (inst->opcode() == HloOpcode::Slice) {
    const hlo::Shape& in = inst->operand(0)->shape();
    const auto& sl = *inst->attrs().slice;
    for (int64_t d = 0; d < s.rank(); ++d) {
      const hlo::SliceDim& x = sl[static_cast<size_t>(d)];
      bool whole = x.start == 0 && x.limit == in.dims[static_cast<size_t>(d)];
      if (x.stride != 1 || (d + 1 < s.rank() && !whole) || in.dims.back() > lanes)
        g.fail(*inst, fmt::format("only a slice of the last dimension (stride 1, at most {} wide) "
                                  "is lowered inside a kernel",
                                  lanes));
    }
  } else if (inst->dimensions().size() != 1 || inst->dimensions()[0] != s.rank() - 1) {
    g.fail(*inst, "only a concatenate along the last dimension is lowered inside a kernel");
  }
  if (!shuffled_) boundaryBefore(minor);
  shuffled_ = true;
  for (int64_t k = 0; k < inst->operandCount(); ++k)
    analyze(inst->operand(k), normalized(inst->operand(k)->shape(), emb));
}

void Region::analyzeRowReduce(const HloInstruction* inst, const Embedding& emb) {
  const ComputeGraph& g = *g_;
  const int64_t rank = static_cast<int64_t>(dims_.size());
  if (inst->operandCount() != 2 || !inst->shape().isArray())
    g.fail(*inst, "a variadic reduce is not supported inside a kernel");
  if (inst->shape().type != hlo::PrimitiveType::F32)
    g.fail(*inst, "a reduce inside a kernel must give f32");
  reduceKindOf(g, *inst);
  const HloInstruction* input = inst->operand(0);
  // The reduced dims are the trailing dims of an input of the space's shape,
  // and the result runs along the leading ones (it is read back along rows).
  std::vector<int64_t> reduced = inst->dimensions();
  std::sort(reduced.begin(), reduced.end());
  const int64_t kept = rank - static_cast<int64_t>(reduced.size());
  bool rowShaped = input->shape().dims == dims_ && kept >= 1 && !reduced.empty();
  for (size_t j = 0; rowShaped && j < reduced.size(); ++j)
    rowShaped = reduced[j] == kept + static_cast<int64_t>(j);
  Embedding leading = normalized(inst->shape(), identity(kept));
  if (!rowShaped || normalized(inst->shape(), emb) != leading)
    g.fail(*inst,
           "a reduce inside a kernel must reduce the trailing dims of the kernel's space, its "
           "result read along the leading ones");
  std::vector<int> dims;
  for (int64_t d : reduced)
    if (dims_[static_cast<size_t>(d)] != 1) dims.push_back(static_cast<int>(d));
  if (!rowReduces_.empty() && dims != rowReduceDims_)
    g.fail(*inst, "the reduces inside a kernel must reduce the same dims");
  if (std::find(rowReduces_.begin(), rowReduces_.end(), inst) == rowReduces_.end())
    rowReduces_.push_back(inst);
  rowReduceDims_ = dims;
  std::vector<int> rows;
  for (int64_t d = 0; d < kept; ++d) rows.push_back(static_cast<int>(d));
  masks_.push_back(rows);  // no axis merges a row dim with a reduced one
  analyze(input, identity(rank));
  analyze(inst->operand(1), {});
}

void Region::checkRowReduces() const {
  if (rowReduces_.empty()) return;
  const Axis& col = axes_.back();
  if (shuffled_ || headLanes_ || col.dims != rowReduceDims_)
    g_->fail(*rowReduces_.front(),
             "a reduce inside a kernel must reduce the kernel's lanes (its Col axis) alone");
}

void Region::rowReducesWholeCols(int64_t cols) const {
  if (!rowReduces_.empty() && cols != axes_.back().size)
    g_->fail(*rowReduces_.front(),
             fmt::format("a reduce inside a kernel needs a whole row per block ({} lanes, the "
                         "block has {})",
                         axes_.back().size, cols));
}

bool Region::cheapToRecompute(const HloInstruction* inst) const {
  // VPU ops per element from the leaves, through views; a store and a load
  // per use cost about as much as two (a transcendental is never cheap).
  int64_t budget = 2;
  std::vector<const HloInstruction*> stack{inst};
  std::set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second || g_->isLeaf(i) || isStop(i)) continue;
    HloOpcode op = i->opcode();
    if (op == HloOpcode::Constant || op == HloOpcode::Iota) continue;
    if (hlo::isElementwise(op)) {
      bool simple = op == HloOpcode::Convert || op == HloOpcode::Add || op == HloOpcode::Subtract ||
                    op == HloOpcode::Multiply || op == HloOpcode::Negate ||
                    op == HloOpcode::Maximum || op == HloOpcode::Minimum;
      if (!simple || --budget < 0) return false;
    }
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  return true;
}

bool Region::shiftIsModular(const HloInstruction* inst) {
  auto it = modular_.find(inst);
  if (it != modular_.end()) return it->second;
  bool m = true;
  if (!g_->isLeaf(inst) && !isStop(inst)) {
    HloOpcode op = inst->opcode();
    if (op == HloOpcode::Concatenate || op == HloOpcode::Iota) m = false;
    for (int64_t k = 0; m && k < inst->operandCount(); ++k) m = shiftIsModular(inst->operand(k));
  }
  modular_[inst] = m;
  return m;
}

bool Region::variesAlongLanes(const Embedding& emb) const {
  const int minor = static_cast<int>(dims_.size()) - 1;
  return shuffled_ && std::find(emb.begin(), emb.end(), minor) != emb.end();
}

bool Region::periodic(const LeafUse& u) const {
  const int minor = static_cast<int>(dims_.size()) - 1;
  return headLanes_ && !axes_.empty() &&
         std::find(u.emb.begin(), u.emb.end(), minor) != u.emb.end() &&
         !maps(u.emb, static_cast<int>(axes_.size()) - 1);
}

int64_t Region::leafWidth(const LeafUse& u) const {
  const int minor = static_cast<int>(dims_.size()) - 1;
  for (size_t j = 0; j < u.emb.size(); ++j)
    if (u.emb[j] == minor) {
      int64_t w = u.leaf->shape().dims[j];
      if (w > 128)
        g_->fail(*u.leaf, "an operand of a lane slice or concatenate is wider than one lane tile");
      return w;
    }
  return 1;
}

std::vector<int64_t> Region::leafArrayShape(const LeafUse& u) const {
  std::vector<int64_t> s = arrayShape(u.emb);
  // A head epilogue's leaves span the Col axis as it is, or are periodic.
  if (variesAlongLanes(u.emb) && (!headLanes_ || periodic(u))) s.back() = leafWidth(u);
  return s;
}

dsl::BlockSpec Region::leafBlockSpec(const LeafUse& u) const {
  dsl::BlockSpec b = blockSpec(u.emb);
  if (variesAlongLanes(u.emb) && (!headLanes_ || periodic(u))) b.block_shape.back() = leafWidth(u);
  return b;
}

namespace {

std::set<int> mappedSet(const Embedding& e) {
  std::set<int> s;
  for (int d : e)
    if (d >= 0) s.insert(d);
  return s;
}

}  // namespace

void Region::formAxes() {
  std::vector<std::set<int>> masks;
  for (const auto& m : masks_) masks.emplace_back(m.begin(), m.end());
  for (const LeafUse& u : leaves_) masks.push_back(mappedSet(u.emb));
  axes_.clear();
  // Space dims d0 < d1 read by a leaf from dims that do not follow each other
  // in its memory (a transpose of major dims permuted them) cannot merge.
  auto inMemoryOrder = [&](const LeafUse& u, int d0, int d1) {
    int j0 = -1, j1 = -1;
    for (size_t j = 0; j < u.emb.size(); ++j) {
      if (u.emb[j] == d0) j0 = static_cast<int>(j);
      if (u.emb[j] == d1) j1 = static_cast<int>(j);
    }
    if (j0 < 0 || j1 < 0) return true;
    if (j1 < j0) return false;
    for (int j = j0 + 1; j < j1; ++j)
      if (u.leaf->shape().dims[static_cast<size_t>(j)] != 1) return false;
    return true;
  };
  int prev = -1;
  for (int d = 0; d < static_cast<int>(dims_.size()); ++d) {
    if (dims_[static_cast<size_t>(d)] == 1) continue;
    bool merge = prev >= 0;
    for (int b : boundaries_)
      if (prev < b && b <= d) merge = false;
    for (const auto& m : masks)
      if (merge && m.count(prev) != m.count(d)) merge = false;
    for (const LeafUse& u : leaves_)
      if (merge && !inMemoryOrder(u, prev, d)) merge = false;
    if (merge) {
      axes_.back().dims.push_back(d);
      axes_.back().size *= dims_[static_cast<size_t>(d)];
    } else {
      Axis a;
      a.dims = {d};
      a.size = dims_[static_cast<size_t>(d)];
      axes_.push_back(a);
    }
    prev = d;
  }
  while (axes_.size() < 2) axes_.insert(axes_.begin(), Axis{});
  for (size_t a = 0; a < axes_.size(); ++a) {
    axes_[a].role = a + 2 == axes_.size()   ? AxisRole::Row
                    : a + 1 == axes_.size() ? AxisRole::Col
                                            : AxisRole::Lead;
    axes_[a].block = axes_[a].role == AxisRole::Lead ? 1 : axes_[a].size;
  }
}

void Region::formGroupAxes(const std::vector<std::vector<int>>& groups, const std::string& what) {
  std::vector<std::set<int>> masks;
  for (const auto& m : masks_) masks.emplace_back(m.begin(), m.end());
  for (const LeafUse& u : leaves_) masks.push_back(mappedSet(u.emb));
  axes_.clear();
  for (const auto& grp : groups) {
    Axis a;
    for (int d : grp)
      if (dims_[static_cast<size_t>(d)] != 1) {
        a.dims.push_back(d);
        a.size *= dims_[static_cast<size_t>(d)];
      }
    const bool last = &grp == &groups.back();
    for (size_t k = 0; k < masks.size(); ++k) {
      const auto& m = masks[k];
      size_t in = 0;
      for (int d : a.dims) in += m.count(d);
      if (in == 0 || in == a.dims.size()) continue;
      // A leaf of a head epilogue along the trailing 128 lanes only (periodic).
      bool isLeaf = k >= masks_.size();
      int64_t lanes = 1;
      bool suffix = true;
      for (size_t j = a.dims.size(); j-- > a.dims.size() - in;) {
        suffix = suffix && m.count(a.dims[j]);
        lanes *= dims_[static_cast<size_t>(a.dims[j])];
      }
      if (headLanes_ && last && isLeaf && suffix && lanes == 128) continue;
      g_->fail(*g_->root, fmt::format("{}: a value varies along only some of the dimensions that "
                                      "the kernel merges into one axis",
                                      what));
    }
    axes_.push_back(a);
  }
  for (size_t a = 0; a < axes_.size(); ++a) {
    axes_[a].role = a + 2 == axes_.size()   ? AxisRole::Row
                    : a + 1 == axes_.size() ? AxisRole::Col
                                            : AxisRole::Lead;
    axes_[a].block = axes_[a].role == AxisRole::Lead ? 1 : axes_[a].size;
  }
}

bool Region::splitWideCols(int64_t maxLanes) {
  const size_t n = axes_.size();
  Axis& col = axes_[n - 1];
  if (axes_[n - 2].dims.empty() || col.dims.size() < 2 || col.size <= maxLanes ||
      !rowReduces_.empty())
    return false;
  // The shortest run of trailing dims of at least one lane tile becomes the lanes.
  size_t first = col.dims.size();
  int64_t lanes = 1;
  while (first > 1 && lanes < 128) lanes *= dims_[static_cast<size_t>(col.dims[--first])];
  if (lanes % 128 != 0 || lanes > maxLanes) return false;
  Axis row;
  row.dims.assign(col.dims.begin(), col.dims.begin() + static_cast<std::ptrdiff_t>(first));
  row.size = col.size / lanes;
  col.dims.erase(col.dims.begin(), col.dims.begin() + static_cast<std::ptrdiff_t>(first));
  col.size = lanes;
  axes_.insert(axes_.end() - 1, row);
  for (size_t a = 0; a < axes_.size(); ++a) {
    axes_[a].role = a + 2 == axes_.size()   ? AxisRole::Row
                    : a + 1 == axes_.size() ? AxisRole::Col
                                            : AxisRole::Lead;
    axes_[a].block = axes_[a].role == AxisRole::Lead ? 1 : axes_[a].size;
  }
  return true;
}

bool Region::splitLanes() {
  const size_t n = axes_.size();
  Axis& row = axes_[n - 2];
  Axis& col = axes_[n - 1];
  if (!row.dims.empty() || col.dims.empty() || col.size < 1024 || col.size % 128 != 0 ||
      !rowReduces_.empty())
    return false;
  for (int d : iotaDims_)
    if (std::find(col.dims.begin(), col.dims.end(), d) != col.dims.end()) return false;
  row.dims = col.dims;
  row.size = col.size / 128;
  col.size = 128;
  row.block = row.size;
  col.block = col.size;
  return true;
}

void Region::dropUnitLeadAxes() {
  while (axes_.size() > 2 && axes_[0].size == 1) axes_.erase(axes_.begin());
}

int Region::axisOf(int d) const {
  for (size_t a = 0; a < axes_.size(); ++a)
    if (std::find(axes_[a].dims.begin(), axes_[a].dims.end(), d) != axes_[a].dims.end())
      return static_cast<int>(a);
  return -1;
}

bool Region::maps(const Embedding& emb, int a) const {
  const Axis& ax = axes_[static_cast<size_t>(a)];
  if (ax.dims.empty()) return false;
  return std::find(emb.begin(), emb.end(), ax.dims[0]) != emb.end();
}

const LeafUse& Region::leafUse(const HloInstruction* leaf, const Embedding& emb) const {
  Embedding e = normalized(leaf->shape(), emb);
  for (const LeafUse& u : leaves_)
    if (u.leaf == leaf && u.emb == e) return u;
  g_->fail(*leaf, "internal: a leaf use was not analyzed");
}

std::vector<int64_t> Region::arrayShape(const Embedding& emb) const {
  std::vector<int64_t> s;
  for (size_t a = 0; a < axes_.size(); ++a)
    s.push_back(maps(emb, static_cast<int>(a)) ? axes_[a].size : 1);
  return s;
}

std::vector<int64_t> Region::viewStrides(const HloInstruction& leaf, const Embedding& emb) const {
  const hlo::Shape& ls = leaf.shape();
  // The leaf's dense row-major strides, and which leaf dim each space dim reads.
  std::vector<int64_t> dense(static_cast<size_t>(ls.rank()), 1);
  for (int64_t j = ls.rank() - 1; j > 0; --j)
    dense[static_cast<size_t>(j - 1)] =
        dense[static_cast<size_t>(j)] * ls.dims[static_cast<size_t>(j)];
  std::map<int, size_t> leafDimOf;
  for (size_t j = 0; j < emb.size(); ++j)
    if (emb[j] >= 0) leafDimOf[emb[j]] = j;
  std::vector<int64_t> strides;
  bool permuted = false;
  int64_t lastMapped = -1;
  for (size_t a = 0; a < axes_.size(); ++a) {
    if (!maps(emb, static_cast<int>(a))) {
      strides.push_back(1);
      continue;
    }
    const std::vector<int>& dims = axes_[a].dims;
    // The axis merges its dims: they must sit next to each other, in order, in the leaf.
    for (size_t k = 0; k + 1 < dims.size(); ++k) {
      size_t j0 = leafDimOf.at(dims[k]), j1 = leafDimOf.at(dims[k + 1]);
      if (dense[j0] != dense[j1] * ls.dims[j1])
        g_->fail(leaf, "a transposed operand merges dimensions that are not adjacent in memory");
    }
    size_t minor = leafDimOf.at(dims.back());
    if (lastMapped >= 0 && static_cast<int64_t>(minor) < lastMapped) permuted = true;
    lastMapped = static_cast<int64_t>(minor);
    strides.push_back(dense[minor]);
  }
  if (!permuted) return {};
  return strides;
}

dsl::BlockSpec Region::blockSpec(const Embedding& emb) const {
  std::vector<int64_t> block;
  std::vector<int> grid;
  for (size_t a = 0; a < axes_.size(); ++a) {
    bool m = maps(emb, static_cast<int>(a));
    block.push_back(m ? axes_[a].block : 1);
    grid.push_back(m ? axes_[a].grid : -1);
  }
  const Serpentine sp = serpentine_;
  return dsl::BlockSpec(block, [grid, sp](const dsl::GridIndex& gi) {
    auto id = [&](int g) { return gi[static_cast<size_t>(g)]; };
    std::vector<dsl::Scalar> idx;
    for (int g : grid) idx.push_back(g >= 0 ? serpentineIndex(sp, id, g) : dsl::Scalar(0));
    return idx;
  });
}

dsl::Scalar Region::serpentineIndex(const Serpentine& sp, const std::function<dsl::Scalar(int)>& id,
                                    int g) {
  dsl::Scalar i = id(g);
  if (g == sp.lagAxis)
    i = dsl::max(dsl::min(i - dsl::Scalar(sp.lag), dsl::Scalar(sp.lagExtent - 1)), dsl::Scalar(0));
  if (g != sp.axis) return i;
  return i + id(sp.parity) % dsl::Scalar(2) * (dsl::Scalar(sp.extent - 1) - i - i);
}

BlockUse Region::blockUse(const Embedding& emb, int hbmBytes, int buffers) const {
  BlockUse u;
  u.rows = maps(emb, static_cast<int>(axes_.size()) - 2);
  u.cols = maps(emb, static_cast<int>(axes_.size()) - 1);
  u.buffers = buffers;
  u.hbmBytesPerElement = hbmBytes;
  return u;
}

dsl::Ref Region::plane(const dsl::Ref& ref) const {
  dsl::Ref r = ref;
  for (size_t a = 0; a + 2 < axes_.size(); ++a) {
    bool looped = static_cast<int>(a) == leadAxis_ && leadIndex_ && r.shape().front() > 1;
    r = r.at(looped ? *leadIndex_ : dsl::Scalar(0));
  }
  return r;
}

dsl::Array Region::load(const dsl::Ref& ref) const {
  dsl::Ref r = plane(ref);
  std::vector<int64_t> s = r.shape();
  // A column tile of a leaf that spans the block's columns (a periodic leaf
  // is one tile wide, a broadcast one column).
  const bool tiled = colStart_ >= 0 && s.back() > colWidth_;
  if (!clipRows_ && !clipCols_ && !tiled) return r.load();
  int64_t rows = s[s.size() - 2], cols = s[s.size() - 1];
  // A leaf with one row (column) there is broadcast along that axis.
  if (clipRows_ && rows > 1) rows = std::min(rows, clipRows_);
  if (clipCols_ && cols > 1) cols = std::min(cols, clipCols_);
  if (tiled)
    return r.load(dsl::ds(dsl::Scalar(0), rows), dsl::ds(dsl::Scalar(colStart_), colWidth_));
  return r.load(dsl::ds(dsl::Scalar(0), rows), dsl::ds(dsl::Scalar(0), cols));
}

int64_t Region::blockExtent(const Axis& ax) const {
  int64_t clip = ax.role == AxisRole::Row ? clipRows_ : ax.role == AxisRole::Col ? clipCols_ : 0;
  return clip ? std::min(clip, ax.block) : ax.block;
}

void Region::store(const dsl::Ref& ref, const dsl::Array& value) const {
  dsl::Ref r = plane(ref);
  dsl::Array v = value;
  if (v.dtype() == dsl::BOOL)
    v = dsl::where(v, dsl::full(1, 1, 1, dsl::S8), dsl::zeros(1, 1, dsl::S8));
  std::vector<int64_t> s = r.shape();
  if (colStart_ >= 0 && s.back() > colWidth_)
    return r.store(dsl::ds(dsl::Scalar(0), s[s.size() - 2]),
                   dsl::ds(dsl::Scalar(colStart_), colWidth_), v);
  r.store(v);
}

void Region::storeTogether(const std::vector<dsl::Ref>& refs, const std::vector<dsl::Array>& values,
                           const std::vector<dsl::Ref>& accs,
                           const std::vector<dsl::Array>& sums) const {
  std::vector<dsl::Ref> planes;
  std::vector<dsl::Array> vs;
  for (size_t k = 0; k < refs.size(); ++k) {
    planes.push_back(plane(refs[k]));
    dsl::Array v = values[k];
    if (v.dtype() == dsl::BOOL)
      v = dsl::where(v, dsl::full(1, 1, 1, dsl::S8), dsl::zeros(1, 1, dsl::S8));
    vs.push_back(v);
  }
  // A column window (setColWindow) of blocks wider than it: those columns of every ref.
  if (colStart_ >= 0 && planes.front().shape().back() > colWidth_)
    return dsl::store_together(planes, dsl::ds(dsl::Scalar(colStart_), colWidth_), vs, accs, sums);
  dsl::store_together(planes, vs, accs, sums);
}

dsl::Array Region::emit(const HloInstruction* inst, const Embedding& emb,
                        const std::vector<dsl::Ref>& refs, const dsl::Array* hero, int64_t shift) {
  Embedding e = normalized(inst->shape(), emb);
  if (!variesAlongLanes(e)) shift = 0;  // the same in every lane
  // Rotations are modulo the tile's lanes: a value computed from leaves
  // without a concatenate or lane iota is the same at shifts that differ by
  // 128 (one node, one rotate per tile: RoPE's halves at +-64).
  if (shift != 0 && shiftIsModular(inst)) shift = ((shift % 128) + 128) % 128;
  auto key = std::make_tuple(inst, e, shift);
  auto it = memo_.find(key);
  if (it != memo_.end()) return it->second;
  dsl::Array a = emitUncached(inst, e, refs, hero, shift);
  // A computed value read by several users is stored once (see materialized),
  // unless recomputing it per use costs less than that store and the loads.
  bool computes = hlo::isElementwise(inst->opcode()) && !isStop(inst) && !g_->isLeaf(inst);
  if (computes && inst->userCount() > 1 && !sharedInRegisters_ && !cheapToRecompute(inst))
    a = materialized(a);
  memo_[key] = a;
  return a;
}

dsl::Array Region::emitUncached(const HloInstruction* inst, const Embedding& emb,
                                const std::vector<dsl::Ref>& refs, const dsl::Array* hero,
                                int64_t shift) {
  const ComputeGraph& g = *g_;
  if (isStop(inst)) {
    if (!hero) g.fail(*inst, "internal: no value for the kernel's hero");
    size_t k = static_cast<size_t>(std::find(stops_.begin(), stops_.end(), inst) - stops_.begin());
    // A head epilogue's column tile of the result: rotated like a leaf.
    if (shift != 0 && colStart_ >= 0) return dsl::roll_lanes(hero[k], shift, colWidth_);
    if (shift != 0) g.fail(*inst, "internal: a lane-shifted use of the kernel's hero");
    return hero[k];
  }
  if (g.isLeaf(inst)) {
    // One load node per leaf use, whatever its shifts (one load per tile).
    auto lk = std::make_pair(inst, emb);
    auto at = loads_.find(lk);
    if (at == loads_.end())
      at = loads_.emplace(lk, load(refs[static_cast<size_t>(leafUse(inst, emb).input)])).first;
    dsl::Array a = at->second;
    // Into the region's lane frame: the one data movement of a lane shuffle.
    if (variesAlongLanes(emb)) a = dsl::roll_lanes(a, shift, frameLanes());
    if (inst->shape().type == hlo::PrimitiveType::Pred) a = a != dsl::zeros(1, 1, dsl::S8);
    return a;
  }
  switch (inst->opcode()) {
    case HloOpcode::Constant:
      return emitScalarConstant(g, *inst);
    case HloOpcode::Iota: {
      int64_t d = *inst->intAttr("iota_dimension");
      int sd = emb[static_cast<size_t>(d)];
      dsl::Array idx = dsl::zeros(1, 1, dsl::S32);
      if (sd >= 0) {
        int a = axisOf(sd);
        const Axis& ax = axes_[static_cast<size_t>(a)];
        auto id = [](int gr) { return dsl::program_id(gr); };
        dsl::Scalar base = ax.grid >= 0
                               ? serpentineIndex(serpentine_, id, ax.grid) * dsl::Scalar(ax.block)
                               : dsl::Scalar(0);
        if (ax.role == AxisRole::Row)
          idx = dsl::iota(blockExtent(ax), 1, 0) + dsl::splat(base, 1, 1);
        else if (ax.role == AxisRole::Col && colStart_ >= 0)
          idx = dsl::iota(1, colWidth_, 1) + dsl::splat(base + dsl::Scalar(colStart_), 1, 1);
        else if (ax.role == AxisRole::Col)
          idx = dsl::iota(1, blockExtent(ax), 1) + dsl::splat(base, 1, 1);
        else
          idx = dsl::splat(base, 1, 1);
        if (ax.role == AxisRole::Col && shift != 0)
          idx = idx - dsl::full(1, 1, double(shift), dsl::S32);
      }
      dsl::DType t = dslType(g, *inst, inst->shape().type);
      if (t == dsl::BOOL) return idx != dsl::zeros(1, 1, dsl::S32);
      return idx.astype(t);
    }
    case HloOpcode::Broadcast:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Transpose:
      return emit(inst->operand(0), operandEmbedding(g, *inst, 0, emb), refs, hero, shift);
    case HloOpcode::Slice:  // lane j of the slice is lane j + start of its operand
      return emit(inst->operand(0), emb, refs, hero, shift - inst->attrs().slice->back().start);
    case HloOpcode::Concatenate: {
      // Operand k at its offset o_k: lanes from shift + o_k on are its own.
      std::vector<int64_t> at;
      int64_t o = 0;
      for (const HloInstruction* op : inst->operands()) {
        at.push_back(o);
        o += op->shape().dims.back();
      }
      dsl::Array lane = dsl::iota(1, frameLanes(), 1);
      size_t n = at.size();
      auto part = [&](size_t k) {
        const HloInstruction* op = inst->operand(static_cast<int64_t>(k));
        return emit(op, normalized(op->shape(), emb), refs, hero, shift + at[k]);
      };
      dsl::Array r = part(n - 1);
      for (size_t k = n - 1; k-- > 0;) {
        dsl::Array p = part(k);
        // The same node on both sides (x's halves swapped: one rotation of
        // x) needs no select, nor its lane mask.
        if (p.node() != r.node())
          r = dsl::where(lane < dsl::full(1, 1, double(shift + at[k + 1]), dsl::S32), p, r);
      }
      return r;
    }
    case HloOpcode::Reduce: {
      auto v = rowValues_.find(inst);
      return v != rowValues_.end() ? v->second : emitRowReduce(*this, inst, refs);
    }
    default:
      break;
  }
  std::vector<dsl::Array> ops;
  for (int64_t k = 0; k < inst->operandCount(); ++k)
    ops.push_back(emit(inst->operand(k), operandEmbedding(g, *inst, k, emb), refs, hero, shift));
  return emitElementwise(g, *inst, ops);
}

dsl::Array Region::emitUnshared(const HloInstruction* inst, const Embedding& emb,
                                const std::vector<dsl::Ref>& refs) {
  return emitUncached(inst, normalized(inst->shape(), emb), refs, nullptr, 0);
}

dsl::Array materialized(const dsl::Array& a) {
  if (a.dtype() == dsl::BOOL) return a;
  return dsl::Array(dsl::materialize(a.node(), dsl::Loc::here()));
}

dsl::Array expandTo(const dsl::Array& a, int64_t rows, int64_t cols) {
  if (a.rows() == rows && a.cols() == cols) return a;
  dsl::Array all = dsl::full(rows, cols, 0, dsl::S32) == dsl::zeros(1, 1, dsl::S32);
  if (a.dtype() == dsl::BOOL) return all & a;
  return dsl::where(all, a, dsl::zeros(1, 1, a.dtype()));
}

void addLeafInputs(Region& r, KernelPlan& plan) {
  const ComputeGraph& g = r.graph();
  for (LeafUse& u : r.leafUses()) {
    u.input = static_cast<int>(plan.inputs.size());
    int64_t operand = g.leafOperand.at(u.leaf);
    std::string name = g.inst->operand(operand)->name();
    for (const auto& in : plan.inputs)
      if (in.name == name) name = fmt::format("{}.{}", g.inst->operand(operand)->name(), u.input);
    dsl::DType t = memoryType(dslType(g, *u.leaf, u.leaf->shape().type));
    plan.inputs.push_back(dsl::ShapeDtype(r.leafArrayShape(u), t, name));
    plan.inputs.back().strides = r.viewStrides(*u.leaf, u.emb);
    plan.config.in_specs.push_back(r.leafBlockSpec(u));
    plan.inputOperand.push_back(operand);
  }
}

namespace {

void relocate(kernels::llo::Block& b, const kernels::llo::SourceLoc& loc) {
  for (auto& op : b.ops) {
    op->loc = loc;
    for (auto& r : op->regions) relocate(r, loc);
  }
}

}  // namespace

LoweredKernel finishKernel(const ComputeGraph& g, KernelPlan& plan, dsl::KernelBody body) {
  plan.config.name = g.inst->name();
  if (plan.target) plan.config.compiler_params.vmem_limit_bytes = plan.target->vmemBytes;
  LoweredKernel out;
  try {
    dsl::PallasCall call = dsl::pallas_call(std::move(body), plan.config);
    out.kernel = call.trace(plan.inputs);
  } catch (const dsl::Error& e) {
    throw CannotLower::of(*g.inst, fmt::format("the kernel DSL rejects the kernel: {}", e.what()));
  }
  const hlo::OpMetadata& m = g.inst->attrs().metadata;
  kernels::llo::SourceLoc loc{m.sourceFile, m.sourceLine ? static_cast<int>(*m.sourceLine) : 0};
  out.kernel->loc = loc;
  relocate(out.kernel->body->body, loc);
  for (auto& mp : out.kernel->inMaps) mp.loc = loc;
  for (auto& mp : out.kernel->outMaps) mp.loc = loc;
  out.inputOperand = plan.inputOperand;
  out.outputIndex = {{}};
  out.tiling = plan.tiling;
  return out;
}

}  // namespace tpusim::lower::detail
