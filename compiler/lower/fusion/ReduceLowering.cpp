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
#include <set>

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

namespace {

// One reduce of a (possibly multi-output) kInput kernel: its kind, init and
// the max-domain mapping of its values.
struct ReduceOut {
  const HloInstruction* red = nullptr;
  const HloInstruction* input = nullptr;
  const HloInstruction* init = nullptr;
  ReduceKind kind = ReduceKind::Sum;
  dsl::DType outType = dsl::F32, accType = dsl::F32;
  bool biasUnsigned = false, foldInit = false;
  // Max and min run as a max: of -x (floats) or ~x (integers, whose negation
  // wraps at INT_MIN) for min; u32 values biased into signed order.
  dsl::Array toMaxDomain(dsl::Array x) const {
    if (biasUnsigned) x = math::biased(x);
    if (kind == ReduceKind::Min) x = accType == dsl::F32 ? -x : x ^ dsl::full(1, 1, -1, dsl::S32);
    return x;
  }
  dsl::Array fromMaxDomain(dsl::Array v) const {
    if (kind == ReduceKind::Min) v = accType == dsl::F32 ? -v : v ^ dsl::full(1, 1, -1, dsl::S32);
    if (biasUnsigned) v = math::biased(v);
    return v;
  }
};

ReduceOut describeReduce(const ComputeGraph& g, const HloInstruction* red) {
  if (red->operandCount() != 2 || !red->shape().isArray())
    g.fail(*red, "a variadic reduce is not supported");
  ReduceOut o;
  o.red = red;
  o.kind = reduceKindOf(g, *red);
  o.input = red->operand(0);
  o.init = red->operand(1);
  o.outType = dslType(g, *red, red->shape().type);
  if (o.outType == dsl::BOOL) g.fail(*red, "a reduce of pred is not supported");
  o.accType = o.outType == dsl::F32 || o.outType == dsl::BF16 || o.outType == dsl::F16 ? dsl::F32
                                                                                       : dsl::S32;
  o.biasUnsigned =
      o.kind != ReduceKind::Sum && red->operand(0)->shape().type == hlo::PrimitiveType::U32;
  o.foldInit = !isIdentity(o.init, o.kind);
  return o;
}

// Does a kernel with element-wise outputs and reduces walk its block once
// (store_together with sums)? When every reduce is an f32 sum over both axes
// (to a scalar, or per plane) and the expression has at most one compare (a
// one-hot select: the 8 mask registers are not spilled, so kernels with more
// keep a walk per output, as loop kernels do).
bool oneWalk(const ComputeGraph& g, const std::vector<ReduceOut>& reds, bool bothReduced) {
  bool elementwise = false, reduces = false;
  for (const ReduceOut& ro : reds) {
    if (!ro.red) {
      elementwise = true;
      continue;
    }
    reduces = true;
    if (ro.kind != ReduceKind::Sum || ro.accType != dsl::F32) return false;
  }
  if (!elementwise || !reduces || !bothReduced) return false;
  int compares = 0;
  std::vector<const HloInstruction*> stack{g.root};
  std::set<const HloInstruction*> seen;
  while (!stack.empty()) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second || g.isLeaf(i)) continue;
    HloOpcode op = i->opcode();
    if (op == HloOpcode::Compare) {
      ++compares;
    } else if (op == HloOpcode::Select ||
               (!hlo::isFloatingType(i->shape().type) && op != HloOpcode::Broadcast &&
                op != HloOpcode::Iota && op != HloOpcode::Constant && op != HloOpcode::Tuple &&
                i->shape().isArray())) {
      return false;  // integer arithmetic may lower to compares (64-bit pairs' carries)
    }
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  return compares <= 1;
}

}  // namespace

dsl::Array emitRowReduce(Region& r, const HloInstruction* reduce,
                         const std::vector<dsl::Ref>& refs) {
  const ComputeGraph& g = r.graph();
  const ReduceOut ro = describeReduce(g, reduce);
  const int64_t rank = ro.input->shape().rank();
  dsl::Array x = r.emit(ro.input, identity(rank), refs);
  if (x.dtype() != dsl::F32) x = x.astype(dsl::F32);
  x = ro.toMaxDomain(x);
  const auto& axes = r.axes();
  x = expandTo(x, axes[axes.size() - 2].block, axes.back().block);
  // As a reduce kernel with the row in one block: its accumulator starts at
  // the identity and takes the block's lane reduction, then the init.
  const bool sum = ro.kind == ReduceKind::Sum;
  dsl::Array v = dsl::full(1, 1, sum ? 0.0 : -INFINITY, dsl::F32);
  v = sum ? v + dsl::sum(x, 1) : dsl::maximum(v, dsl::max(x, 1));
  if (ro.foldInit) {
    dsl::Array i = r.emit(ro.init, {}, refs);
    if (i.dtype() != dsl::F32) i = i.astype(dsl::F32);
    i = ro.toMaxDomain(i);
    v = sum ? v + i : dsl::maximum(v, i);
  }
  return ro.fromMaxDomain(v);
}

// A multi-output kInput fusion (root tuple) holds reduces over one input shape
// and dimensions (sibling reductions, layer norm's sum and sum of squares) and
// possibly element-wise outputs of that input shape: one walk of the input
// space feeds every accumulator and stores the element-wise outputs per block.
LoweredKernel lowerReduce(const ComputeGraph& g, const TilingTarget& t) {
  std::vector<const HloInstruction*> roots;
  if (g.root->opcode() == HloOpcode::Tuple && g.root != g.inst) {
    for (const HloInstruction* e : g.root->operands()) roots.push_back(e);
  } else {
    roots.push_back(g.root);
  }
  std::vector<ReduceOut> reds;  // per root: red == nullptr for an element-wise output
  const HloInstruction* hero = nullptr;
  for (const HloInstruction* e : roots) {
    if (e->opcode() == HloOpcode::Reduce && !g.isLeaf(e)) {
      reds.push_back(describeReduce(g, e));
      if (!hero) hero = e;
    } else {
      reds.push_back(ReduceOut{});
    }
  }
  if (!hero) g.fail(*g.root, "internal: not a reduce");
  const HloInstruction* input = hero->operand(0);
  const std::vector<int64_t>& inDims = input->shape().dims;
  for (size_t k = 0; k < roots.size(); ++k) {
    const HloInstruction* e = roots[k];
    if (reds[k].red) {
      if (e->operand(0)->shape().dims != inDims || e->dimensions() != hero->dimensions())
        g.fail(*e, fmt::format("the reduces of a multi-output fusion must reduce one shape over "
                               "the same dimensions (%{} and %{})",
                               hero->name(), e->name()));
    } else if (e->shape().dims != inDims) {
      g.fail(*e, fmt::format("an element-wise output of a multi-output reduce fusion must have the "
                             "reduce input's shape ({}, not {})",
                             input->shape().toString(false), e->shape().toString(false)));
    }
  }

  const int64_t rank = input->shape().rank();
  const Embedding inEmb = identity(rank);
  std::vector<bool> reducedDim(static_cast<size_t>(rank), false);
  for (int64_t d : hero->dimensions()) {
    if (d < 0 || d >= rank) g.fail(*hero, "reduce dimension out of range");
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
  for (size_t k = 0; k < roots.size(); ++k) {
    if (reds[k].red) {
      r->analyze(reds[k].input, inEmb);
      r->analyze(reds[k].init, {});
    } else {
      r->analyze(roots[k], inEmb);
    }
  }
  r->constrain(kept);
  r->formAxes();
  r->checkRowReduces();
  auto& axes = r->axes();
  const size_t n = axes.size();
  auto axisReduced = [&](size_t a) {
    return !axes[a].dims.empty() && reducedDim[static_cast<size_t>(axes[a].dims[0])];
  };

  auto blockUses = [&] {
    std::vector<BlockUse> uses;
    for (const LeafUse& u : r->leafUses())
      uses.push_back(
          r->blockUse(u.emb, hbmBytes(memoryType(dslType(g, *u.leaf, u.leaf->shape().type)))));
    for (size_t k = 0; k < roots.size(); ++k) {
      if (reds[k].red) {
        uses.push_back(r->blockUse(outEmb, hbmBytes(reds[k].outType)));
        uses.push_back(r->blockUse(outEmb, 4, 1));  // the accumulator
      } else {
        uses.push_back(r->blockUse(
            inEmb, hbmBytes(memoryType(dslType(g, *roots[k], roots[k]->shape().type)))));
      }
    }
    if (r->hasRowReduces()) uses.push_back(r->blockUse(identity(rank - 1), 4, 1));  // row sums
    return uses;
  };
  int64_t planes = 1;
  for (size_t a = 0; a + 2 < n; ++a) planes *= axes[a].size;
  LoopBlock b = chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, axisReduced(n - 2),
                                axisReduced(n - 1), blockUses(), t, planes);
  // A reduction of one row that takes several steps (1x1024 blocks of a
  // [1, 4096] activation; 11008 = 2^8 x 43 even 43 steps of 1x256, two vregs
  // each) splits its lanes into rows of 128 as a loop kernel's do: eight
  // sublanes a vreg instead of one, fewer steps, both axes reduced. A row
  // one step covers stays whole (the split would only add the sublane
  // rotate tree: +38 cycles for a [1, 1024] RMSNorm sum on v5e).
  if (planes == 1 && axisReduced(n - 1) && b.cols < axes[n - 1].size && r->splitLanes())
    b = chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, true, true, blockUses(), t, planes);
  const bool rowsReduced = axisReduced(n - 2), colsReduced = axisReduced(n - 1);
  // A row reduced inside a kernel that reduces the same lanes (a row-reduce
  // pair: the max, then the sum of exp(x - max)) takes whole rows per block;
  // both reductions walk the lane block the kernel would have taken (`chunk`)
  // one after another inside it, as the separate kernels' grid steps did, so
  // their sums keep their order and bits.
  const int64_t chunk = b.cols;
  const bool chunked = r->hasRowReduces() && colsReduced && !rowsReduced &&
                       b.cols < axes[n - 1].size && axes[n - 1].size % chunk == 0;
  if (chunked)
    b = chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, false, true, blockUses(), t, planes,
                        true);
  const bool walk = oneWalk(g, reds, rowsReduced && colsReduced);
  // A one-walk kernel (its stores and its sums to a scalar) over rows wider
  // than its lane block: whole rows per block at the same rows, the lane
  // block walked window by window inside (`walkCols`), each window's sums
  // into accumulators of their own and combined in the grid steps' order, so
  // the bits stay; each block row is one HBM run (the loss gradient's DMA).
  int64_t walkCols = b.cols;
  if (walk && !chunked && !r->hasRowReduces()) {
    walkCols = b.cols;
    b = wholeRowsBlock(b, axes[n - 2].size, axes[n - 1].size, blockUses(), t);
  }
  const int64_t walkWindows = cdiv(b.cols, walkCols);
  r->rowReducesWholeCols(b.cols);
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
  const int64_t accRows = r->maps(outEmb, static_cast<int>(n) - 2) ? axes[n - 2].block : 1;
  const int64_t accCols = r->maps(outEmb, static_cast<int>(n) - 1) ? axes[n - 1].block : 1;
  std::vector<int> accIndex(roots.size(), -1), walkIndex(roots.size(), -1);
  for (size_t k = 0; k < roots.size(); ++k) {
    std::string name = roots.size() == 1 ? "out" : fmt::format("out.{}", k);
    if (reds[k].red) {
      plan.config.out_shapes.push_back(
          dsl::ShapeDtype(r->arrayShape(outEmb), reds[k].outType, name));
      plan.config.out_specs.push_back(r->blockSpec(outEmb));
      accIndex[k] = static_cast<int>(plan.config.scratch.size());
      plan.config.scratch.push_back(dsl::VMEM({accRows, accCols}, reds[k].accType));
      if (walk) {
        walkIndex[k] = static_cast<int>(plan.config.scratch.size());
        for (int64_t w = 0; w < walkWindows; ++w)  // walkIndex[k] + w: window w's
          plan.config.scratch.push_back(dsl::VMEM({8, walkCols}, dsl::F32));
      }
    } else {
      dsl::DType ot = memoryType(dslType(g, *roots[k], roots[k]->shape().type));
      plan.config.out_shapes.push_back(dsl::ShapeDtype(r->arrayShape(inEmb), ot, name));
      plan.config.out_specs.push_back(r->blockSpec(inEmb));
    }
  }
  const size_t nIn = plan.inputs.size(), nOut = roots.size();

  return finishKernel(g, plan, [=, &axes](const std::vector<dsl::Ref>& refs) {
    dsl::Scalar first = 1, last = 1;
    for (const auto& [axis, extent] : reducedGrid) {
      if (extent == 1) continue;
      first = first && (dsl::program_id(axis) == 0);
      last = last && (dsl::program_id(axis) == extent - 1);
    }
    // Each reduce of the lanes, chunk by chunk: the partial of every chunk.
    auto chunkPartials = [&](const ReduceOut& ro) {
      std::vector<dsl::Array> parts;
      for (int64_t c = 0; c < axes[n - 1].block; c += chunk) {
        r->setColWindow(c, chunk);
        dsl::Array x = r->emit(ro.input, inEmb, refs);
        if (x.dtype() != ro.accType) x = x.astype(ro.accType);
        x = expandTo(ro.toMaxDomain(x), axes[n - 2].block, chunk);
        parts.push_back(ro.kind == ReduceKind::Sum ? dsl::sum(x, 1) : dsl::max(x, 1));
      }
      r->setColWindow(-1, 0);
      return parts;
    };
    if (chunked) {
      // The rows reduced inside, first (read by the other reductions' chunks).
      for (const HloInstruction* inner : r->rowReduces()) {
        const ReduceOut ro = describeReduce(g, inner);
        const bool sum = ro.kind == ReduceKind::Sum;
        dsl::Array v = dsl::full(1, 1, sum ? 0.0 : -INFINITY, dsl::F32);
        for (const dsl::Array& p : chunkPartials(ro)) v = sum ? v + p : dsl::maximum(v, p);
        if (ro.foldInit) {
          dsl::Array i = r->emit(ro.init, {}, refs);
          if (i.dtype() != dsl::F32) i = i.astype(dsl::F32);
          i = ro.toMaxDomain(i);
          v = sum ? v + i : dsl::maximum(v, i);
        }
        r->setRowReduceValue(inner, ro.fromMaxDomain(v));
      }
    }
    // The walk's accumulators of window w (the whole block: w = 0).
    auto walkAcc = [&](size_t k, int64_t w) -> const dsl::Ref& {
      return refs[nIn + nOut + static_cast<size_t>(walkIndex[k] + w)];
    };
    if (walk) {
      // Every output in one walk of the block (window by window): the sums
      // go to one accumulator tile per column tile, folded to the step's
      // partial sums below.
      r->keepSharedInRegisters();
      for (int64_t w = 0; w < walkWindows; ++w) {
        if (walkWindows > 1) r->setColWindow(w * walkCols, walkCols);
        std::vector<dsl::Ref> outs, accs;
        std::vector<dsl::Array> values, sums;
        for (size_t k = 0; k < nOut; ++k) {
          if (!reds[k].red) {
            outs.push_back(refs[nIn + k]);
            values.push_back(expandTo(r->emit(roots[k], inEmb, refs), axes[n - 2].block, walkCols));
            continue;
          }
          const dsl::Ref& a = walkAcc(k, w);
          a.store(dsl::full(8, walkCols, 0.0, dsl::F32));
          accs.push_back(a);
          dsl::Array x = r->emit(reds[k].input, inEmb, refs);
          if (x.dtype() != dsl::F32) x = x.astype(dsl::F32);
          sums.push_back(expandTo(x, axes[n - 2].block, walkCols));
        }
        r->storeTogether(outs, values, accs, sums);
      }
      if (walkWindows > 1) r->setColWindow(-1, 0);
    }
    for (size_t k = 0; k < nOut; ++k) {
      const ReduceOut& ro = reds[k];
      const dsl::Ref& out = refs[nIn + k];
      if (walk && !ro.red) continue;
      if (!ro.red) {
        r->store(out,
                 expandTo(r->emit(roots[k], inEmb, refs), axes[n - 2].block, axes[n - 1].block));
        continue;
      }
      // A row reduced inside that is an output too: its value, once.
      const auto& inner = r->rowReduces();
      if (std::find(inner.begin(), inner.end(), ro.red) != inner.end()) {
        dsl::Array v = r->emit(ro.red, outEmb, refs);
        if (v.dtype() != ro.outType) v = v.astype(ro.outType);
        r->store(out, v);
        continue;
      }
      const dsl::Ref& acc = refs[nIn + nOut + static_cast<size_t>(accIndex[k])];
      const ReduceKind kind = ro.kind;
      const dsl::DType accType = ro.accType;
      auto reduceAxis = [&](const dsl::Array& v, int axis) {
        return kind == ReduceKind::Sum ? dsl::sum(v, axis) : dsl::max(v, axis);
      };
      auto combine = [&](const dsl::Array& p, const dsl::Array& q) {
        return kind == ReduceKind::Sum ? p + q : dsl::maximum(p, q);
      };
      dsl::Array x;
      std::vector<dsl::Array> parts;
      if (chunked) {
        parts = chunkPartials(ro);
      } else if (walk) {
        // The walk's column sums, rows folded below (each window's: the
        // partials of the grid steps over lane blocks, in their order).
        for (int64_t w = 0; w < walkWindows; ++w)
          parts.push_back(reduceAxis(reduceAxis(walkAcc(k, w).load(), 0), 1));
      } else {
        x = r->emit(ro.input, inEmb, refs);
        if (x.dtype() != accType) x = x.astype(accType);
        x = ro.toMaxDomain(x);
        // An input that does not vary along an axis (a broadcast) still counts
        // once per element of the block.
        x = expandTo(x, axes[n - 2].block, axes[n - 1].block);
      }
      // Both axes reduced (a sum to a scalar): the rows first, as element-wise adds
      // of row tiles into one accumulator tile per column tile, then one lane tree.
      // Lanes first ended every row tile in a serial fold of its column tiles and
      // an XLU reduction (the loss's one-hot sum at half its HBM roof).
      if (!chunked && !walk) {
        dsl::Array partial = x;
        if (rowsReduced) partial = reduceAxis(partial, 0);
        if (colsReduced) partial = reduceAxis(partial, 1);
        parts.push_back(partial);
      }
      double idv = kind == ReduceKind::Sum ? 0.0 : -INFINITY;
      if (accType == dsl::S32 && kind != ReduceKind::Sum) idv = std::numeric_limits<int32_t>::min();
      dsl::when(first, [&] { acc.store(dsl::full(accRows, accCols, idv, accType)); });
      for (const dsl::Array& partial : parts) acc.store(combine(acc.load(), partial));
      dsl::when(last, [&] {
        dsl::Array v = acc.load();
        if (ro.foldInit) {
          dsl::Array i = r->emit(ro.init, {}, refs);
          if (i.dtype() != accType) i = i.astype(accType);
          v = combine(v, ro.toMaxDomain(i));
        }
        v = ro.fromMaxDomain(v);
        if (v.dtype() != ro.outType) v = v.astype(ro.outType);
        r->store(out, v);
      });
    }
  });
}

}  // namespace tpusim::lower::detail
