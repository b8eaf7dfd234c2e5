// kInput fusions (a reduce root with its element-wise producers) and unfused
// reduces: the kernel walks the reduce's *input* axes; kept axes are parallel
// grid axes, reduced axes come last in the grid ("arbitrary") and accumulate
// into an f32 / s32 VMEM scratch: lanes reduce on the XLU (sum / max along
// axis 1), sublanes with the rotate tree (axis 0), leading axes across grid
// steps. min is max of the negated values. bf16 reduces accumulate in f32 and
// round once at the end; the init value is combined once, at the end, unless
// it is the constant identity.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/fusion/ElementwiseMath.h"
#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

using hlo::HloOpcode;

namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int hbmBytes(dsl::DType t) { return isa::dtypeBytes(t); }

// Is `init` the constant identity of `kind` (so combining it changes nothing)?
bool isIdentity(const HloInstruction* init, ReduceKind kind) {
  if (init->opcode() != HloOpcode::Constant || !init->literal() || init->literal()->size() != 1)
    return false;
  const hlo::Literal& l = *init->literal();
  bool fl = hlo::isFloatingType(init->shape().type);
  switch (kind) {
    case ReduceKind::Sum:
      return fl ? l.getDouble(0) == 0.0 : l.getInt(0) == 0;
    case ReduceKind::Max:
      return fl ? l.getDouble(0) == -INFINITY : l.getInt(0) == std::numeric_limits<int32_t>::min();
    case ReduceKind::Min:
      return fl ? l.getDouble(0) == INFINITY : l.getInt(0) == std::numeric_limits<int32_t>::max();
  }
  return false;
}
}  // namespace

ReduceKind reduceKindOf(const ComputeGraph& g, const HloInstruction& reduce) {
  const hlo::HloComputation* f = reduce.toApply();
  const HloInstruction* r = f ? f->root() : nullptr;
  bool binaryOfParams =
      r && r->operandCount() == 2 && r->operand(0)->opcode() == HloOpcode::Parameter &&
      r->operand(1)->opcode() == HloOpcode::Parameter && r->operand(0) != r->operand(1);
  if (binaryOfParams) {
    if (r->opcode() == HloOpcode::Add) return ReduceKind::Sum;
    if (r->opcode() == HloOpcode::Maximum) return ReduceKind::Max;
    if (r->opcode() == HloOpcode::Minimum) return ReduceKind::Min;
  }
  g.fail(reduce, "the reduction computation must be add, maximum or minimum of its two parameters");
}

LoweredKernel lowerReduce(const ComputeGraph& g, const TilingTarget& t) {
  const HloInstruction* red = g.root;
  if (red->opcode() != HloOpcode::Reduce) g.fail(*red, "internal: not a reduce");
  if (red->operandCount() != 2 || !red->shape().isArray())
    g.fail(*red, "a variadic reduce is not supported");
  const ReduceKind kind = reduceKindOf(g, *red);
  const HloInstruction* input = red->operand(0);
  const HloInstruction* init = red->operand(1);
  const dsl::DType outType = dslType(g, *red, red->shape().type);
  if (outType == dsl::BOOL) g.fail(*red, "a reduce of pred is not supported");
  const dsl::DType accType =
      outType == dsl::F32 || outType == dsl::BF16 || outType == dsl::F16 ? dsl::F32 : dsl::S32;
  // Max and min run as a max: of -x (floats) or ~x (integers, whose negation
  // wraps at INT_MIN) for min; u32 values biased into signed order.
  const bool biasUnsigned =
      kind != ReduceKind::Sum && red->operand(0)->shape().type == hlo::PrimitiveType::U32;
  auto toMaxDomain = [&](dsl::Array x) {
    if (biasUnsigned) x = math::biased(x);
    if (kind == ReduceKind::Min) x = accType == dsl::F32 ? -x : x ^ dsl::full(1, 1, -1, dsl::S32);
    return x;
  };
  auto fromMaxDomain = [&](dsl::Array v) {
    if (kind == ReduceKind::Min) v = accType == dsl::F32 ? -v : v ^ dsl::full(1, 1, -1, dsl::S32);
    if (biasUnsigned) v = math::biased(v);
    return v;
  };

  const int64_t rank = input->shape().rank();
  const Embedding inEmb = identity(rank);
  std::vector<bool> reducedDim(static_cast<size_t>(rank), false);
  for (int64_t d : red->dimensions()) {
    if (d < 0 || d >= rank) g.fail(*red, "reduce dimension out of range");
    reducedDim[static_cast<size_t>(d)] = true;
  }
  Embedding outEmb;  // the result's dims are the kept input dims, in order
  std::vector<int> kept;
  for (int64_t d = 0; d < rank; ++d)
    if (!reducedDim[static_cast<size_t>(d)]) {
      int sd = input->shape().dims[static_cast<size_t>(d)] == 1 ? -1 : static_cast<int>(d);
      outEmb.push_back(sd);
      kept.push_back(static_cast<int>(d));
    }

  auto r = std::make_shared<Region>(g, input->shape().dims);
  r->analyze(input, inEmb);
  r->analyze(init, {});
  r->constrain(kept);
  r->formAxes();
  auto& axes = r->axes();
  const size_t n = axes.size();
  auto axisReduced = [&](size_t a) {
    return !axes[a].dims.empty() && reducedDim[static_cast<size_t>(axes[a].dims[0])];
  };
  const bool rowsReduced = axisReduced(n - 2), colsReduced = axisReduced(n - 1);

  std::vector<BlockUse> uses;
  for (const LeafUse& u : r->leafUses())
    uses.push_back(
        r->blockUse(u.emb, hbmBytes(memoryType(dslType(g, *u.leaf, u.leaf->shape().type)))));
  uses.push_back(r->blockUse(outEmb, hbmBytes(outType)));
  uses.push_back(r->blockUse(outEmb, 4, 1));  // the accumulator
  LoopBlock b =
      chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, rowsReduced, colsReduced, uses, t);
  axes[n - 2].block = b.rows;
  axes[n - 1].block = b.cols;

  KernelPlan plan;
  plan.target = &t;
  plan.tiling = b.why;
  // Kept axes first (parallel), then the reduced ones (arbitrary, innermost).
  std::vector<std::pair<int, int64_t>> reducedGrid;  // grid axis, extent
  for (int pass = 0; pass < 2; ++pass)
    for (size_t a = 0; a < n; ++a) {
      if (axisReduced(a) != (pass == 1)) continue;
      axes[a].grid = static_cast<int>(plan.config.grid.size());
      int64_t extent = cdiv(axes[a].size, axes[a].block);
      plan.config.grid.push_back(extent);
      plan.config.compiler_params.dimension_semantics.push_back(pass == 1 ? dsl::ARBITRARY
                                                                          : dsl::PARALLEL);
      if (pass == 1) reducedGrid.push_back({axes[a].grid, extent});
    }
  addLeafInputs(*r, plan);
  plan.config.out_shapes = {dsl::ShapeDtype(r->arrayShape(outEmb), outType, "out")};
  plan.config.out_specs = {r->blockSpec(outEmb)};
  const int64_t accRows = r->maps(outEmb, static_cast<int>(n) - 2) ? axes[n - 2].block : 1;
  const int64_t accCols = r->maps(outEmb, static_cast<int>(n) - 1) ? axes[n - 1].block : 1;
  plan.config.scratch = {dsl::VMEM({accRows, accCols}, accType)};
  const size_t nIn = plan.inputs.size();
  const bool foldInit = !isIdentity(init, kind);

  return finishKernel(g, plan, [=, &axes](const std::vector<dsl::Ref>& refs) {
    const dsl::Ref& out = refs[nIn];
    const dsl::Ref& acc = refs[nIn + 1];
    dsl::Scalar first = 1, last = 1;
    for (const auto& [axis, extent] : reducedGrid) {
      if (extent == 1) continue;
      first = first && (dsl::program_id(axis) == 0);
      last = last && (dsl::program_id(axis) == extent - 1);
    }
    dsl::Array x = r->emit(input, inEmb, refs);
    if (x.dtype() != accType) x = x.astype(accType);
    x = toMaxDomain(x);
    // An input that does not vary along an axis (a broadcast) still counts
    // once per element of the block.
    x = expandTo(x, axes[n - 2].block, axes[n - 1].block);
    auto reduceAxis = [&](const dsl::Array& v, int axis) {
      return kind == ReduceKind::Sum ? dsl::sum(v, axis) : dsl::max(v, axis);
    };
    auto combine = [&](const dsl::Array& p, const dsl::Array& q) {
      return kind == ReduceKind::Sum ? p + q : dsl::maximum(p, q);
    };
    dsl::Array partial = x;
    if (colsReduced) partial = reduceAxis(partial, 1);
    if (rowsReduced) partial = reduceAxis(partial, 0);
    double idv = kind == ReduceKind::Sum ? 0.0 : -INFINITY;
    if (accType == dsl::S32 && kind != ReduceKind::Sum) idv = std::numeric_limits<int32_t>::min();
    dsl::when(first, [&] { acc.store(dsl::full(accRows, accCols, idv, accType)); });
    acc.store(combine(acc.load(), partial));
    dsl::when(last, [&] {
      dsl::Array v = acc.load();
      if (foldInit) {
        dsl::Array i = r->emit(init, {}, refs);
        if (i.dtype() != accType) i = i.astype(accType);
        v = combine(v, toMaxDomain(i));
      }
      v = fromMaxDomain(v);
      if (v.dtype() != outType) v = v.astype(outType);
      r->store(out, v);
    });
  });
}

}  // namespace tpusim::lower::detail
