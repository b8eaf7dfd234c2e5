#include "kernels/dsl/PallasCall.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/dsl/Emit.h"
#include "kernels/llo/Printer.h"
#include "kernels/llo/Verifier.h"

namespace tpusim::kernels::dsl {

namespace detail {
void arityMismatch(size_t expected, size_t given) {
  throw Error(
      fmt::format("error: the kernel takes {} refs but the call provides {} "
                  "(scalar-prefetch inputs, inputs, outputs, scratch)",
                  expected, given));
}
}  // namespace detail

BlockSpec BlockSpec::in(Space space, Loc l) {
  BlockSpec s;
  s.memory_space = space;
  s.loc = l;
  return s;
}

namespace {

constexpr int64_t kDefaultVmemLimit = int64_t(16) << 20;

std::string arrayDesc(const ShapeDtype& a) {
  return fmt::format("{}{}", isa::dtypeName(a.dtype), llo::shapeStr(a.shape));
}

// Pallas's rule: the last two block dims are divisible by 8 and 128, or equal the array's.
void checkBlockShape(const std::string& what, const ShapeDtype& array, const BlockSpec& spec) {
  const auto& b = spec.block_shape;
  const auto& a = array.shape;
  if (b.size() != a.size())
    fail(spec.loc, fmt::format("{}: block shape {} has rank {} but the array {} has rank {}", what,
                               llo::shapeStr(b), b.size(), arrayDesc(array), a.size()));
  size_t n = b.size();
  for (size_t d = 0; d < n; ++d) {
    if (b[d] < 1)
      fail(spec.loc,
           fmt::format("{}: block shape {} has a non-positive dimension", what, llo::shapeStr(b)));
    int64_t unit = d + 1 == n ? 128 : (d + 2 == n ? 8 : 1);
    if (b[d] % unit != 0 && b[d] != a[d])
      fail(spec.loc,
           fmt::format("{}: block shape {} for array {}: dimension {} is {}, which is neither "
                       "divisible by {} nor equal to the array's {}",
                       what, llo::shapeStr(b), arrayDesc(array), d, b[d], unit, a[d]));
  }
}

// Strides of an input view: a permutation of the dense strides of its shape,
// so that the view covers its buffer exactly, with rows contiguous.
void checkStrides(const Loc& loc, const std::string& callName, const ShapeDtype& a) {
  if (a.strides.empty()) return;
  auto bad = [&](const std::string& why) {
    fail(loc, fmt::format("{}: input '{}' {} has strides {}: {}", callName, a.name, arrayDesc(a),
                          llo::shapeStr(a.strides), why));
  };
  size_t n = a.shape.size();
  if (a.strides.size() != n) bad("one stride per dimension is needed");
  if (n == 0 || a.strides[n - 1] != 1) bad("the last dimension's stride must be 1");
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return a.strides[x] > a.strides[y] || (a.strides[x] == a.strides[y] && x < y);
  });
  int64_t dense = 1;
  for (size_t k = n; k-- > 0;) {
    size_t d = order[k];
    if (a.shape[d] != 1 && a.strides[d] != dense)
      bad("they are not a reordering of a dense row-major layout");
    dense *= a.shape[d];
  }
}

llo::MemSpace spaceOf(Space s) {
  switch (s) {
    case Space::VMEM:
      return llo::MemSpace::Vmem;
    case Space::SMEM:
      return llo::MemSpace::Smem;
    case Space::ANY:
      return llo::MemSpace::Hbm;
  }
  return llo::MemSpace::Vmem;
}

}  // namespace

std::unique_ptr<llo::Kernel> PallasCall::trace(const std::vector<ShapeDtype>& inputsIn) const {
  const CallConfig& c = config_;
  clearTraceCaches();
  auto k = std::make_unique<llo::Kernel>();
  k->name = c.name;
  k->loc = loc_.toIr();
  k->grid = c.grid;
  k->numScalarPrefetch = c.num_scalar_prefetch;
  k->aliases = c.input_output_aliases;
  std::string callName = fmt::format("pallas_call '{}'", c.name);

  for (int64_t g : c.grid)
    if (g < 1)
      fail(loc_, fmt::format("{}: grid {} has a non-positive dimension", callName,
                             llo::shapeStr(c.grid)));
  k->semantics = c.compiler_params.dimension_semantics;
  int64_t gridSteps = 1;
  for (int64_t g : c.grid) gridSteps *= g;
  const int64_t tail = c.compiler_params.tail_steps_without_inputs;
  // A count past the first step would place the next kernel's prefetch at a
  // step that never runs, and that kernel would wait for it forever.
  if (tail < 0 || (tail > 0 && tail >= gridSteps))
    fail(loc_, fmt::format("{}: compiler_params.tail_steps_without_inputs = {} must be in "
                           "[0, {}) for a grid of {} steps",
                           callName, tail, gridSteps, gridSteps));
  k->tailStepsWithoutInputs = tail;
  const int64_t lookahead = c.compiler_params.schedule_lookahead;
  if (lookahead < 0 || lookahead > (int64_t(1) << 20))
    fail(loc_, fmt::format("{}: compiler_params.schedule_lookahead = {} must be in [0, {}]",
                           callName, lookahead, int64_t(1) << 20));
  k->scheduleLookahead = lookahead;
  if (k->semantics.empty()) k->semantics.assign(c.grid.size(), DimSemantics::Arbitrary);
  if (k->semantics.size() != c.grid.size())
    fail(loc_, fmt::format("{}: {} dimension semantics for a {}-dimensional grid", callName,
                           k->semantics.size(), c.grid.size()));
  if (c.num_scalar_prefetch < 0 || c.num_scalar_prefetch > int(inputsIn.size()))
    fail(loc_, fmt::format("{}: {} scalar-prefetch operands but {} inputs", callName,
                           c.num_scalar_prefetch, inputsIn.size()));
  size_t blocked = inputsIn.size() - c.num_scalar_prefetch;
  if (c.in_specs.size() != blocked)
    fail(loc_, fmt::format("{}: {} in_specs for {} inputs ({} of them scalar-prefetched)", callName,
                           c.in_specs.size(), inputsIn.size(), c.num_scalar_prefetch));
  if (c.out_specs.size() != c.out_shapes.size())
    fail(loc_, fmt::format("{}: {} out_specs for {} outputs", callName, c.out_specs.size(),
                           c.out_shapes.size()));

  auto named = [](ShapeDtype a, const char* prefix, size_t i) {
    if (a.name.empty()) a.name = fmt::format("{}{}", prefix, i);
    return a;
  };
  std::vector<ShapeDtype> ins, outs;
  for (size_t i = 0; i < inputsIn.size(); ++i) ins.push_back(named(inputsIn[i], "in", i));
  for (size_t i = 0; i < c.out_shapes.size(); ++i) outs.push_back(named(c.out_shapes[i], "out", i));
  for (size_t i = 0; i < ins.size(); ++i) {
    const ShapeDtype& a = ins[i];
    checkStrides(loc_, callName, a);
    if (!a.strides.empty() && int(i) < c.num_scalar_prefetch)
      fail(loc_, fmt::format("{}: scalar-prefetch input '{}' cannot be a strided view", callName,
                             a.name));
    k->inputs.push_back({a.name, a.dtype, a.shape, a.strides});
  }
  for (const auto& a : outs) {
    if (!a.strides.empty())
      fail(loc_, fmt::format("{}: output '{}' cannot be a strided view", callName, a.name));
    k->outputs.push_back({a.name, a.dtype, a.shape, {}});
  }
  for (int i = 0; i < c.num_scalar_prefetch; ++i)
    if (ins[i].dtype != S32)
      fail(loc_, fmt::format("{}: scalar-prefetch input '{}' must be s32, is {}", callName,
                             ins[i].name, arrayDesc(ins[i])));

  // Block mappings, with their index maps traced into scalar functions.
  auto makeMapping = [&](const std::string& what, const ShapeDtype& array, const BlockSpec& spec) {
    llo::BlockMapping m;
    m.space = spaceOf(spec.memory_space);
    m.buffers = spec.buffers;
    m.loc = spec.loc.toIr();
    if (m.space != llo::MemSpace::Vmem) return m;
    BlockSpec s = spec;
    if (s.block_shape.empty()) s.block_shape = array.shape;  // the whole array
    checkBlockShape(what, array, s);
    if (s.buffers < 1)
      fail(s.loc, fmt::format("{}: Buffered({}) needs at least one buffer", what, s.buffers));
    m.blockShape = s.block_shape;
    m.indexMap = std::make_unique<llo::Function>();
    m.indexMap->name = what + ".index_map";
    llo::Builder b(m.indexMap.get(), &m.indexMap->body);
    b.setLoc(s.loc.toIr());
    TraceScope scope(&b);
    GridIndex gi;
    for (size_t d = 0; d < c.grid.size(); ++d)
      gi.ids.push_back(Scalar(m.indexMap->addArg(llo::Type::scalar(), fmt::format("g{}", d))));
    for (int i = 0; i < c.num_scalar_prefetch; ++i)
      gi.prefetch.push_back(Ref(m.indexMap->addArg(
          llo::Type::ref(llo::MemSpace::Smem, ins[i].dtype, ins[i].shape), ins[i].name)));
    std::vector<Scalar> idx;
    if (s.index_map)
      idx = s.index_map(gi);
    else
      idx.assign(array.shape.size(), Scalar(0));
    if (idx.size() != array.shape.size())
      fail(s.loc, fmt::format("{}: the index map returns {} block indices for a rank-{} array",
                              what, idx.size(), array.shape.size()));
    std::vector<llo::Value*> vals;
    for (const Scalar& x : idx) vals.push_back(x.value());
    b.create(llo::OpKind::Return, vals, {});
    return m;
  };
  for (size_t i = 0; i < blocked; ++i) {
    const ShapeDtype& a = ins[i + c.num_scalar_prefetch];
    k->inMaps.push_back(
        makeMapping(fmt::format("in_specs[{}] ('{}')", i, a.name), a, c.in_specs[i]));
  }
  for (size_t i = 0; i < outs.size(); ++i)
    k->outMaps.push_back(
        makeMapping(fmt::format("out_specs[{}] ('{}')", i, outs[i].name), outs[i], c.out_specs[i]));

  // The body: refs in Pallas order.
  k->body = std::make_unique<llo::Function>();
  llo::Function& fn = *k->body;
  fn.name = c.name;
  std::vector<Ref> refs;
  for (int i = 0; i < c.num_scalar_prefetch; ++i)
    refs.push_back(
        Ref(fn.addArg(llo::Type::ref(llo::MemSpace::Smem, S32, ins[i].shape), ins[i].name)));
  auto addMapped = [&](const ShapeDtype& a, const llo::BlockMapping& m) {
    auto shape = m.space == llo::MemSpace::Vmem ? m.blockShape : a.shape;
    std::vector<int64_t> strides;
    if (m.space == llo::MemSpace::Hbm) strides = a.strides;
    refs.push_back(Ref(fn.addArg(llo::Type::ref(m.space, a.dtype, shape, strides), a.name)));
  };
  for (size_t i = 0; i < blocked; ++i) addMapped(ins[i + c.num_scalar_prefetch], k->inMaps[i]);
  for (size_t i = 0; i < outs.size(); ++i) addMapped(outs[i], k->outMaps[i]);
  for (size_t i = 0; i < c.scratch.size(); ++i) {
    const ScratchSpec& s = c.scratch[i];
    llo::Type t = llo::Type::ref(s.space, s.dtype, s.shape);
    k->scratch.push_back(t);
    refs.push_back(Ref(fn.addArg(t, fmt::format("scratch{}", i))));
  }
  {
    llo::Builder b(&fn, &fn.body);
    b.setLoc(loc_.toIr());
    TraceScope scope(&b);
    body_(refs);
  }

  std::vector<std::string> errors = llo::verifyKernel(*k);
  if (!errors.empty()) {
    std::string msg = fmt::format("{}: the traced kernel is malformed:", callName);
    for (const auto& e : errors) msg += "\n  " + e;
    fail(loc_, msg);
  }

  // VMEM budget: pipelined blocks x buffers, scratch, temporaries.
  int64_t limit = c.compiler_params.vmem_limit_bytes > 0 ? c.compiler_params.vmem_limit_bytes
                                                         : kDefaultVmemLimit;
  std::vector<std::pair<std::string, int64_t>> uses;
  auto blockUse = [&](const llo::ArrayOperand& a, const llo::BlockMapping& m) {
    if (m.space != llo::MemSpace::Vmem) return;
    int64_t bytes = llo::tiledLayout(m.blockShape).totalBytes();
    uses.push_back({fmt::format("'{}' block {}{} x {} buffers", a.name, isa::dtypeName(a.dtype),
                                llo::shapeStr(m.blockShape), m.buffers),
                    bytes * m.buffers});
  };
  for (size_t i = 0; i < blocked; ++i) blockUse(k->inputs[i + c.num_scalar_prefetch], k->inMaps[i]);
  for (size_t i = 0; i < outs.size(); ++i) blockUse(k->outputs[i], k->outMaps[i]);
  for (size_t i = 0; i < k->scratch.size(); ++i)
    if (k->scratch[i].space == llo::MemSpace::Vmem)
      uses.push_back(
          {fmt::format("scratch{} {}", i, k->scratch[i].str()), llo::refBytes(k->scratch[i])});
  for (const auto& op : fn.body.ops)
    if (op->kind == llo::OpKind::AllocVmem)
      uses.push_back({fmt::format("temporary %{} {} (line {})", op->result()->id,
                                  op->result()->type.str(), op->loc.line),
                      llo::refBytes(op->result()->type)});
  int64_t total = 0;
  for (const auto& u : uses) total += u.second;
  if (total > limit) {
    std::string msg =
        fmt::format("{} needs {} bytes of VMEM but the limit is {} bytes:", callName, total, limit);
    for (const auto& u : uses) msg += fmt::format("\n  {:>12} bytes  {}", u.second, u.first);
    fail(loc_, msg);
  }
  return k;
}

}  // namespace tpusim::kernels::dsl
