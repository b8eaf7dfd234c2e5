// How a copy of a window between two refs becomes DMA descriptors: HBM arrays
// are dense row-major elements, VMEM refs are (8,128)-tiled 32-bit words (a
// bf16 / int8 element lands in the low bytes of its word), SMEM refs are one
// word per element. The window's dimensions become the descriptor's counted
// dimensions with byte strides on each side; contiguous runs merge into the
// inner byte count; dimensions beyond the descriptor's four become several
// descriptors at constant offsets. bf16 / int8 copies between HBM and
// VMEM/SMEM use the DMA's widening mode (isa/DmaDescriptor.h), so a row of a
// block is one contiguous run on both sides, as for f32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/DmaDescriptor.h"
#include "kernels/llo/Ir.h"
#include "kernels/llo/Types.h"

namespace tpusim::kernels::codegen {

struct CopyPlan {
  // Descriptor templates (addresses relative to the windows' first elements);
  // descriptor i is issued with src/dst = window origin + srcOffset[i] / dstOffset[i].
  std::vector<isa::DmaDescriptor> descriptors;
  std::vector<int64_t> srcOffset, dstOffset;
  int64_t bytes = 0;  // bytes the copy moves on the HBM (dense) side; VMEM/SMEM bytes for others
  // A block copy in parts (planBlockCopy with parts > 1): part c is
  // partDescriptors[c] consecutive descriptors and holds the block's rows
  // [partRowEnd[c - 1], partRowEnd[c]) (first dimension). Empty: one part.
  std::vector<int64_t> partRowEnd, partDescriptors;
  // The parts are ranges of the block's leading entries (entriesBlock), not
  // of its rows: partRowEnd then counts entries.
  bool partsByEntry = false;
};

// `sizes` is the window (one size per dim of both refs, same rank). VMEM
// windows must start at a multiple of 128 in the last dimension and cover
// whole column tiles or end at the ref's last column. Throws CodegenError.
CopyPlan planCopy(const llo::Type& src, const llo::Type& dst, const std::vector<int64_t>& sizes);

// The copy of a pipeline block's window at the block's origin between an HBM
// array and its VMEM block buffer (`toHbm`: a write-back). A window of more
// than 128 columns that is not whole column tiles (an edge block) is split
// into its whole tiles and a tail. Shared by the grid pipeline and the
// cross-kernel prefetch planner (Prefetch.h), so both issue the same copies.
// pairRows = S > 0 (an input, PairPack.h): rows c * 2S + r and c * 2S + S + r
// of the window go into one word at block row c * 2S + r (the DMA's pair
// mode); rows of a last, partial chunk without a partner keep a zero high byte.
// packedHbm: the array is stored in the packed s8x2 layout with S = pairRows
// (llo::ArrayOperand::pairRows): each chunk is one sequential 16-bit widening
// copy, no pair mode; the window must be whole chunks at a chunk-aligned row.
CopyPlan planBlockCopy(const llo::Type& hbm, const llo::Type& block, bool toHbm,
                       std::vector<int64_t> window, int64_t pairRows = 0, int64_t parts = 1,
                       bool packedHbm = false);

// How many parts (row ranges, in order on one DMA queue) the copies of an
// input stream's blocks are split into, so that the kernel body can start on
// the first rows while the rest is in flight (chunked arrival,
// Lowerer::Arrival). Only blocks that stay for several grid steps (an LHS
// block kept across a row of N blocks) arrive in such bursts: a block that
// changes every step is started a whole step ahead and is usually in when
// the step starts, and were it split, the next blocks (started before the
// body) would take HBM from the parts still in flight. Also: 2-D
// double-buffered blocks whose edge blocks are all full (one copy variant),
// at most half the queue's depth per block (the next block's parts are issued
// while the current one's may still be queued), parts of at least
// kMinArrivalPartBytes, index maps that do not read SMEM. 1: one part. Shared
// by the grid pipeline and the cross-kernel prefetch planner, which must
// split alike.
// Also, where the body's first read of the block takes only some of its rows
// (FirstRead.h), blocks of more dimensions whose leading ones are 1
// (rowsBlock), and a block copied once for the whole grid (its index map
// constant: a whole head at one head) of leading unit dims in parts of at
// least kMinOnceArrivalPartBytes.
constexpr int64_t kMaxArrivalParts = 4;
constexpr int64_t kMinArrivalPartBytes = int64_t(512) << 10;
constexpr int64_t kMinOnceArrivalPartBytes = int64_t(64) << 10;
// Entries of a part of a batched step's block (entriesBlock): a wait between
// every entry or two splits the step's matmuls into runs too short for the
// scheduler to overlap one entry's MXU drain with the next one's pushes (a
// q.K of 2 heads x 2048 keys a step, its steps MXU-bound: 37,587 cycles in
// parts of one head against 37,229 whole).
constexpr int64_t kMinArrivalPartEntries = 4;
// Whether every grid step keeps the block of the first (a constant index
// map over 2+ steps): it is copied once, in the prologue.
bool copiedOnce(const llo::Kernel& k, const llo::BlockMapping& m);
// A 2-D block, or one whose dimensions before its last two are all 1.
bool rowsBlock(const std::vector<int64_t>& shape);
// A block of several leading entries (a batched dot's step: [entries, 1...,
// rows, cols]); its parts are ranges of whole entries when the body's first
// read is a matmul at an entry before the last (FirstRead.h
// firstReadByEntries): a decode attention's q.K step of 32 heads then starts
// on its first heads while the rest of its 2 MiB of keys is in flight.
bool entriesBlock(const std::vector<int64_t>& shape);
int64_t arrivalParts(const llo::Kernel& k, const llo::BlockMapping& m, const llo::Type& hbm,
                     int queueDepth);

// Byte offset of a window's first element from the ref's first element, for
// constant indices (HBM, SMEM) or per unit of each index (strides, in bytes).
std::vector<int64_t> elementStrides(const llo::Type& ref);
// Byte offset per unit of each index of an input array's window origin in its
// HBM layout: elementStrides of its type, or for the packed s8x2 layout
// (ArrayOperand::pairRows) those of chunk-aligned rows and 16-bit columns.
std::vector<int64_t> hbmStrides(const llo::ArrayOperand& a);

}  // namespace tpusim::kernels::codegen
