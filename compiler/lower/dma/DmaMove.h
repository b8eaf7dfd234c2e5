// The geometry of a data-movement op: a strided byte move between two dense
// row-major HBM arrays, reduced to as few and as long DMA runs as possible.
//
// A Move copies `run` contiguous bytes for every point of a grid of axes
// (outer to inner); each axis steps the source and the destination by its own
// signed byte stride (0 on the source repeats bytes: broadcast; negative:
// reverse). `normalize` drops unit axes, folds an innermost axis that is
// contiguous on both sides into the run and merges neighbouring axes that
// form one arithmetic progression on both sides, so a transpose
// [s,h,d] -> [h,s,d] moves d-element runs over two axes, and a plain copy is
// one run. `splitForDescriptors` then chooses up to three axes the DMA
// descriptor walks itself (non-negative strides below 2^32); every other axis
// is enumerated by the fragment (static descriptors or a run-time loop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/DmaDescriptor.h"

namespace tpusim::lower {

struct MoveAxis {
  int64_t count = 1;
  int64_t src = 0, dst = 0;  // byte strides (signed)
  bool operator==(const MoveAxis& o) const {
    return count == o.count && src == o.src && dst == o.dst;
  }
};

struct Move {
  // Byte offsets of the grid's first point from the source / destination
  // base addresses (never negative: a reversed axis starts at its far end).
  int64_t srcOffset = 0, dstOffset = 0;
  int64_t run = 0;             // contiguous bytes per grid point (> 0)
  std::vector<MoveAxis> axes;  // outer to inner
  int64_t points() const;      // product of the counts
  int64_t bytes() const { return points() * run; }
  bool empty() const { return run == 0 || points() == 0; }
  std::string toString() const;  // "run 256 B x [2048: +8192/+256] x [32: +256/+524288] @+0/+0"
};

// A move of a dense row-major array region: element size `elemBytes`, one
// axis per logical dimension (outer to inner) with its count and the element
// strides (not bytes) on each side. Helpers build these per op.
Move elementMove(int64_t elemBytes, const std::vector<MoveAxis>& elementAxes, int64_t srcElemOffset,
                 int64_t dstElemOffset);

// Row-major element strides of `dims`.
std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims);

// Drops unit axes, grows the run, merges axes (see above). An empty move
// (a zero count) stays empty.
Move normalize(Move m);

// A normalized move cut into what one descriptor walks (`inner`, up to three
// axes, inner to outer) and the axes enumerated around it (outer to inner).
struct DescriptorSplit {
  std::vector<MoveAxis> walked;      // descriptor dims 1..3 (inner first)
  std::vector<MoveAxis> enumerated;  // outer to inner
  int64_t run = 0;
  int64_t descriptors() const;  // product of the enumerated counts
};
DescriptorSplit splitForDescriptors(const Move& m);

// A plain HBM -> HBM descriptor (or other spaces) for one enumerated point:
// `src`/`dst` are absolute byte addresses of the point's first byte.
isa::DmaDescriptor makeDescriptor(const DescriptorSplit& s, uint64_t src, uint64_t dst,
                                  isa::MemorySpace srcSpace = isa::MemorySpace::Hbm,
                                  isa::MemorySpace dstSpace = isa::MemorySpace::Hbm);

// Cuts a large descriptor into about `parts` descriptors along its outermost
// walked dim (or, for a single run, into 512-byte aligned pieces) so several
// DMA queues work on it at once. Descriptors below `minBytes` stay whole.
std::vector<isa::DmaDescriptor> splitAcrossQueues(const isa::DmaDescriptor& d, int parts,
                                                  uint64_t minBytes);

// The bytes of the source (dst=false) or destination the move may touch
// relative to its base, as [lowest, highest+1); used to check that run-time
// offsets stay below 2^32 and for cost tables.
struct ByteSpan {
  int64_t begin = 0, end = 0;
};
ByteSpan moveSpan(const Move& m, bool destination);

}  // namespace tpusim::lower
