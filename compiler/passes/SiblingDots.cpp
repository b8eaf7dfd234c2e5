// Sibling dots (SiblingDots.h): finding the groups and pricing them.
#include "compiler/passes/SiblingDots.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/lower/buffers/ShapeBytes.h"
#include "compiler/passes/FusionCostModel.h"
#include "compiler/passes/FusionRules.h"
#include "compiler/passes/PassUtil.h"
#include "kernels/tiling/Tiling.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// A combiner of more members is not what this rule is for (and each member
// is walked per step of the growth below).
constexpr size_t kMaxCombiner = 32;

std::vector<int64_t> nonUnitDims(const hlo::Shape& s) {
  std::vector<int64_t> d;
  for (int64_t x : s.dims)
    if (x != 1) d.push_back(x);
  return d;
}

bool sameDims(const hlo::DotDimensionNumbers& a, const hlo::DotDimensionNumbers& b) {
  return a.lhsBatch == b.lhsBatch && a.rhsBatch == b.rhsBatch &&
         a.lhsContracting == b.lhsContracting && a.rhsContracting == b.rhsContracting;
}

bool areSiblings(const HloInstruction& a, const HloInstruction& b) {
  return a.operand(0) == b.operand(0) && a.shape() == b.shape() &&
         a.operand(1)->shape() == b.operand(1)->shape() && sameDims(a.attrs().dot, b.attrs().dot);
}

// The combiner of dots a and b (members in program order, root last), or
// empty when their results do not meet in one element-wise result.
std::vector<HloInstruction*> growCombiner(
    HloInstruction* a, HloInstruction* b,
    const std::unordered_map<const HloInstruction*, size_t>& position) {
  std::vector<HloInstruction*> members;
  std::unordered_set<const HloInstruction*> in;
  const HloInstruction* compRoot = a->parent() ? a->parent()->root() : nullptr;
  auto escapes = [&](const HloInstruction* m) {
    if (m == compRoot) return true;
    for (const HloInstruction* u : m->users())
      if (!in.count(u)) return true;
    return false;
  };
  while (members.size() <= kMaxCombiner) {
    std::vector<HloInstruction*> out;
    for (HloInstruction* m : {a, b})
      if (escapes(m)) out.push_back(m);
    for (HloInstruction* m : members)
      if (escapes(m)) out.push_back(m);
    if (out.size() == 1 && out[0] != a && out[0] != b) break;
    if (out.empty()) return {};
    // The earliest escaping value takes its users in.
    HloInstruction* f = *std::min_element(
        out.begin(), out.end(), [&](auto* x, auto* y) { return position.at(x) < position.at(y); });
    if (f == compRoot) return {};
    for (HloInstruction* u : f->users()) {
      if (in.count(u)) continue;
      // Element-wise, or a view that adds or drops unit dims (dot-canonicalize
      // leaves [1, M, N] dots reshaped to [M, N]): one tile space.
      if (!(hlo::isElementwise(u->opcode()) || isUnitDimView(*u)) || !u->shape().isArray() ||
          nonUnitDims(u->shape()) != nonUnitDims(a->shape()))
        return {};
      in.insert(u);
      members.push_back(u);
    }
  }
  if (members.size() > kMaxCombiner) return {};
  std::sort(members.begin(), members.end(),
            [&](auto* x, auto* y) { return position.at(x) < position.at(y); });
  // The root is the one escaping member: the last in program order.
  for (HloInstruction* m : members) {
    if (m != members.back() && escapes(m)) return {};
    for (const HloInstruction* o : m->operands())
      if (o != a && o != b && !in.count(o) && (reaches(o, a) || reaches(o, b))) return {};
  }
  return members;
}

int elementBytes(const hlo::Shape& s) {
  return static_cast<int>(std::max<int64_t>(1, lower::elementBytes(s.type)));
}

}  // namespace

std::vector<SiblingDotGroup> findSiblingDotGroups(const hlo::HloComputation& comp,
                                                  const lower::TargetDescription& target,
                                                  std::vector<SiblingDotRefusal>* refusals) {
  std::vector<HloInstruction*> order = comp.postOrder();
  std::unordered_map<const HloInstruction*, size_t> position;
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  // Dots by their LHS value, in program order.
  std::map<size_t, std::vector<HloInstruction*>> byLhs;
  for (HloInstruction* i : order)
    if (i->opcode() == HloOpcode::Dot && i->operandCount() == 2 && i->shape().isArray())
      byLhs[position.at(i->operand(0))].push_back(i);

  const kernels::tiling::TilingTarget tt =
      kernels::tiling::TilingTarget::from(kernels::codegen::TargetInfo::fromChip(target.chip));
  std::vector<SiblingDotGroup> groups;
  std::unordered_set<const HloInstruction*> used;
  for (auto& [lhsPos, dots] : byLhs) {
    for (size_t x = 0; x < dots.size(); ++x)
      for (size_t y = x + 1; y < dots.size(); ++y) {
        HloInstruction* a = dots[x];
        HloInstruction* b = dots[y];
        if (used.count(a) || used.count(b) || !areSiblings(*a, *b)) continue;
        std::vector<HloInstruction*> combiner = growCombiner(a, b, position);
        if (combiner.empty()) continue;
        for (HloInstruction* m : combiner)
          if (used.count(m)) combiner.clear();
        if (combiner.empty()) continue;

        // The price of each way (tiling model cycles; the LHS prologue is
        // the same in both and left out).
        DotBlocks d = dotBlocks(*a, target);
        const int lhsBytes = elementBytes(a->operand(0)->shape());
        const int rhsBytes = elementBytes(a->operand(1)->shape());
        const int outBytes = elementBytes(a->shape());
        const int rootBytes = elementBytes(combiner.back()->shape());
        const bool accOut = outBytes == 4;  // an f32 / s32 result is the accumulator
        kernels::tiling::TilingTarget single = tt;
        single.dotEpilogue = !accOut;
        kernels::tiling::TilingTarget sibling = tt;
        sibling.dotEpilogue = true;
        sibling.dotRhsCount = 2;
        const kernels::tiling::DotBlocking oneBlk = kernels::tiling::chooseDotBlocks(
            d.batch, d.m, d.n, d.k, lhsBytes, rhsBytes, outBytes, single);
        const kernels::tiling::DotBlocking bothBlk = kernels::tiling::chooseDotBlocks(
            d.batch, d.m, d.n, d.k, lhsBytes, rhsBytes, rootBytes, sibling);
        const double oneDot = oneBlk.estimatedCycles, both = bothBlk.estimatedCycles;
        const double elements = static_cast<double>(a->shape().elementCount());
        const double read = elements / tt.hbmBytesPerCycle;  // cycles per byte of element
        SiblingDotGroup g;
        g.dots = {a, b};
        g.combiner = combiner;
        g.root = combiner.back();
        g.separateCycles = 2 * oneDot + 2 * read * outBytes;
        g.fusedCycles = both + read * rootBytes;
        std::string why;
        if (!(g.fusedCycles < g.separateCycles) || both <= 0)
          why = fmt::format("one kernel for both costs about {:.0f} cycles, two kernels {:.0f}",
                            g.fusedCycles, g.separateCycles);
        // Dots whose steps wait for their weights (a decode's M = 1): both
        // ways stream the same weights, and what the model adds per step (the
        // step overhead, the MXU fill and drain) hides under the copies in
        // flight. The pair then gains only the HBM bytes it does not move:
        // the second LHS read and the dots' results written and read back,
        // less the combined result. It loses its first step's weight bytes
        // beyond the first dot kernel's: the separate kernels load the second
        // dot's first block under the first one's copies, the pair exposes it
        // in front of the kernel before it (a short norm).
        kernels::tiling::DotStep st;
        kernels::tiling::dotBlockCost(d.batch, d.m, d.n, d.k, oneBlk.bm, oneBlk.bn, oneBlk.bk,
                                      lhsBytes, rhsBytes, outBytes, single, &st);
        if (why.empty() && st.dmaCycles > st.mxuCycles) {
          auto firstRhs = [&](const kernels::tiling::DotBlocking& blk) {
            return static_cast<double>(std::min(blk.bk, d.k)) *
                   static_cast<double>(std::min(blk.bn, d.n)) * rhsBytes;
          };
          const double lhsElements = static_cast<double>(a->operand(0)->shape().elementCount());
          const double saved = lhsElements * lhsBytes + 2 * elements * (2 * outBytes - rootBytes);
          const double exposed = 2 * firstRhs(bothBlk) - firstRhs(oneBlk);
          if (!(saved > exposed))
            why = fmt::format(
                "weight-bound dots: one kernel for both moves {:.0f} fewer HBM bytes and exposes "
                "{:.0f} more of its first weight blocks",
                saved, exposed);
        }
        // The pair's second RHS block and accumulator take VMEM a single dot's
        // blocks use. Where the pair fits only by splitting K finer than the
        // single dot, each extra K step loads, adds and stores both f32
        // accumulators through VMEM beside the MXU stream, which the model
        // prices low (the 7B layer prefill on v6e: K in 2 blocks of 2048
        // against one of 4096, the pair's kernel at 58% MXU busy, +2.5%).
        const int64_t kOne = (d.k + oneBlk.bk - 1) / oneBlk.bk;
        const int64_t kBoth = (d.k + bothBlk.bk - 1) / bothBlk.bk;
        if (why.empty() && kBoth > kOne)
          why = fmt::format(
              "one kernel for both fits VMEM only with {} K blocks, a dot kernel with {}", kBoth,
              kOne);
        if (!why.empty()) {
          if (refusals) refusals->push_back({{a->name(), b->name()}, why});
          continue;
        }
        used.insert(a);
        used.insert(b);
        for (HloInstruction* m : combiner) used.insert(m);
        groups.push_back(std::move(g));
      }
  }
  return groups;
}

}  // namespace tpusim::passes
