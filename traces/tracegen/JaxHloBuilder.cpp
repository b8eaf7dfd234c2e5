#include "traces/tracegen/JaxHloBuilder.h"

#include <fmt/format.h>

#include <limits>
#include <stdexcept>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::traces {

using hlo::HloComputation;
using hlo::HloModule;
using hlo::HloOpcode;

namespace {

// Every array gets the default row-major layout, as JAX dumps show it; scalars
// print without one ("f32[]").
Shape arrayShape(PrimitiveType t, std::vector<int64_t> dims) {
  Shape s = Shape::array(t, std::move(dims));
  if (s.rank() > 0) {
    hlo::Layout layout;
    for (int64_t d = s.rank() - 1; d >= 0; --d) layout.minorToMajor.push_back(d);
    s.layout = layout;
  }
  return s;
}

hlo::AttrValue intAttr(int64_t v) {
  hlo::AttrValue a;
  a.kind = hlo::AttrValue::Kind::Int;
  a.i = v;
  return a;
}

hlo::AttrValue intListAttr(std::vector<int64_t> v) {
  hlo::AttrValue a;
  a.kind = hlo::AttrValue::Kind::IntList;
  a.list = std::move(v);
  return a;
}

// A generator bug, not a user error: the model code asked for an impossible op.
[[noreturn]] void shapeBug(const std::string& what) {
  throw std::logic_error("tpu-tracegen internal error: " + what);
}

std::string directionName(hlo::ComparisonDirection d) {
  switch (d) {
    case hlo::ComparisonDirection::EQ:
      return "eq";
    case hlo::ComparisonDirection::NE:
      return "ne";
    case hlo::ComparisonDirection::LT:
      return "lt";
    case hlo::ComparisonDirection::LE:
      return "le";
    case hlo::ComparisonDirection::GT:
      return "gt";
    case hlo::ComparisonDirection::GE:
      return "ge";
  }
  return "eq";
}

std::string primitiveOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::Add:
      return "add";
    case HloOpcode::Subtract:
      return "sub";
    case HloOpcode::Multiply:
      return "mul";
    case HloOpcode::Divide:
      return "div";
    case HloOpcode::Maximum:
      return "max";
    case HloOpcode::Abs:
      return "abs";
    case HloOpcode::RoundNearestEven:
      return "round";
    case HloOpcode::Exp:
      return "exp";
    case HloOpcode::Rsqrt:
      return "rsqrt";
    case HloOpcode::Logistic:
      return "logistic";
    case HloOpcode::Cosine:
      return "cos";
    case HloOpcode::Sine:
      return "sin";
    case HloOpcode::Negate:
      return "neg";
    case HloOpcode::Log:
      return "log";
    case HloOpcode::Sqrt:
      return "sqrt";
    case HloOpcode::Power:
      return "pow";
    default:
      shapeBug(fmt::format("no element-wise primitive for {}", hlo::opcodeName(op)));
  }
}

}  // namespace

std::string pythonDtype(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::F32:
      return "float32";
    case PrimitiveType::BF16:
      return "bfloat16";
    case PrimitiveType::S8:
      return "int8";
    case PrimitiveType::S32:
      return "int32";
    case PrimitiveType::Pred:
      return "bool";
    default:
      return std::string(hlo::primitiveTypeName(t));
  }
}

std::string pythonTuple(const std::vector<int64_t>& v) {
  if (v.size() == 1) return fmt::format("({},)", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

JaxHloBuilder::JaxHloBuilder(std::string fnName, std::string sourceFile)
    : fnName_(std::move(fnName)),
      sourceFile_(std::move(sourceFile)),
      module_(std::make_unique<HloModule>("jit_" + fnName_)),
      entry_(std::make_unique<HloComputation>("main")) {}

JaxHloBuilder::~JaxHloBuilder() = default;

JaxHloBuilder::Scope::Scope(JaxHloBuilder& b, const std::string& name)
    : b_(b), saved_(b.scopes_.size()) {
  b_.scopes_.push_back(name);
}

JaxHloBuilder::Scope::~Scope() { b_.scopes_.resize(saved_); }

std::string JaxHloBuilder::nextName(const std::string& base) {
  return fmt::format("{}.{}", base, nextId_++);
}

hlo::OpMetadata JaxHloBuilder::metadata(const std::string& primitive, int line) const {
  hlo::OpMetadata md;
  std::string name = fmt::format("jit({})/jit(main)/", fnName_);
  for (const std::string& s : scopes_) name += s + "/";
  md.opName = name + primitive;
  md.sourceFile = sourceFile_;
  md.sourceLine = line;
  return md;
}

HloInstruction* JaxHloBuilder::add(std::unique_ptr<HloInstruction> inst,
                                   const std::string& primitive, int line) {
  if (!primitive.empty()) inst->attrs().metadata = metadata(primitive, line);
  return entry_->addInstruction(std::move(inst));
}

HloInstruction* JaxHloBuilder::parameter(PrimitiveType t, std::vector<int64_t> dims,
                                         const std::string& argName, const std::string& sharding) {
  int64_t number = static_cast<int64_t>(params_.size());
  auto inst = HloInstruction::create(HloOpcode::Parameter, nextName(fmt::format("Arg_{}", number)),
                                     arrayShape(t, dims));
  inst->attrs().parameterNumber = number;
  // Argument names are recorded escaped, as XLA prints them (CEscape).
  std::string escaped;
  for (char c : argName) {
    if (c == '\'' || c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  inst->attrs().metadata.opName = escaped;
  if (!sharding.empty()) inst->attrs().sharding = sharding;
  HloInstruction* p = entry_->addInstruction(std::move(inst));
  params_.push_back(p);
  return p;
}

HloInstruction* JaxHloBuilder::constant(PrimitiveType t, double value) {
  auto inst = HloInstruction::create(HloOpcode::Constant, nextName("constant"), Shape::scalar(t));
  inst->attrs().literal = hlo::Literal::scalar(t, value);
  return add(std::move(inst), "", 0);
}

HloInstruction* JaxHloBuilder::splat(PrimitiveType t, double value,
                                     const std::vector<int64_t>& dims, int line) {
  HloInstruction* c = constant(t, value);
  if (dims.empty()) return c;
  return broadcast(c, dims, {}, line);
}

HloInstruction* JaxHloBuilder::iota(PrimitiveType t, std::vector<int64_t> dims, int64_t dimension,
                                    int line) {
  if (dimension < 0 || dimension >= static_cast<int64_t>(dims.size()))
    shapeBug("iota dimension out of range");
  std::string prim = fmt::format("iota[dtype={} shape={} dimension={}]", pythonDtype(t),
                                 pythonTuple(dims), dimension);
  auto inst = HloInstruction::create(HloOpcode::Iota, nextName("iota"), arrayShape(t, dims));
  inst->setGeneric("iota_dimension", intAttr(dimension));
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::broadcast(HloInstruction* x, std::vector<int64_t> dims,
                                         std::vector<int64_t> mapping, int line) {
  if (mapping.size() != x->shape().dims.size()) shapeBug("broadcast mapping has the wrong rank");
  for (size_t i = 0; i < mapping.size(); ++i)
    if (mapping[i] < 0 || mapping[i] >= static_cast<int64_t>(dims.size()) ||
        dims[mapping[i]] != x->shape().dims[i])
      shapeBug("broadcast maps a dimension to one of another size");
  std::string prim = fmt::format("broadcast_in_dim[shape={} broadcast_dimensions={}]",
                                 pythonTuple(dims), pythonTuple(mapping));
  auto inst = HloInstruction::create(HloOpcode::Broadcast, nextName("broadcast"),
                                     arrayShape(x->shape().type, dims), {x});
  inst->attrs().dimensions = mapping;
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::convert(HloInstruction* x, PrimitiveType t, int line) {
  if (x->shape().type == t) return x;
  std::string prim =
      fmt::format("convert_element_type[new_dtype={} weak_type=False]", pythonDtype(t));
  auto inst = HloInstruction::create(HloOpcode::Convert, nextName("convert"),
                                     arrayShape(t, x->shape().dims), {x});
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::reshape(HloInstruction* x, std::vector<int64_t> dims, int line) {
  Shape s = arrayShape(x->shape().type, dims);
  if (s.elementCount() != x->shape().elementCount()) shapeBug("reshape changes the element count");
  std::string prim = fmt::format("reshape[new_sizes={} dimensions=None]", pythonTuple(dims));
  return add(HloInstruction::create(HloOpcode::Reshape, nextName("reshape"), s, {x}), prim, line);
}

HloInstruction* JaxHloBuilder::transpose(HloInstruction* x, std::vector<int64_t> perm, int line) {
  const auto& in = x->shape().dims;
  if (perm.size() != in.size()) shapeBug("transpose permutation has the wrong rank");
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(in.at(static_cast<size_t>(p)));
  std::string prim = fmt::format("transpose[permutation={}]", pythonTuple(perm));
  auto inst = HloInstruction::create(HloOpcode::Transpose, nextName("transpose"),
                                     arrayShape(x->shape().type, dims), {x});
  inst->attrs().dimensions = perm;
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::sliceDim(HloInstruction* x, int64_t dim, int64_t start,
                                        int64_t limit, int line) {
  std::vector<int64_t> dims = x->shape().dims;
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size()) || start < 0 || limit > dims[dim] ||
      start >= limit)
    shapeBug("slice out of range");
  std::vector<hlo::SliceDim> ranges;
  std::vector<int64_t> starts, limits;
  for (size_t d = 0; d < dims.size(); ++d) {
    hlo::SliceDim r{0, dims[d], 1};
    if (static_cast<int64_t>(d) == dim) r = {start, limit, 1};
    ranges.push_back(r);
    starts.push_back(r.start);
    limits.push_back(r.limit);
    dims[d] = r.limit - r.start;
  }
  std::string prim = fmt::format("slice[start_indices={} limit_indices={} strides=None]",
                                 pythonTuple(starts), pythonTuple(limits));
  auto inst = HloInstruction::create(HloOpcode::Slice, nextName("slice"),
                                     arrayShape(x->shape().type, dims), {x});
  inst->attrs().slice = ranges;
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::concatenate(std::vector<HloInstruction*> xs, int64_t dim, int line) {
  std::vector<int64_t> dims = xs.at(0)->shape().dims;
  dims.at(static_cast<size_t>(dim)) = 0;
  for (HloInstruction* x : xs) dims[dim] += x->shape().dims.at(static_cast<size_t>(dim));
  std::string prim = fmt::format("concatenate[dimension={}]", dim);
  auto inst = HloInstruction::create(HloOpcode::Concatenate, nextName("concatenate"),
                                     arrayShape(xs[0]->shape().type, dims), xs);
  inst->attrs().dimensions = std::vector<int64_t>{dim};
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::binary(HloOpcode op, HloInstruction* a, HloInstruction* b,
                                      int line) {
  if (a->shape().dims != b->shape().dims || a->shape().type != b->shape().type)
    shapeBug(fmt::format("{} of {} and {}", hlo::opcodeName(op), a->shape().toString(),
                         b->shape().toString()));
  auto inst = HloInstruction::create(op, nextName(std::string(hlo::opcodeName(op))),
                                     arrayShape(a->shape().type, a->shape().dims), {a, b});
  return add(std::move(inst), primitiveOf(op), line);
}

HloInstruction* JaxHloBuilder::unary(HloOpcode op, HloInstruction* x, int line) {
  auto inst = HloInstruction::create(op, nextName(std::string(hlo::opcodeName(op))),
                                     arrayShape(x->shape().type, x->shape().dims), {x});
  return add(std::move(inst), primitiveOf(op), line);
}

HloInstruction* JaxHloBuilder::compare(HloInstruction* a, HloInstruction* b,
                                       hlo::ComparisonDirection dir, int line) {
  if (a->shape().dims != b->shape().dims) shapeBug("compare of different shapes");
  auto inst = HloInstruction::create(HloOpcode::Compare, nextName("compare"),
                                     arrayShape(PrimitiveType::Pred, a->shape().dims), {a, b});
  inst->attrs().direction = dir;
  return add(std::move(inst), directionName(dir), line);
}

HloInstruction* JaxHloBuilder::select(HloInstruction* pred, HloInstruction* onTrue,
                                      HloInstruction* onFalse, int line) {
  if (pred->shape().dims != onTrue->shape().dims || onTrue->shape() != onFalse->shape())
    shapeBug("select of different shapes");
  // jnp.where(p, a, b) is select_n(p, b, a): the false case comes first.
  auto inst = HloInstruction::create(HloOpcode::Select, nextName("select"),
                                     arrayShape(onTrue->shape().type, onTrue->shape().dims),
                                     {pred, onTrue, onFalse});
  return add(std::move(inst), "select_n", line);
}

HloInstruction* JaxHloBuilder::dot(HloInstruction* lhs, HloInstruction* rhs,
                                   hlo::DotDimensionNumbers dn, PrimitiveType resultType,
                                   int line) {
  const auto& l = lhs->shape().dims;
  const auto& r = rhs->shape().dims;
  if (dn.lhsBatch.size() != dn.rhsBatch.size() ||
      dn.lhsContracting.size() != dn.rhsContracting.size())
    shapeBug("dot dimension numbers do not pair up");
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v)
      if (e == x) return true;
    return false;
  };
  std::vector<int64_t> dims;
  for (size_t i = 0; i < dn.lhsBatch.size(); ++i) {
    if (l.at(dn.lhsBatch[i]) != r.at(dn.rhsBatch[i])) shapeBug("dot batch sizes differ");
    dims.push_back(l[dn.lhsBatch[i]]);
  }
  for (size_t i = 0; i < dn.lhsContracting.size(); ++i)
    if (l.at(dn.lhsContracting[i]) != r.at(dn.rhsContracting[i]))
      shapeBug(fmt::format("dot contracting sizes differ: {} and {}", lhs->shape().toString(),
                           rhs->shape().toString()));
  for (int64_t d = 0; d < static_cast<int64_t>(l.size()); ++d)
    if (!contains(dn.lhsBatch, d) && !contains(dn.lhsContracting, d)) dims.push_back(l[d]);
  for (int64_t d = 0; d < static_cast<int64_t>(r.size()); ++d)
    if (!contains(dn.rhsBatch, d) && !contains(dn.rhsContracting, d)) dims.push_back(r[d]);
  std::string prim = fmt::format(
      "dot_general[dimension_numbers=(({}, {}), ({}, {})) precision=None "
      "preferred_element_type={}]",
      pythonTuple(dn.lhsContracting), pythonTuple(dn.rhsContracting), pythonTuple(dn.lhsBatch),
      pythonTuple(dn.rhsBatch), pythonDtype(resultType));
  auto inst = HloInstruction::create(HloOpcode::Dot, nextName("dot"), arrayShape(resultType, dims),
                                     {lhs, rhs});
  inst->attrs().dot = std::move(dn);
  return add(std::move(inst), prim, line);
}

hlo::HloComputation* JaxHloBuilder::makeRegion(PrimitiveType t, Reducer kind,
                                               const hlo::OpMetadata& md) {
  auto region =
      std::make_unique<HloComputation>(fmt::format("region_{}.{}", regions_++, nextId_++));
  HloInstruction* args[2];
  for (int64_t i = 0; i < 2; ++i) {
    auto p = HloInstruction::create(HloOpcode::Parameter, nextName(fmt::format("Arg_{}", i)),
                                    Shape::scalar(t));
    p->attrs().parameterNumber = i;
    args[i] = region->addInstruction(std::move(p));
  }
  HloOpcode op = kind == Reducer::Sum ? HloOpcode::Add : HloOpcode::Maximum;
  auto combine = HloInstruction::create(op, nextName(std::string(hlo::opcodeName(op))),
                                        Shape::scalar(t), {args[0], args[1]});
  combine->attrs().metadata = md;
  region->setRoot(region->addInstruction(std::move(combine)));
  return module_->addComputation(std::move(region));
}

HloInstruction* JaxHloBuilder::reduce(HloInstruction* x, std::vector<int64_t> dims, Reducer kind,
                                      int line) {
  PrimitiveType t = x->shape().type;
  std::string prim = fmt::format("{}[axes={}]", kind == Reducer::Sum ? "reduce_sum" : "reduce_max",
                                 pythonTuple(dims));
  hlo::OpMetadata md = metadata(prim, line);
  HloComputation* region = makeRegion(t, kind, md);
  HloInstruction* init =
      constant(t, kind == Reducer::Sum ? 0.0 : -std::numeric_limits<double>::infinity());
  std::vector<int64_t> out;
  for (int64_t d = 0; d < x->shape().rank(); ++d) {
    bool reduced = false;
    for (int64_t r : dims) reduced |= r == d;
    if (!reduced) out.push_back(x->shape().dims[d]);
  }
  auto inst =
      HloInstruction::create(HloOpcode::Reduce, nextName("reduce"), arrayShape(t, out), {x, init});
  inst->attrs().dimensions = dims;
  inst->attrs().calls.push_back({"to_apply", {region}, false});
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::psum(HloInstruction* x, int64_t devices, const std::string& axis,
                                    int line) {
  std::string prim = "psum[axes=('" + axis + "',)]";
  hlo::OpMetadata md = metadata(prim, line);
  HloComputation* region = makeRegion(x->shape().type, Reducer::Sum, md);
  auto inst = HloInstruction::create(HloOpcode::AllReduce, nextName("all-reduce"), x->shape(), {x});
  hlo::ReplicaGroups groups;
  groups.iotaForm = true;
  groups.iotaGroupShape = {1, devices};
  groups.iotaReshape = {devices};
  inst->attrs().replicaGroups = groups;
  inst->attrs().channelId = ++channels_;
  hlo::AttrValue global;
  global.kind = hlo::AttrValue::Kind::Bool;
  global.b = true;
  inst->setGeneric("use_global_device_ids", global);
  inst->attrs().calls.push_back({"to_apply", {region}, false});
  partitions_ = devices;
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::takeRows(HloInstruction* table, HloInstruction* indices, int line) {
  const auto& idx = indices->shape().dims;
  if (idx.empty() || idx.back() != 1 || table->shape().rank() != 2)
    shapeBug("takeRows needs a 2-D table and indices ending in a size-1 index vector");
  std::vector<int64_t> dims(idx.begin(), idx.end() - 1);
  int64_t rowSize = table->shape().dims[1];
  dims.push_back(rowSize);
  int64_t vectorDim = static_cast<int64_t>(idx.size()) - 1;
  std::string prim = fmt::format(
      "gather[dimension_numbers=GatherDimensionNumbers(offset_dims=({},), "
      "collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), "
      "start_indices_batching_dims=()) slice_sizes=(1, {}) indices_are_sorted=False "
      "unique_indices=False mode=GatherScatterMode.CLIP fill_value=None]",
      vectorDim, rowSize);
  auto inst = HloInstruction::create(HloOpcode::Gather, nextName("gather"),
                                     arrayShape(table->shape().type, dims), {table, indices});
  inst->setGeneric("offset_dims", intListAttr({vectorDim}));
  inst->setGeneric("collapsed_slice_dims", intListAttr({0}));
  inst->setGeneric("start_index_map", intListAttr({0}));
  inst->setGeneric("index_vector_dim", intAttr(vectorDim));
  inst->setGeneric("slice_sizes", intListAttr({1, rowSize}));
  return add(std::move(inst), prim, line);
}

HloInstruction* JaxHloBuilder::dynamicUpdateSlice(HloInstruction* x, HloInstruction* update,
                                                  std::vector<HloInstruction*> starts, int line) {
  if (starts.size() != x->shape().dims.size() || update->shape().rank() != x->shape().rank())
    shapeBug("dynamic-update-slice needs one start index per dimension");
  std::vector<HloInstruction*> ops{x, update};
  ops.insert(ops.end(), starts.begin(), starts.end());
  auto inst = HloInstruction::create(HloOpcode::DynamicUpdateSlice,
                                     nextName("dynamic-update-slice"), x->shape(), ops);
  return add(std::move(inst), "dynamic_update_slice", line);
}

HloInstruction* JaxHloBuilder::padHigh(HloInstruction* x, int64_t dim, int64_t count, int line) {
  std::vector<int64_t> dims = x->shape().dims;
  if (dim < 0 || dim >= static_cast<int64_t>(dims.size()) || count < 0)
    shapeBug("pad dimension out of range");
  std::vector<hlo::PaddingDim> pads(dims.size());
  pads[dim].high = count;
  dims[dim] += count;
  HloInstruction* zero = constant(x->shape().type, 0.0);
  auto inst = HloInstruction::create(HloOpcode::Pad, nextName("pad"),
                                     arrayShape(x->shape().type, dims), {x, zero});
  inst->attrs().padding = pads;
  std::string config;
  for (size_t d = 0; d < pads.size(); ++d)
    config += fmt::format("{}(0, {}, 0)", d ? ", " : "", pads[d].high);
  return add(std::move(inst), fmt::format("pad[padding_config=({})]", config), line);
}

HloInstruction* JaxHloBuilder::scatterAddRows(const std::vector<int64_t>& tableDims,
                                              HloInstruction* indices, HloInstruction* updates,
                                              int line) {
  const auto& idx = indices->shape().dims;
  if (tableDims.size() != 2 || idx.empty() || idx.back() != 1 ||
      updates->shape().rank() != static_cast<int64_t>(idx.size()) ||
      updates->shape().dims.back() != tableDims[1])
    shapeBug(
        "scatterAddRows needs a 2-D table, indices ending in a size-1 index vector and "
        "one update row per index");
  const PrimitiveType t = updates->shape().type;
  const int64_t vectorDim = static_cast<int64_t>(idx.size()) - 1;
  std::string prim = fmt::format(
      "scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=({},), "
      "inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), "
      "scatter_indices_batching_dims=()) indices_are_sorted=False unique_indices=False "
      "mode=GatherScatterMode.CLIP update_jaxpr=None update_consts=()]",
      vectorDim);
  hlo::OpMetadata md = metadata(prim, line);
  HloComputation* region = makeRegion(t, Reducer::Sum, md);
  HloInstruction* zeros = splat(t, 0.0, tableDims, line);
  auto inst = HloInstruction::create(HloOpcode::Scatter, nextName("scatter"),
                                     arrayShape(t, tableDims), {zeros, indices, updates});
  inst->setGeneric("update_window_dims", intListAttr({vectorDim}));
  inst->setGeneric("inserted_window_dims", intListAttr({0}));
  inst->setGeneric("scatter_dims_to_operand_dims", intListAttr({0}));
  inst->setGeneric("index_vector_dim", intAttr(vectorDim));
  inst->attrs().calls.push_back({"to_apply", {region}, false});
  return add(std::move(inst), prim, line);
}

std::unique_ptr<HloModule> JaxHloBuilder::finish(std::vector<HloInstruction*> outputs,
                                                 std::vector<std::pair<int64_t, int64_t>> aliases) {
  HloInstruction* root = outputs.at(0);
  if (outputs.size() > 1) {
    std::vector<Shape> shapes;
    for (HloInstruction* o : outputs) shapes.push_back(o->shape());
    root = entry_->addInstruction(
        HloInstruction::create(HloOpcode::Tuple, nextName("tuple"), Shape::tuple(shapes), outputs));
  }
  entry_->setRoot(root);
  entry_->setName(fmt::format("main.{}", nextId_++));

  // entry_computation_layout={(p0, p1, ..., /*index=5*/p5, ...)->result}: XLA
  // marks every fifth element of a long list with its index.
  auto list = [](const std::vector<Shape>& shapes) {
    std::string s;
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (i) s += ", ";
      if (i && i % 5 == 0) s += fmt::format("/*index={}*/", i);
      s += shapes[i].toString();
    }
    return s;
  };
  std::vector<Shape> paramShapes;
  for (HloInstruction* p : params_) paramShapes.push_back(p->shape());
  std::string result = root->shape().isTuple() ? "(" + list(root->shape().tupleShapes) + ")"
                                               : root->shape().toString();
  if (!aliases.empty()) {
    std::vector<std::string> parts;
    for (auto [output, param] : aliases)
      parts.push_back(fmt::format("{{{}}}: ({}, {{}}, may-alias)", output, param));
    module_->headerAttributes().emplace_back("input_output_alias",
                                             fmt::format("{{ {} }}", fmt::join(parts, ", ")));
  }
  module_->headerAttributes().emplace_back("entry_computation_layout",
                                           "{(" + list(paramShapes) + ")->" + result + "}");
  if (partitions_ > 1)
    module_->headerAttributes().emplace_back("num_partitions", std::to_string(partitions_));
  HloComputation* entry = module_->addComputation(std::move(entry_));
  module_->setEntry(entry);
  return std::move(module_);
}

}  // namespace tpusim::traces
