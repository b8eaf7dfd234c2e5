// The state of one module's lowering, shared by the instruction walk
// (ModuleLowering.cpp) and the control flow (ControlFlow.cpp): the linked
// program so far, the module's own control code, and where every value is.
//
// A value is a list of leaf addresses (the arrays of its shape, depth-first;
// -1 for a leaf without bytes, such as a token). Entry values come from the
// entry's buffer assignment; a called computation's temporaries live in the
// Scratch buffer its caller got for it (assignCalledComputationBuffers gives
// offsets inside it), its parameters are the caller's values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/buffers/BufferAssignment.h"
#include "compiler/lower/collectives/CollectiveLowering.h"
#include "compiler/lower/control/ControlCode.h"
#include "compiler/lower/fusion/FusionLowering.h"
#include "compiler/lower/module/KernelCache.h"
#include "compiler/lower/module/ModuleLowering.h"
#include "kernels/codegen/Link.h"

namespace tpusim::lower {

using Leaves = std::vector<int64_t>;

// The array leaves of a shape, depth-first: (tuple index, shape).
std::vector<std::pair<std::vector<int64_t>, hlo::Shape>> shapeLeaves(const hlo::Shape& shape);

// An instruction the module walk lowers to one kernel.
bool isKernelInstruction(const hlo::HloInstruction& inst);
// The position of the kernel instruction that runs right after order[i], when
// every instruction between emits no code; else order.size(). With
// `fragments`, DMA fragments a prefetch may cross (not a scatter) are skipped
// too and appended to it in order.
size_t nextKernelAfter(const std::vector<hlo::HloInstruction*>& order, size_t i,
                       std::vector<const hlo::HloInstruction*>* fragments = nullptr);

// What a kernel may prefetch for: the kernels that run after it (nextKernelAfter),
// the leaves of the instructions lowered so far (empty when not yet), and the
// result leaves the buffer assignment gives any instruction.
struct KernelNeighbours {
  static constexpr size_t kMaxAhead = 5;            // the next kernel and up to 4 after it
  std::vector<const hlo::HloInstruction*> kernels;  // in the order they run
  // The DMA fragments that run just before kernels[j] (after kernels[j-1], or
  // after this kernel for j = 0): a prefetch crosses them, a deferred
  // write-back does not.
  std::vector<std::vector<const hlo::HloInstruction*>> fragmentsBefore;
  std::function<Leaves(const hlo::HloInstruction*)> valueOf, resultOf;
};

class ModuleLowerer {
 public:
  ModuleLowerer(const hlo::HloModule& module, const TargetDescription& target,
                const kernels::codegen::TargetInfo& codegenTarget, LoweredModule& out,
                const LowerOptions& options = {});

  // Lowers the entry computation and finishes the program (buffer table, halt).
  void lowerEntry();

  // Lowers `comp` with its parameters at `params` and its temporaries in the
  // region starting at `regionBase` (its assignment's offsets are added).
  // Returns the root's leaves. `depth` guards against runaway recursion.
  Leaves lowerComputation(const hlo::HloComputation& comp, const std::vector<Leaves>& params,
                          uint64_t regionBase, int depth);

  ControlCode& control() { return control_; }
  // Copies every leaf of `from` into `to` (same shape), skipping leaves already
  // in place. Leaves of `to` that `from` also reads at another position
  // (a swap of loop-carried values) go through a temporary first.
  void copyLeaves(const Leaves& from, const Leaves& to, const hlo::Shape& shape,
                  const std::string& what);
  // Dense bytes of each leaf of `shape`.
  static std::vector<uint64_t> leafBytes(const hlo::Shape& shape);
  // HBM bytes past the entry heap, for values that must outlive a region.
  uint64_t allocateExtra(uint64_t bytes);
  // Records a lowered op for the stats.
  void recordOp(const std::string& instruction, const std::string& kind, uint32_t first,
                const std::string& tiling = "");

 private:
  struct Region {
    const BufferAssignment* assignment;
    uint64_t base;
  };
  Leaves resultLeaves(const hlo::HloInstruction& inst, const Region& region) const;
  uint64_t scratchOf(const hlo::HloInstruction& inst, const Region& region) const;
  Leaves lowerConstant(const hlo::HloInstruction& inst, const Region& region, bool entry);
  // Returns the kernel's tiling decision (LoweredKernel::tiling).
  std::string lowerKernel(const hlo::HloInstruction& inst, const std::vector<Leaves>& operands,
                          const Leaves& result, const KernelNeighbours& after);
  // Cross-kernel prefetch (CrossKernelPrefetch.cpp): whose first blocks the
  // kernel `inst` (options `o`, result `result`) starts: the next kernel's, or
  // a later one's when the kernels before it are short and read less of what
  // may be prefetched (`skipped`: the short ones, which keep the region free).
  struct PrefetchChoice {
    const hlo::HloInstruction* target = nullptr;
    std::vector<const hlo::HloInstruction*> skipped;  // the short kernels before it
    kernels::codegen::PrefetchPlan plan;
  };
  PrefetchChoice choosePrefetch(const hlo::HloInstruction& inst, const LoweredKernel& lk,
                                const kernels::codegen::CompileOptions& o, const Leaves& result,
                                const KernelNeighbours& after);
  // The plan for `next`'s first blocks, issued by a kernel writing `written`.
  kernels::codegen::PrefetchPlan planNextKernel(
      const hlo::HloInstruction& next, const std::vector<kernels::codegen::HbmRange>& written,
      bool fromTop, const std::function<Leaves(const hlo::HloInstruction*)>& valueOf);
  // The kernel IR of `inst`: the one planNextKernel lowered, or lowered now.
  LoweredKernel takeLoweredKernel(const hlo::HloInstruction& inst);
  void lowerDataMovementOp(const hlo::HloInstruction& inst, const std::vector<Leaves>& operands,
                           const Leaves& result);
  void renameAppended(const hlo::HloInstruction& inst, size_t debugBefore, size_t costBefore);
  // `params`: the entry parameters' buffers (for outputs donated to them).
  void finishEntry(const Leaves& root, const hlo::Shape& rootShape,
                   const std::vector<Leaves>& params);

  const hlo::HloModule& module_;
  const TargetDescription& target_;
  const kernels::codegen::TargetInfo& cg_;
  LoweredModule& out_;
  kernels::codegen::Module m_;
  const hlo::HloInstruction* lowering_ =
      nullptr;  // the innermost instruction being lowered, for errors
  ControlCode control_;
  SpmdLowering spmd_;
  BufferAssignment entry_;
  std::vector<std::unique_ptr<BufferAssignment>> nested_;  // kept alive for regions
  std::vector<isa::BufferDesc> table_;
  uint64_t extraTop_ = 0;
  bool useKernelCache_;
  KernelCache kernelCache_;
  // Cross-kernel prefetch: on; the plan the last kernel issued for `prefetchFor_`
  // (the kernel lowered next); the next kernel's IR lowered ahead.
  bool prefetch_;
  const hlo::HloInstruction* prefetchFor_ = nullptr;
  std::vector<const hlo::HloInstruction*> prefetchSkip_;  // run before prefetchFor_
  kernels::codegen::PrefetchPlan prefetchPlan_;
  std::string prefetchFrom_;
  std::string lastPrefetchNote_;  // for recordOp: the kernel just lowered
  std::map<const hlo::HloInstruction*, LoweredKernel> prepared_;
  // Packed int8 weights (PackedLayouts.cpp): on; the entry parameters stored
  // in the packed s8x2 layout, with their pair rows.
  bool packedWeights_;
  std::map<const hlo::HloInstruction*, int64_t> packedParams_;
  void choosePackedLayouts();
  // Deferred write-back: on; the write-backs the last kernel left in flight
  // for `drainFor_` (the kernel lowered next) and the HBM ranges they write.
  bool deferWriteBack_;
  const hlo::HloInstruction* drainFor_ = nullptr;
  kernels::codegen::DrainPlan drainPlan_;
  std::vector<kernels::codegen::HbmRange> drainRanges_;
  std::string drainFrom_;
  std::string lastDrainNote_;                 // for recordOp: the kernel just lowered
  std::vector<std::string> lastKernelNotes_;  // for recordOp: its library kernel's notes
};

}  // namespace tpusim::lower
