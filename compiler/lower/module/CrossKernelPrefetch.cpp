// Cross-kernel prefetch in the module walk: which kernel runs right after a
// kernel, and the plan for its first blocks (kernels/codegen/Prefetch.h says
// how the two kernels carry it out).
#include <fmt/format.h>

#include <algorithm>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/dma/DataMovement.h"
#include "compiler/lower/module/Costs.h"
#include "compiler/lower/module/ModuleLowerer.h"
#include "kernels/tiling/Tiling.h"

namespace tpusim::lower {

namespace codegen = kernels::codegen;
using hlo::HloInstruction;
using hlo::HloOpcode;

// An instruction the module walk lowers to one kernel (ModuleLowering.cpp's
// branch order: everything checked before the compute branch is excluded).
bool isKernelInstruction(const HloInstruction& inst) {
  HloOpcode opc = inst.opcode();
  return !isSpmdPrimitive(inst) && !aliasesOperandBuffer(inst) && opc != HloOpcode::While &&
         opc != HloOpcode::Conditional && opc != HloOpcode::Call && !inst.shape().isToken() &&
         isComputeInstruction(inst) && !(isDataMovement(inst) && opc != HloOpcode::Broadcast);
}

// A DMA fragment a prefetch may cross (ModuleLowering.cpp's branch order: the
// data movement that is not a kernel): it keeps the region in flight free
// (DmaFragment.h). Not a scatter, whose table may take all of VMEM.
bool isCrossableFragment(const HloInstruction& inst) {
  HloOpcode opc = inst.opcode();
  return !isSpmdPrimitive(inst) && !aliasesOperandBuffer(inst) && opc != HloOpcode::While &&
         opc != HloOpcode::Conditional && opc != HloOpcode::Call && !inst.shape().isToken() &&
         isDataMovement(inst) && opc != HloOpcode::Broadcast && opc != HloOpcode::Scatter;
}

size_t nextKernelAfter(const std::vector<HloInstruction*>& order, size_t i,
                       std::vector<const HloInstruction*>* fragments) {
  for (size_t j = i + 1; j < order.size(); ++j) {
    const HloInstruction& n = *order[j];
    HloOpcode opc = n.opcode();
    // What emits no code (constants: HBM data segments only).
    if (opc == HloOpcode::Parameter || opc == HloOpcode::Constant || opc == HloOpcode::Tuple ||
        opc == HloOpcode::GetTupleElement)
      continue;
    if (aliasesOperandBuffer(n)) {
      if (isSpmdPrimitive(n)) return order.size();  // an async permute's waits
      continue;
    }
    if (opc == HloOpcode::AfterAll || n.shape().isToken()) continue;
    if (fragments && isCrossableFragment(n)) {
      fragments->push_back(&n);
      continue;
    }
    return isKernelInstruction(n) ? j : order.size();
  }
  return order.size();
}

namespace {

int64_t arrayBytes(const kernels::llo::ArrayOperand& a) {
  return kernels::llo::refBytes(
      kernels::llo::Type::ref(kernels::llo::MemSpace::Hbm, a.dtype, a.shape));
}

// The HBM ranges a kernel writes: its outputs at `addresses`.
void addWritten(const kernels::llo::Kernel& k, const std::vector<int64_t>& addresses,
                std::vector<codegen::HbmRange>* written) {
  for (size_t j = 0; j < k.outputs.size() && j < addresses.size(); ++j)
    if (addresses[j] >= 0)
      written->push_back({addresses[j], addresses[j] + arrayBytes(k.outputs[j])});
}

// The position of the leaf at `path` among shapeLeaves(shape), or -1.
int64_t leafAt(const hlo::Shape& shape, const std::vector<int64_t>& path) {
  auto leaves = shapeLeaves(shape);
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].first == path) return int64_t(i);
  return -1;
}

}  // namespace

LoweredKernel ModuleLowerer::takeLoweredKernel(const HloInstruction& inst) {
  auto it = prepared_.find(&inst);
  if (it == prepared_.end()) return lowerToKernel(inst, cg_);
  LoweredKernel lk = std::move(it->second);
  prepared_.erase(it);
  return lk;
}

codegen::PrefetchPlan ModuleLowerer::planNextKernel(
    const HloInstruction& next, const std::vector<codegen::HbmRange>& written, bool fromTop,
    const std::function<Leaves(const HloInstruction*)>& valueOf) {
  // Its first blocks can load under the kernels before it when every operand
  // is in HBM already and none of them writes it: a small kernel then keeps
  // fewer steps (TilingTarget::firstBlocksPrefetched). Lowered for the latest
  // context that plans it: a kernel chosen as a target is planned no more
  // before it runs (the kernels between choose nothing).
  bool prefetchable = true;
  for (const HloInstruction* o : next.operands()) {
    while (aliasesOperandBuffer(*o)) o = o->operand(0);  // a view: its operand's bytes
    Leaves l = valueOf(o);
    const int64_t at = l.size() == 1 ? l[0] : -1, end = at + int64_t(denseBytes(o->shape()));
    prefetchable = prefetchable && at >= 0 &&
                   std::none_of(written.begin(), written.end(), [&](const codegen::HbmRange& w) {
                     return at < w.end && w.begin < end;
                   });
  }
  auto it = prepared_.find(&next);
  if (it == prepared_.end() || it->second.firstBlocksPrefetched != prefetchable) {
    try {
      LoweredKernel lowered = lowerToKernel(next, cg_, prefetchable);
      lowered.firstBlocksPrefetched = prefetchable;
      if (it == prepared_.end()) {
        it = prepared_.emplace(&next, std::move(lowered)).first;
      } else {
        // The same inputs in other blocks: keep what the module walk set on
        // them (packed weights' pair rows, PackedLayouts.cpp).
        auto& was = it->second.kernel->inputs;
        auto& now = lowered.kernel->inputs;
        if (was.size() == now.size()) {
          for (size_t i = 0; i < now.size(); ++i) now[i].pairRows = was[i].pairRows;
          it->second = std::move(lowered);
        }
      }
    } catch (const CannotLower&) {
      return {};  // reported when its turn comes
    }
  }
  const LoweredKernel& lk = it->second;
  // Input addresses of the operands lowered so far (-1 for views not yet
  // named: never prefetched).
  std::vector<int64_t> addresses;
  for (int64_t op : lk.inputOperand) {
    int64_t at = -1;
    if (op >= 0 && op < next.operandCount()) {
      Leaves l = valueOf(next.operand(op));
      if (l.size() == 1) at = l[0];
    }
    addresses.push_back(at);
  }
  // At most half of VMEM: the kernel running meanwhile needs the rest.
  return codegen::planPrefetch(*lk.kernel, cg_, addresses, written, fromTop, cg_.vmemRows() / 2);
}

ModuleLowerer::PrefetchChoice ModuleLowerer::choosePrefetch(const HloInstruction& inst,
                                                            const LoweredKernel& lk,
                                                            const codegen::CompileOptions& o,
                                                            const Leaves& result,
                                                            const KernelNeighbours& after) {
  PrefetchChoice choice;
  if (after.kernels.empty()) return choice;
  std::vector<codegen::HbmRange> written;
  addWritten(*lk.kernel, o.outputAddresses, &written);
  // The next kernel's region goes to the other end from this kernel's own.
  const bool fromTop = o.prefetched.empty() || !o.prefetched.fromTop;
  // This kernel's own result is known too: the rule on `written` keeps it out.
  auto known = [&](const HloInstruction* i) { return i == &inst ? result : after.valueOf(i); };
  // DMA fragments before a kernel: what they write is never prefetched, and
  // they keep the region's flags free beside their own (one per DMA queue).
  auto addFragments = [&](size_t j, int64_t* bytes) {
    for (const HloInstruction* f : after.fragmentsBefore.at(j)) {
      // An update in place (its result in its operand's buffer) moves only
      // its slab: a decode step's KV-cache row, not the 16 MiB cache.
      const Leaves res = after.resultOf(f);
      const bool inPlace = f->opcode() == hlo::HloOpcode::DynamicUpdateSlice && res.size() == 1 &&
                           res == after.valueOf(f->operand(0));
      for (int64_t at : res)
        if (at >= 0) {
          const int64_t n = int64_t(denseBytes(f->shape()));
          written.push_back({at, at + n});
          const int64_t moved = inPlace ? int64_t(denseBytes(f->operand(1)->shape())) : n;
          if (bytes) *bytes += 2 * moved;  // read and written once
        }
    }
  };
  auto fragmentsUpTo = [&](size_t j) {
    for (size_t i = 0; i <= j; ++i)
      if (!after.fragmentsBefore.at(i).empty()) return true;
    return false;
  };
  auto flagsFit = [&](const codegen::PrefetchPlan& plan, size_t j) {
    return !fragmentsUpTo(j) || plan.flags + cg_.dmaQueues <= cg_.syncFlags;
  };
  // A 16-bit transpose before kernels[j] that takes taller strips (longer HBM
  // runs) with more than half of VMEM keeps that VMEM: no region beside it.
  // The weight gradients' x^T (v6e): 16384-row strips, 105 MiB, ~30k cycles
  // less per transpose than the 8192-row strips beside a 52-64 MiB region,
  // which saved the next dot 5-44k (docs/performance.md, "trainxt3").
  auto vmemFits = [&](const codegen::PrefetchPlan& plan, size_t j) {
    int64_t want = 0;
    for (size_t i = 0; i <= j; ++i)
      for (const HloInstruction* f : after.fragmentsBefore.at(i))
        if (f->opcode() == hlo::HloOpcode::Transpose && f->operandCount() == 1)
          want = std::max(want,
                          tallTransposeVmemWish(cg_, f->operand(0)->shape().dims, f->dimensions(),
                                                hlo::bitWidth(f->shape().type) / 8));
    return plan.empty() || want == 0 || plan.rows * isa::kVmemRowBytes + want <= cg_.vmemBytes;
  };
  // The kernels and fragments that run before kernels[j], in order.
  auto runBefore = [&](size_t j) {
    std::vector<const HloInstruction*> run;
    for (size_t i = 0; i <= j; ++i) {
      run.insert(run.end(), after.fragmentsBefore.at(i).begin(), after.fragmentsBefore.at(i).end());
      if (i < j) run.push_back(after.kernels[i]);
    }
    return run;
  };
  addFragments(0, nullptr);
  choice.target = after.kernels[0];
  choice.plan = planNextKernel(*choice.target, written, fromTop, known);
  // What the chosen target loads ahead, read before the fit checks: a next
  // kernel whose plan does not fit still loads its first blocks itself.
  int64_t targetLoads = choice.plan.hbmBytes;
  if (!flagsFit(choice.plan, 0) || !vmemFits(choice.plan, 0)) choice.plan = {};
  choice.skipped = runBefore(0);
  // Further ahead, across short kernels (a norm's reduction, rsqrt and scale
  // before a projection): their own first blocks are few, and while they run
  // the later kernel's load. Short: all their arrays together under a
  // third of the later kernel's first blocks (an RMSNorm's reduce and rsqrt
  // over a [256, 1024] bf16 activation, 515 KiB, before a 2 MiB weight block:
  // a quarter left the block to load during the norm only). What they write is never
  // prefetched (their results are not lowered yet: unknown to `known`).
  int64_t betweenBytes = 0;
  for (size_t j = 1; j < after.kernels.size(); ++j) {
    const HloInstruction* b = after.kernels[j - 1];
    auto it = prepared_.find(b);
    if (it == prepared_.end()) break;
    const kernels::llo::Kernel& between = *it->second.kernel;
    for (const auto& a : between.inputs) betweenBytes += arrayBytes(a);
    for (const auto& a : between.outputs) betweenBytes += arrayBytes(a);
    Leaves res = after.resultOf(b);
    std::vector<int64_t> out;
    for (const std::vector<int64_t>& path : it->second.outputIndex) {
      int64_t at = leafAt(b->shape(), path);
      out.push_back(at >= 0 && size_t(at) < res.size() ? res[size_t(at)] : -1);
    }
    if (std::find(out.begin(), out.end(), -1) != out.end()) break;  // unknown: stop here
    addWritten(between, out, &written);
    addFragments(j, &betweenBytes);
    codegen::PrefetchPlan far = planNextKernel(*after.kernels[j], written, fromTop, known);
    if (!flagsFit(far, j) || !vmemFits(far, j)) continue;
    // Or, when the next kernel has next to nothing to load ahead (its inputs
    // are this kernel's results: the decode attention's softmax after the
    // scores), under the whole blocks: HBM would otherwise idle under the
    // short kernels' latency (the 7B decode's p x V, 2 MiB of V started by
    // the score dot across the max and the exp / sum kernels, 0.8 MB).
    // Blocks that load within a grid step's overhead are not worth it: the
    // kernels between start nothing of their own meanwhile (the micro decode's
    // 512 B RoPE operand across a 64-lane kernel: +75 cycles there).
    const double stepBytes = double(kernels::tiling::kStepOverheadCycles) * cg_.hbmBytesPerCycle;
    const bool nextLoadsNothing = double(targetLoads) < stepBytes;
    const bool worthAStep = double(far.hbmBytes) > stepBytes;
    const bool nearIdle = nextLoadsNothing && worthAStep;
    if (betweenBytes * (nearIdle ? 1 : 3) >= far.hbmBytes) continue;
    // They must fit beside the region (a widened, double-buffered block is up
    // to 8 bytes of VMEM per byte of HBM): a kernel between cannot fall back.
    if (betweenBytes * 8 + far.rows * isa::kVmemRowBytes > cg_.vmemBytes) continue;
    if (far.hbmBytes > choice.plan.hbmBytes) {
      choice.target = after.kernels[j];
      choice.skipped = runBefore(j);
      targetLoads = far.hbmBytes;
      choice.plan = std::move(far);
    }
  }
  return choice;
}

}  // namespace tpusim::lower
