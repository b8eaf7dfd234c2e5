// HBM buffer assignment of a module's entry computation: every parameter,
// constant, live intermediate (the result of each top-level instruction or
// fusion, in a sequential schedule: the entry's post order) and output gets a
// buffer with an offset in one HBM heap. A buffer is live from the step that
// defines it to the last step that reads it (through tuples, get-tuple-element
// and bitcasts or reshapes that keep every byte in place, which alias their
// operands instead of allocating); parameters,
// constants and outputs live for the whole program. Freed ranges are reused by
// later buffers (best fit: the smallest free range that holds the buffer,
// adjacent free ranges merged), and the heap's high-water mark is the module's
// peak HBM footprint.
//
// Instructions that run other computations (while, conditional, call) also get
// a scratch buffer for the peak of their computations' own temporaries, live
// only during that step. Fusion internals live in VMEM and take no HBM.
//
// In-place updates (as XLA's buffer assignment shares a dynamic-update-slice's
// operand and result): a dynamic-update-slice writes into its operand's buffer
// when nothing reads that value later: a temporary whose last reader is the
// update, or an entry parameter the caller donated (the module's
// input_output_alias, InputOutputAlias.h) to the output the update becomes. A
// decode step's KV-cache update then writes one token's row, not the cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/lower/TargetDescription.h"

namespace tpusim::lower {

// Buffer offsets and sizes are multiples of this (one DMA request, one VMEM row).
constexpr int64_t kHbmAlignment = 512;

struct HbmBuffer {
  enum class Kind { Parameter, Constant, Temporary, Output, Scratch };
  int64_t id = 0;
  const hlo::HloInstruction* instruction = nullptr;  // the defining instruction
  std::vector<int64_t> tupleIndex;                   // the element of a tuple result ({} = all)
  hlo::Shape shape;                                  // invalid for Scratch
  int64_t bytes = 0;                                 // padded size, before alignment
  int64_t allocatedBytes = 0;                        // bytes rounded up to kHbmAlignment
  Kind kind = Kind::Temporary;
  int64_t defineStep = 0, lastUseStep = 0;  // inclusive schedule steps
  int64_t offset = 0;
  // An in-place update's result: it lives in buffer `sharesBufferOf` (same
  // offset, no bytes of its own); -1 otherwise.
  int64_t sharesBufferOf = -1;
};

const char* bufferKindName(HbmBuffer::Kind k);

struct BufferAssignment {
  std::string moduleName, chipName;
  int64_t hbmCapacity = 0;
  std::vector<const hlo::HloInstruction*> schedule;  // the entry computation, in order
  std::vector<HbmBuffer> buffers;                    // in definition order
  int64_t peakBytes = 0;      // the heap's high-water mark (offset + size), with reuse
  int64_t peakStep = 0;       // the first step that reaches peakBytes
  int64_t peakLiveBytes = 0;  // the largest sum of live buffers at one step
  int64_t totalBytes = 0;     // every buffer's allocated bytes summed: the footprint without reuse

  bool fits() const { return peakBytes <= hbmCapacity; }
  // The buffers, largest first (ties: definition order).
  std::vector<const HbmBuffer*> largest(size_t n) const;
  // A human-readable table of the assignment.
  std::string report() const;
  // "error: module 'm' needs ... bytes of HBM ... the largest buffers: ..." (for !fits()).
  std::string overflowMessage(size_t listed = 8) const;
};

// Assigns buffers for `module`'s entry computation against `target`'s HBM.
BufferAssignment assignBuffers(const hlo::HloModule& module, const TargetDescription& target);
// Assigns the temporaries of a computation that another instruction runs (a
// while body or condition, a conditional branch, a called computation). Its
// parameters take no buffer (they are the caller's values), nor does anything
// that only aliases them; offsets are relative to the caller's Scratch buffer
// for that instruction, whose size is this assignment's peakBytes.
BufferAssignment assignCalledComputationBuffers(const hlo::HloComputation& computation,
                                                const TargetDescription& target);

// Whether `inst`'s result is its first operand's bytes, unchanged: bitcasts and
// reshapes of dense row-major arrays (same element type, default minor_to_major
// on both sides), optimization barriers, add-dependency, domain. Such an
// instruction takes no buffer of its own.
bool aliasesOperandBuffer(const hlo::HloInstruction& inst);

// "3.0 MiB", "512 B": a byte count for people (exact bytes are printed beside it).
std::string humanBytes(int64_t bytes);

}  // namespace tpusim::lower
