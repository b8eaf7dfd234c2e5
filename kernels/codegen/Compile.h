// The code generator's entry point: a traced kernel (llo::Kernel) and a
// target preset in, an isa::Program out (bundles, SMEM data with the DMA
// descriptor templates, the buffer table, a symbol, debug map and cost table).
//
// What it emits: a prologue that loads scalar-prefetch and SMEM operands and
// starts the first input blocks; one loop over the grid (lexicographic order)
// that waits for the current input blocks, starts the next ones into the other
// buffer when their block index changes (double buffering), runs the body, and
// writes an output block back when its index is about to change; an epilogue
// that waits for the last write-backs and halts.
//
// CompileOptions place a kernel inside a larger program (the HLO compiler
// links one kernel per fusion, see Link.h): HBM addresses from the caller's
// buffer assignment, code at an absolute bundle index, SMEM data from a given
// word, and a non-standalone epilogue that waits for every DMA it started but
// neither halts nor adds buffer-table entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "kernels/codegen/Drain.h"
#include "kernels/codegen/Prefetch.h"
#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

struct CompileStats {
  int64_t bundles = 0;
  int64_t instructions = 0;
  int vectorRegs = 0, scalarRegs = 0, maskRegs = 0;
  int64_t vmemRows = 0, smemWords = 0;
  int flags = 0;
  int64_t stepBundles = 0;    // bundles of one grid step without branches taken (rough)
  int spills = 0;             // registers spilled to VMEM / SMEM
  int spillInstructions = 0;  // loads and stores the spills inserted
  // Blocks whose shortest schedule the registers could not hold: the next
  // one was taken (scheduleBlockVariants), counted once per retry.
  int scheduleFallbacks = 0;
};

struct CompileOptions {
  // HBM byte address of every input (kernel.inputs order, scalar-prefetch
  // operands included) and output. Empty: the kernel places its arrays itself
  // from address 0 (each 512-byte aligned). Otherwise one address per array;
  // arrays may not overlap except an aliased input/output pair.
  std::vector<int64_t> inputAddresses, outputAddresses;
  // Index of the kernel's first bundle in the final program: branch targets,
  // the symbol and the debug map are absolute (valid once the code is placed
  // there; the kernel's program alone is runnable only when this is 0).
  uint32_t firstBundle = 0;
  // First SMEM word the kernel may use for its data segments (DMA descriptor
  // templates) and SMEM scratch; CompiledKernel::smemWords reports how many.
  int64_t smemBase = 0;
  // true: a program of its own (halt, buffer table). false: a piece to link;
  // the epilogue still waits for every DMA the kernel started, so the next
  // kernel may read its outputs and reuse its VMEM and sync flags.
  bool standalone = true;
  // Stored in the kernel's debug-map entry (the HLO instruction it implements).
  std::string hloInstruction;
  // Cross-kernel prefetch (Prefetch.h), linked kernels only. `prefetched`:
  // this kernel's first blocks that the kernel before it started (its VMEM
  // rows and flags are allocated from the top when prefetched.fromTop).
  // `prefetchNext`: the next kernel's, started by this kernel at the start of
  // its last grid step; its region is kept free here. `inFlight`: the first
  // blocks of the kernel after the next, started by the kernel before this
  // one (which is short): only their region is kept free here.
  PrefetchPlan prefetched, prefetchNext, inFlight;
  // Deferred write-back (Drain.h), linked kernels only. `deferWriteBack`:
  // leave the last write-back of each double-buffered output in flight at
  // the end (CompiledKernel::pendingWriteBacks); the caller must pass them to
  // the kernel run next as its `drainBefore`, which waits for them.
  bool deferWriteBack = false;
  DrainPlan drainBefore;
  // Print the scheduled code into CompiledKernel::machineText (tools and
  // tests read it; the module lowering does not, and skips the printing).
  bool printMachineCode = true;
};

struct CompiledKernel {
  isa::Program program;
  CompileStats stats;
  std::string machineText;  // the scheduled machine code, one bundle per line (--dump)
  // Where it was placed (copied from the options) and the SMEM words it uses:
  // [smemBase, smemBase + smemWords).
  uint32_t firstBundle = 0;
  int64_t smemBase = 0, smemWords = 0;
  bool standalone = true;
  // With CompileOptions::deferWriteBack: the write-backs still in flight
  // when the kernel ends (the next kernel's CompileOptions::drainBefore).
  std::vector<PendingWriteBack> pendingWriteBacks;
  // With CompileOptions::drainBefore: where it waits for them.
  DrainAt drainedAt = DrainAt::None;
};

// Throws CodegenError (unsupported construct, out of registers / VMEM / SMEM /
// flags, bad options) with the DSL source location when there is one.
CompiledKernel compileKernel(const llo::Kernel& kernel, const TargetInfo& target,
                             const CompileOptions& options = {});

}  // namespace tpusim::kernels::codegen
