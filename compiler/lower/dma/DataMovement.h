// Lowering of top-level data-movement instructions (copy, transpose, reshape,
// bitcast, bitcast-convert of equal width, slice, concatenate, pad,
// broadcast, reverse, dynamic-slice, dynamic-update-slice, gather, scatter)
// into a
// short machine-code fragment that moves the bytes with DMA descriptors.
//
// Every HBM array is dense row-major in its logical shape; the buffer
// assignment gives each operand and the result an HBM byte address. Each op
// becomes a strided byte move (DmaMove.h) reduced to the longest contiguous
// runs; how it is moved:
//  - small static moves: descriptor templates in an SMEM data segment (up to
//    three strided dims each, several descriptors or a run-time loop beyond),
//    `dma` + `sync.wait`; element-sized runs are cut over all DMA queues;
//  - static moves of 256 KiB or more (copies, transposes keeping runs of at
//    least 32 bytes): staged through VMEM in big contiguous source blocks, so
//    both HBM streams are sequential (DmaStaged.cpp);
//  - transposes that move the innermost dim (the result's last two dims are
//    the operand's innermost and another dim, whole 128x128 tiles): VMEM and
//    the transpose unit in hand-scheduled tile loops (DmaXluTranspose.cpp);
//  - broadcasts along the innermost dims: each run written once, then doubled
//    in place; pad: a fill from an SMEM pattern, then the operand's elements;
//  - run-time offsets (dynamic-slice / dynamic-update-slice start indices,
//    gather indices) are DMA'd into SMEM (folded when they are constants),
//    loaded with `sld`, clamped as XLA clamps them (the window stays in
//    bounds), turned into addresses by scalar ops and stored into the
//    descriptor words (`sst`) before the `dma`; gather loops over the index
//    positions, one slice descriptor each;
//  - scatter (add or replace of whole slabs, the embedding gradient): the
//    table is accumulated in VMEM by a vector loop over the update slabs
//    (DmaScatter.cpp).
// Scheduling and register allocation are the kernel code generator's
// (kernels/codegen), so fragments are hazard-free like kernels.
//
// A fragment ends with every DMA it started complete (its sync flags back at
// zero) and has no halt: it is linked into a module program with
// kernels/codegen/Link.h like a compiled kernel (debug-map entry: op name =
// the HLO instruction, HLO field = its op_name metadata, source file/line; a
// cost entry with the HBM and VMEM bytes moved; a symbol). Descriptor words
// it rewrites are always rewritten before use, so a fragment may run any
// number of times (inside a while loop). It uses sync flags 0 .. queues-1,
// SMEM [smemBase, smemBase + smemWords) and VMEM from byte 0 (free between
// kernels). On a megacore chip a compiled module runs on core 0 only
// (ModuleLowering.cpp); a fragment still keeps every phase of a multi-phase
// move ending with a write of the final bytes, so it would stay right under
// any interleaving of two cores.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "kernels/codegen/Compile.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

// Where the fragment goes: the fields read are firstBundle (index of its first
// bundle in the module; branch targets are absolute) and smemBase (first SMEM
// word it may use; CompiledKernel::smemWords reports how many it did). The
// addresses are the explicit arguments of lowerDataMovement; `standalone` is
// ignored (a fragment never halts and adds no buffer-table entries).
using FragmentPlacement = kernels::codegen::CompileOptions;

// Whether `instr` is an opcode this lowering handles (it may still throw
// CannotLower for an unsupported case of it, e.g. a gather form it does not
// know): copy, transpose, reshape, bitcast, slice, concatenate, pad,
// broadcast, reverse, dynamic-slice, dynamic-update-slice, gather, scatter.
bool isDataMovement(const hlo::HloInstruction& instr);

// VMEM bytes a 16-bit transpose of `dims` by `perm` takes in tall strips
// (DmaMxuTransposeRuns.h) when all of VMEM is free and they are then taller
// than with half of it; else 0. The prefetch planner keeps such a
// transpose's VMEM free of a region in flight (CrossKernelPrefetch.cpp).
int64_t tallTransposeVmemWish(const kernels::codegen::TargetInfo& t,
                              const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                              int64_t elemBytes);

// The fragment for `instr`: operandAddresses[i] is the HBM byte address of
// operand i (scalar index operands included), resultAddress the result's.
// An operand at the result's own address is moved in place when that is
// correct (dynamic-update-slice into its operand's buffer copies only the
// update; a reshape/bitcast/copy onto itself emits no DMA). Operands that
// are `constant` instructions (index scalars, pad values) are read from their
// literal at compile time instead of from HBM.
// Throws CannotLower (compiler/lower/CannotLower.h) naming the instruction,
// its opcode and source line for a case it cannot move.
kernels::codegen::CompiledKernel lowerDataMovement(const hlo::HloInstruction& instr,
                                                   const std::vector<uint64_t>& operandAddresses,
                                                   uint64_t resultAddress,
                                                   const kernels::codegen::TargetInfo& target,
                                                   const FragmentPlacement& placement);

}  // namespace tpusim::lower
