// A whole HLO module becomes one program (.tpuprog): what `tpuc` runs.
//
//   1. the pass pipeline (compiler/driver/ModuleLoweringPipeline.h, run by
//      driver::compileModule before lowerModule) cleans the module up and cuts
//      it into fusions;
//   2. HBM buffer assignment (compiler/lower/buffers/BufferAssignment.h) places
//      every parameter, constant, live intermediate and output of the entry
//      computation;
//   3. the entry schedule is walked in order:
//      - parameters and outputs become buffer-table entries (Names.h);
//      - constants become HBM data segments (Constants.h);
//      - tuple, get-tuple-element, and bitcasts/reshapes that keep every byte in
//        place cost nothing (they name their operand's bytes);
//      - compute instructions and fusions become kernels
//        (compiler/lower/fusion/FusionLowering.h), compiled by kernels/codegen at
//        the assigned HBM addresses;
//      - data movement becomes DMA fragments (compiler/lower/dma/DataMovement.h);
//      - while and conditional run on the scalar unit (ControlFlow.h, with the
//        module's own code from compiler/lower/control/ControlCode.h), their
//        computations lowered recursively in the instruction's scratch region;
//      - a call that survived inlining is lowered in place the same way;
//      everything is appended with kernels/codegen/Link.h, then `halt`;
//   4. a kernel followed directly by another kernel starts that kernel's
//      first input blocks in its last grid step (CrossKernelPrefetch.cpp).
//
// HBM convention: every array is dense row-major in its logical shape (what
// .npy files and the simulator's buffer table hold); layouts written in the
// HLO text are not physical here, so a reshape is free and a bitcast that would
// move elements (non-default minor_to_major) is an error naming it.
//
// Anything that cannot be compiled is lower::CannotLower
// (compiler/lower/CannotLower.h) naming the instruction, its opcode and its
// metadata; other failures (target, HBM overflow, code generator limits) are
// ModuleLoweringError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/lower/buffers/BufferAssignment.h"
#include "isa/Program.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

class ModuleLoweringError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One lowered HLO instruction, in program order (what --print-stats lists).
struct LoweredOp {
  std::string instruction;  // HLO instruction name
  std::string kind;         // "kernel", "dma", "control", "copy"
  uint32_t firstBundle = 0, endBundle = 0;
  std::string tiling;  // kernels: the tiling decision (LoweredKernel::tiling)
  // Kernels: the first blocks the kernel before started (cross-kernel prefetch).
  std::string prefetched;
  // Kernels: where it waits for the kernel before's deferred write-backs.
  std::string drained;
  // Library kernels: their builder's notes (LoweredKernel::notes).
  std::vector<std::string> notes;
};

struct LoweredModule {
  isa::Program program;
  BufferAssignment buffers;         // of the entry computation, after the passes
  std::vector<std::string> passes;  // the passes that ran, in order (set by the driver)
  std::vector<LoweredOp> ops;       // every lowered instruction, nested ones included
  uint64_t hbmBytes = 0;            // HBM the program uses (heap + extra regions)
  int64_t smemWords = 0;            // SMEM words of all DMA descriptors and scalars
  // Kernels the code generator compiled, and kernels derived from the cache
  // (KernelCache.h) instead.
  int64_t kernelsCompiled = 0, kernelsDerived = 0;
  // Kernels whose first blocks the kernel before started, and their HBM bytes.
  int64_t kernelsPrefetched = 0, prefetchedBytes = 0;
  // Deferred write-back: kernels that left their last write-backs to the next
  // one, and how many of those waited at their end (not at their start).
  int64_t kernelsDeferred = 0, drainedAtEnd = 0;
  // Kernels whose register allocation took a block's next schedule
  // (codegen::CompileStats::scheduleFallbacks), and how many times in all.
  int64_t kernelsWithScheduleFallbacks = 0, scheduleFallbacks = 0;
  // A human-readable summary: passes, buffers, kernels, bundles, per-op table.
  std::string statsText() const;
};

struct LowerOptions {
  // Derive kernels that differ from an earlier one only in addresses and
  // placement from it instead of compiling them again (KernelCache.h): the
  // same program, in a fraction of the time on models with repeated layers.
  bool kernelCache = true;
  // Also compile every derived kernel and fail when the two differ.
  bool verifyKernelCache = false;
  // Store repeated kernels once, as shared bodies with per-instance patches
  // (codegen::Module::shareCode, isa/SharedCode.h): the same bundles at the
  // same places, in a program a layer count smaller. Off here, so a lowered
  // module's `program.code` is flat for the library's users and tests; the
  // driver (tpuc, tpusim IN.hlo) turns it on.
  bool shareCode = false;
  // Cross-kernel prefetch (kernels/codegen/Prefetch.h): a kernel starts the
  // first input blocks of the kernel right after it at the start of its last
  // grid step, for inputs it does not write, when VMEM has room for both.
  // tpuc --no-cross-kernel-prefetch turns it off.
  bool crossKernelPrefetch = true;
  // Deferred write-back (kernels/codegen/Drain.h): a kernel followed directly
  // by another does not wait for its last write-backs; the next kernel waits
  // for them at its start when it reads or writes those outputs, else at its
  // end. tpuc --no-deferred-write-back turns it off.
  bool deferWriteBack = true;
  // Packed int8 weights in HBM (PackedLayouts.cpp): an s8 entry parameter
  // that every kernel reading it reads only as paired MXU weights
  // (kernels/codegen/PairPack.h) is stored in the chip's packed s8x2 layout
  // (isa::BufferDesc::pairRows), so a paired block is one sequential HBM
  // stream. tpuc --no-packed-weights keeps every parameter row-major.
  bool packedWeights = true;
};

// Lowers `module`, which the passes have already prepared (fused, layouts
// dropped), for the chip; `passes` of the result stays empty. `target` and
// `codegenTarget` must describe the same preset (the compiler's and the code
// generator's views of it). Throws CannotLower or ModuleLoweringError.
LoweredModule lowerModule(const hlo::HloModule& module, const TargetDescription& target,
                          const kernels::codegen::TargetInfo& codegenTarget,
                          const LowerOptions& options = {});

}  // namespace tpusim::lower
