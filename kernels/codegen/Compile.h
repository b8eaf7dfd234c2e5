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
#pragma once

#include <string>

#include "isa/Program.h"
#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

struct CompileStats {
  int64_t bundles = 0;
  int64_t instructions = 0;
  int vectorRegs = 0, scalarRegs = 0, maskRegs = 0;
  int64_t vmemRows = 0, smemWords = 0;
  int flags = 0;
  int64_t stepBundles = 0;  // bundles of one grid step without branches taken (rough)
};

struct CompiledKernel {
  isa::Program program;
  CompileStats stats;
  std::string machineText;  // the scheduled machine code, one bundle per line (--dump)
};

// Throws CodegenError (unsupported construct, out of registers / VMEM / SMEM /
// flags) with the DSL source location when there is one.
CompiledKernel compileKernel(const llo::Kernel& kernel, const TargetInfo& target);

}  // namespace tpusim::kernels::codegen
