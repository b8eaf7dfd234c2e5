// kLoop fusions and unfused element-wise / broadcast / iota ops: one kernel
// over the output's axes; every grid step computes one (rows x lanes) block of
// the output from the matching blocks of the leaves (FusionLoweringInternal.h).
// A multi-output loop fusion (root tuple, every element of one shape) computes
// all its outputs in the same grid step, from one load of each leaf block.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int hbmBytes(dsl::DType t) { return isa::dtypeBytes(t); }
// The widest lane axis a loop kernel keeps whole (the tiler's largest block width).
constexpr int64_t kWideColLanes = 1024;
}  // namespace

LoweredKernel lowerLoop(const ComputeGraph& g, const TilingTarget& t) {
  std::vector<const HloInstruction*> roots;
  if (g.root->opcode() == hlo::HloOpcode::Tuple && g.root != g.inst) {
    for (const HloInstruction* e : g.root->operands()) roots.push_back(e);
  } else {
    roots.push_back(g.root);
  }
  const HloInstruction* first = roots.front();
  for (const HloInstruction* e : roots)
    if (e->shape().dims != first->shape().dims)
      g.fail(*e, fmt::format("the outputs of a multi-output loop fusion must have one shape ({} "
                             "and {})",
                             first->shape().toString(false), e->shape().toString(false)));
  const Embedding rootEmb = identity(first->shape().rank());
  auto r = std::make_shared<Region>(g, first->shape().dims);
  r->allowLaneShuffles();
  for (const HloInstruction* e : roots) r->analyze(e, rootEmb);
  r->formAxes();
  r->checkRowReduces();
  if (!r->splitWideCols(kWideColLanes)) r->splitLanes();
  auto& axes = r->axes();
  const size_t n = axes.size();
  std::vector<dsl::DType> outTypes;
  for (const HloInstruction* e : roots) outTypes.push_back(dslType(g, *e, e->shape().type));

  std::vector<BlockUse> uses;
  for (const LeafUse& u : r->leafUses())
    uses.push_back(
        r->blockUse(u.emb, hbmBytes(memoryType(dslType(g, *u.leaf, u.leaf->shape().type)))));
  for (dsl::DType ot : outTypes) uses.push_back(r->blockUse(rootEmb, hbmBytes(memoryType(ot))));
  if (r->hasRowReduces())  // the row sums' temporary
    uses.push_back(r->blockUse(identity(first->shape().rank() - 1), 4, 1));
  int64_t planes = 1;
  for (size_t a = 0; a + 2 < n; ++a) planes *= axes[a].size;
  LoopBlock b = chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, false, false, uses, t, planes);
  r->rowReducesWholeCols(b.cols);
  if (r->shuffled() && b.cols != axes[n - 1].size)
    g.fail(*g.root, "internal: a lane-shuffling kernel's block must hold its whole lane tile");
  axes[n - 2].block = b.rows;
  axes[n - 1].block = b.cols;
  // A whole plane per step that is still small: several planes of the
  // innermost leading axis per step, walked by a loop in the kernel.
  int leadAxis = -1;
  int64_t leadBlock = 1;
  if (n >= 3 && b.rows == axes[n - 2].size && b.cols == axes[n - 1].size) {
    leadAxis = static_cast<int>(n) - 3;
    size_t k = 0;
    for (const LeafUse& u : r->leafUses()) uses[k++].lead = r->maps(u.emb, leadAxis);
    for (; k < uses.size(); ++k) uses[k].lead = r->maps(rootEmb, leadAxis);
    leadBlock = chooseLeadBlock(axes[n - 3].size, b, uses, t);
    axes[n - 3].block = leadBlock;
  }

  KernelPlan plan;
  plan.target = &t;
  plan.tiling = b.why;
  for (size_t a = 0; a < n; ++a) {
    axes[a].grid = static_cast<int>(a);
    plan.config.grid.push_back(cdiv(axes[a].size, axes[a].block));
    plan.config.compiler_params.dimension_semantics.push_back(dsl::PARALLEL);
  }
  addLeafInputs(*r, plan);
  for (size_t k = 0; k < roots.size(); ++k) {
    std::string name = roots.size() == 1 ? "out" : fmt::format("out.{}", k);
    plan.config.out_shapes.push_back(
        dsl::ShapeDtype(r->arrayShape(rootEmb), memoryType(outTypes[k]), name));
    plan.config.out_specs.push_back(r->blockSpec(rootEmb));
  }
  const size_t nIn = plan.inputs.size();
  // Kernels with compares keep a loop per output and their shared values in
  // VMEM: held in registers, their masks would be live together, and the 8
  // mask registers are not spilled (the int64 pair division's quotient and
  // remainder, the rng's 64-bit adds).
  bool compares = false;
  std::vector<const HloInstruction*> stack(roots.begin(), roots.end());
  std::set<const HloInstruction*> seen;
  while (!stack.empty() && !compares) {
    const HloInstruction* i = stack.back();
    stack.pop_back();
    if (!seen.insert(i).second || g.isLeaf(i)) continue;
    // Integer ops may lower to compares too (64-bit pairs' carries).
    compares = i->opcode() == hlo::HloOpcode::Compare || i->opcode() == hlo::HloOpcode::Select ||
               !hlo::isFloatingType(i->shape().type);
    for (const HloInstruction* o : i->operands()) stack.push_back(o);
  }
  const bool together = !compares;
  // Planes of a few tiles each are unrolled in the lead loop, about 8 tiles
  // per trip, so their load / compute / store chains overlap (as the row
  // tiles of one big plane do).
  const int64_t planeTiles = cdiv(b.rows, 8) * cdiv(b.cols, 128);
  int64_t unroll = std::max<int64_t>(1, std::min<int64_t>(leadBlock, 8 / planeTiles));
  while (leadBlock % unroll) --unroll;
  return finishKernel(g, plan,
                      [r, roots, rootEmb, nIn, leadAxis, leadBlock, unroll,
                       together](const std::vector<dsl::Ref>& refs) {
                        // Every output in one tile loop: what they share (the sigmoid of a
                        // SwiGLU backward) is computed once per tile, never stored in VMEM.
                        if (together) r->keepSharedInRegisters();
                        auto storeAll = [&] {
                          if (!together) {
                            for (size_t k = 0; k < roots.size(); ++k)
                              r->store(refs[nIn + k], r->emit(roots[k], rootEmb, refs));
                            return;
                          }
                          std::vector<dsl::Ref> outs;
                          std::vector<dsl::Array> values;
                          for (size_t k = 0; k < roots.size(); ++k) {
                            outs.push_back(refs[nIn + k]);
                            values.push_back(r->emit(roots[k], rootEmb, refs));
                          }
                          r->storeTogether(outs, values);
                        };
                        if (leadBlock == 1) {
                          storeAll();
                          return;
                        }
                        dsl::fori_loop(0, leadBlock / unroll, [&](dsl::Scalar i) {
                          for (int64_t k = 0; k < unroll; ++k) {
                            r->setLeadLoop(leadAxis, i * dsl::Scalar(unroll) + dsl::Scalar(k));
                            storeAll();
                          }
                        });
                      });
}

}  // namespace tpusim::lower::detail
