// Which instructions the fusion pass may put into a fusion, and in which role
// (XLA's fusion kinds):
//   kLoop   element-wise ops over the output's index space, with broadcasts,
//           iotas and the views that only add or drop unit dimensions;
//   kInput  a reduce as the root, with the element-wise producers of its input;
//   kOutput a dot or convolution (the "hero") with element-wise consumers
//           (bias-add, activation, convert) and cheap producers of its operands.
// What fuses is what fusion lowering (compiler/lower/fusion/FusionLowering.h) can
// compute in the tiled view of a kernel, where a block is rows x lanes of the
// output: data movement that moves elements between (8,128) tiles (transpose,
// slice, concatenate, pad, reverse, dynamic-slice, copy, a reshape that splits
// or merges non-unit dims) stays its own instruction, lowered as a DMA program
// (on dense row-major arrays a reshape is free there). The exception is a
// transpose that presents a dot's RHS as [batch, free, contracting]: the MXU
// loads such weights transposed, so it fuses into the dot.
// Never fused: parameters, control flow (while, conditional, call), custom-calls,
// collectives and their async forms, sort, gather/scatter, rng, infeed/outfeed,
// send/recv, tuples: each stays its own instruction (its own kernel or runtime
// step), and fusions never cross it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/lower/TargetDescription.h"

namespace tpusim::passes {

enum class FusionKind { Loop, Input, Output };
const char* fusionKindName(FusionKind k);  // "kLoop", "kInput", "kOutput"

// Dots and convolutions (kOutput heroes).
bool isMatmulHero(const hlo::HloInstruction& inst);
// Array-shaped single-output reduce (kInput hero).
bool isReduceHero(const hlo::HloInstruction& inst);
// Element-wise, broadcast (dims in order), iota, a unit-dim view, or a lane
// slice / concatenate (loop fusions only): what may sit in a fusion.
bool isLoopFusible(const hlo::HloInstruction& inst);
// A reshape / bitcast / transpose that only adds, drops or moves unit dims
// (the non-unit dims keep their sizes and order): free in the tiled view.
bool isUnitDimView(const hlo::HloInstruction& inst);
// A transpose whose every user is a dot reading it as the RHS, and whose
// operand is [batch, free, contracting] for those dots (MXU transposed weights).
bool isDotRhsTranspose(const hlo::HloInstruction& inst);
// A transpose that moves only major dims: the minor-most non-unit dim stays
// minor-most, so rows stay contiguous in memory. A dot kernel reads its
// operand in place through a strided DMA (XLA's transpose folding); it fuses
// only into a dot's operand, with its own operand left a fusion parameter.
bool isMajorDimsTranspose(const hlo::HloInstruction& inst);
// A slice of only the last dim (stride 1) of an array whose last dim fits one
// lane tile (<= 128), or a concatenate along the last dim into such an array
// (RoPE's rotate-half: halves of the head dim swapped and recombined). Inside
// a loop fusion they are lane rotations (XLU) and lane selects: data stays in
// its (8,128) tile. They fuse only into loop fusions, and only where every
// value between them and the root is element-wise (the lanes stay the root's).
bool isLaneSlice(const hlo::HloInstruction& inst);
bool isLaneConcatenate(const hlo::HloInstruction& inst);
bool isLaneShuffle(const hlo::HloInstruction& inst);
// A reshape of a dot's result that splits its last dim into [n / 128, 128]
// (a projection's N into heads of one lane tile each: [.., H * 128] ->
// [.., H, 128]). It fuses only together with its dot, into a fusion of
// element-wise work and lane shuffles on the 128-lane heads (RoPE applied to
// q and k as the projection's epilogue): the dot kernel runs the epilogue one
// 128-lane column tile of its output block at a time, so each head's lanes
// are one tile and a rotate-half is one lane rotation.
bool isDotLaneSplit(const hlo::HloInstruction& inst);
// Converts, broadcasts, iotas, scalar constants, unit-dim views and RHS
// transposes: what always fuses into a dot's operands (it is redone for every
// output block that reads it, so it must cost next to nothing; other
// producers are priced by the fusion pass).
bool isOperandPrologueOp(const hlo::HloInstruction& inst);
// May `inst` be fused into a consumer at all (loop-fusible, a scalar constant, or a hero)?
bool isFusibleProducer(const hlo::HloInstruction& inst);
// May `inst` be the consumer a fusion starts from?
bool isFusibleConsumer(const hlo::HloInstruction& inst);
// Why an instruction never fuses ("control flow", "custom-call", ...), or "" when
// it is not one of the barriers worth reporting (parameters, tuples, ...).
std::string neverFusesReason(const hlo::HloInstruction& inst);

// Relative cost of computing one element of `inst` on the VPU: 0 for views and
// broadcasts (free to duplicate), 1 for an add, 2 for an XLU transpose, the
// chip's transcendental interval for exp/log/divide/rsqrt/...; dots, convolutions
// and reductions are never duplicated (a very large weight).
int64_t recomputeWeight(const hlo::HloInstruction& inst, const lower::TargetDescription& target);
constexpr int64_t kNeverDuplicate = 1 << 20;

// The kind of a fused computation: kOutput if it holds a dot/convolution,
// kInput if its root is a reduce, kLoop otherwise.
FusionKind classifyFusion(const hlo::HloComputation& body);
// The dot, convolution or reduce of a fused computation (nullptr for kLoop).
const hlo::HloInstruction* fusionHero(const hlo::HloComputation& body);

// Computations that run as a sequence of kernels: the entry and what control
// flow calls, transitively (not reducers, comparators or existing fusions).
std::vector<hlo::HloComputation*> fusionTargets(const hlo::HloModule& module);

}  // namespace tpusim::passes
