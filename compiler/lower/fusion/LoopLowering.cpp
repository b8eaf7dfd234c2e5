// kLoop fusions and unfused element-wise / broadcast / iota ops: one kernel
// over the output's axes; every grid step computes one (rows x lanes) block of
// the output from the matching blocks of the leaves (FusionLoweringInternal.h).
#include <fmt/format.h>

#include "compiler/lower/fusion/FusionLoweringInternal.h"

namespace tpusim::lower::detail {

namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int hbmBytes(dsl::DType t) { return isa::dtypeBytes(t); }
}  // namespace

LoweredKernel lowerLoop(const ComputeGraph& g, const TilingTarget& t) {
  const HloInstruction* root = g.root;
  const Embedding rootEmb = identity(root->shape().rank());
  auto r = std::make_shared<Region>(g, root->shape().dims);
  r->analyze(root, rootEmb);
  r->formAxes();
  r->splitLanes();
  auto& axes = r->axes();
  const size_t n = axes.size();
  dsl::DType outType = dslType(g, *root, root->shape().type);

  std::vector<BlockUse> uses;
  for (const LeafUse& u : r->leafUses())
    uses.push_back(
        r->blockUse(u.emb, hbmBytes(memoryType(dslType(g, *u.leaf, u.leaf->shape().type)))));
  uses.push_back(r->blockUse(rootEmb, hbmBytes(memoryType(outType))));
  LoopBlock b = chooseLoopBlock(axes[n - 2].size, axes[n - 1].size, false, false, uses, t);
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
    uses.back().lead = r->maps(rootEmb, leadAxis);
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
  plan.config.out_shapes = {dsl::ShapeDtype(r->arrayShape(rootEmb), memoryType(outType), "out")};
  plan.config.out_specs = {r->blockSpec(rootEmb)};
  const size_t nIn = plan.inputs.size();
  return finishKernel(
      g, plan, [r, root, rootEmb, nIn, leadAxis, leadBlock](const std::vector<dsl::Ref>& refs) {
        if (leadBlock == 1) {
          r->store(refs[nIn], r->emit(root, rootEmb, refs));
          return;
        }
        dsl::fori_loop(0, leadBlock, [&](dsl::Scalar i) {
          r->setLeadLoop(leadAxis, i);
          r->store(refs[nIn], r->emit(root, rootEmb, refs));
        });
      });
}

}  // namespace tpusim::lower::detail
