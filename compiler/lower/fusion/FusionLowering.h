// Lowering of one compute instruction to one kernel of the kernel IR
// (kernels::llo::Kernel), built with the kernels DSL (pallas_call), which the
// code generator (kernels/codegen) compiles and interpret mode runs.
//
// What is lowered (isComputeInstruction):
//   - fusions made by the `fusion` pass: kLoop (element-wise over the output),
//     kInput (a reduce root and its element-wise producers), kOutput (a dot
//     and its operand prologues and element-wise epilogue);
//   - unfused compute ops: element-wise, convert, compare/select, broadcast,
//     iota, reduce, dot;
//   - custom-calls whose target names a library kernel (kernels/lib Registry).
// Data movement at top level (transpose, reshape, slice, concatenate, pad,
// dynamic-(update-)slice, gather, copy) is not a compute instruction: the
// module compiler lowers it to DMA programs.
//
// Conventions (agreed with the module compiler):
//   - every HBM array is dense row-major in its logical shape; an operand,
//     result or fused parameter with a non-default layout (minor_to_major not
//     {n-1,...,0}) is CannotLower;
//   - kernel arrays are *views* of those HBM bytes: the kernel may present an
//     operand with another shape of the same element count and order (unit
//     dims inserted or dims merged), e.g. a rank-1 f32[n] as [1, n] and a
//     scalar as [1, 1]; only the bytes matter to the caller;
//   - pred arrays are one byte per element (0 / 1) and appear in the kernel as
//     s8; bf16 is 2 bytes, s8 1, f32 / s32 4;
//   - f32 dots run on the MXU with bf16 inputs and f32 accumulation (like XLA's
//     DEFAULT precision on TPU), s8 x s8 accumulates in s32.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/lower/CannotLower.h"
#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::lower {

struct LoweredKernel {
  // Named after the HLO instruction (kernel->name == inst.name()). kernel->loc
  // is the instruction's metadata source_file / source_line (empty / 0 when
  // absent), which codegen copies into the kernel's debug-map entry; the
  // op_name is the instruction's metadata (inst.attrs().metadata.opName).
  std::unique_ptr<kernels::llo::Kernel> kernel;
  // Kernel input i reads HLO operand inputOperand[i] (an operand may appear
  // more than once, presented with different shapes).
  std::vector<int64_t> inputOperand;
  // Kernel output j is the element of the instruction's result at this tuple
  // index path ({} for a non-tuple result).
  std::vector<std::vector<int64_t>> outputIndex;
  // The tiling decision in one line (block shapes and what chose them), for
  // `tpuc --print-stats`; empty for library kernels.
  std::string tiling;
  // What the library kernel's builder chose against what was asked (e.g. a
  // fast path it could not take, and why), one line each; tpuc and tpusim
  // print them as notes. Empty for generated kernels.
  std::vector<std::string> notes;
  // Lowered for a context whose kernel before loads its first blocks
  // (lowerToKernel's firstBlocksPrefetched).
  bool firstBlocksPrefetched = false;
};

// A fusion, an element-wise / convert / compare / select / broadcast / iota /
// reduce / dot instruction, or a custom-call to a library kernel.
bool isComputeInstruction(const hlo::HloInstruction& inst);

// Throws CannotLower for anything it cannot compile (op, dtype, layout, shape).
// `firstBlocksPrefetched`: the kernel before it loads this kernel's first
// blocks (cross-kernel prefetch; TilingTarget::firstBlocksPrefetched).
LoweredKernel lowerToKernel(const hlo::HloInstruction& inst,
                            const kernels::codegen::TargetInfo& target,
                            bool firstBlocksPrefetched = false);

}  // namespace tpusim::lower
