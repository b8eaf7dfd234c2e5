// Walks a DMA descriptor's elements in order (dimension 1 fastest) and cuts
// each contiguous innermost run into requests of at most `requestBytes` that
// never cross a `requestBytes`-aligned boundary of the HBM-side address (the
// source if it is HBM, else the destination), so requests map onto whole
// HBM bursts whenever the data allows it. A request never spans two elements.
// Widening copies (DmaDescriptor.h) are cut on the dense (HBM) side; the wide
// side of a request covers 4 / E times as many bytes. A paired copy's request
// reads two dense runs of `bytes`, at src and src + the pair offset (srcBytes
// counts both).
#pragma once

#include <algorithm>
#include <cstdint>

#include "isa/DmaDescriptor.h"

namespace tpusim::sim::dma {

struct DmaRequestRange {
  uint64_t src = 0, dst = 0;
  uint32_t bytes = 0;                   // on the dense side (both sides of a plain copy; one
                                        // run of a paired copy)
  uint32_t srcBytes = 0, dstBytes = 0;  // read from the source, written to the destination
};

class DescriptorWalker {
 public:
  // Throws std::invalid_argument for a widening element size other than 1 or 2.
  DescriptorWalker(const isa::DmaDescriptor& d, uint32_t requestBytes);

  bool done() const { return done_; }
  // The next request; only when !done().
  DmaRequestRange next() {
    DmaRequestRange r;
    next(&r);
    return r;
  }
  // The same, written into *out field by field (a range returned by value and
  // copied on has 16-byte loads that stall on store forwarding, a measurable
  // cost per request).
  // Always inlined (body below): it runs once per request inside the DMA
  // engine's loop, which grew too large for the compiler to inline it.
  [[gnu::always_inline]] inline void next(DmaRequestRange* out);

 private:
  isa::DmaDescriptor d_;
  uint32_t requestBytes_;
  bool alignOnSource_;
  uint32_t i1_ = 0, i2_ = 0, i3_ = 0;
  uint32_t offset_ = 0;  // within the current element
  // Addresses of the current element's first byte, kept as the indices move
  // (a stride added per element rather than three products per request).
  uint64_t srcBase_, dstBase_;
  uint64_t alignMask_;  // requestBytes - 1 when a power of two, else 0
  // Widening: which side is wide, and log2 of the element size (1 or 2
  // bytes, DmaDescriptor::validate), so that a request costs no division.
  bool widening_, wideSrc_, wideDst_, paired_;
  uint32_t elemShift_ = 0;
  // Without branches per request: a dense offset or size x is
  // (x >> down) << up on each side (the wide side: / E * 4, else x), a paired
  // source reads x << pairShift_ bytes, and a request is cut to whole elements
  // with elemMask_ and at least minBytes_ (0 and all ones unless widening).
  uint32_t srcDown_ = 0, srcUp_ = 0, dstDown_ = 0, dstUp_ = 0, pairShift_ = 0;
  uint64_t minBytes_ = 0, elemMask_ = ~uint64_t(0);
  bool done_ = false;
};

inline void DescriptorWalker::next(DmaRequestRange* out) {
  const uint64_t src = srcBase_ + ((uint64_t(offset_) >> srcDown_) << srcUp_);
  const uint64_t dst = dstBase_ + ((uint64_t(offset_) >> dstDown_) << dstUp_);
  const uint64_t align = alignOnSource_ ? src : dst;
  uint64_t toBoundary = requestBytes_ - (alignMask_ ? align & alignMask_ : align % requestBytes_);
  // A widening copy: whole elements only (a request smaller than one element moves one).
  toBoundary = std::max<uint64_t>(minBytes_, toBoundary & elemMask_);
  const uint32_t bytes = uint32_t(std::min<uint64_t>(d_.innerBytes - offset_, toBoundary));
  out->src = src;
  out->dst = dst;
  out->bytes = bytes;
  out->srcBytes = ((bytes >> srcDown_) << srcUp_) << pairShift_;
  out->dstBytes = (bytes >> dstDown_) << dstUp_;
  offset_ += bytes;
  if (offset_ == d_.innerBytes) {
    offset_ = 0;
    if (++i1_ < d_.counts[0]) {
      srcBase_ += d_.srcStrides[0];
      dstBase_ += d_.dstStrides[0];
    } else {
      i1_ = 0;
      if (++i2_ == d_.counts[1]) {
        i2_ = 0;
        if (++i3_ == d_.counts[2]) done_ = true;
      }
      srcBase_ = d_.srcAddr + uint64_t(i2_) * d_.srcStrides[1] + uint64_t(i3_) * d_.srcStrides[2];
      dstBase_ = d_.dstAddr + uint64_t(i2_) * d_.dstStrides[1] + uint64_t(i3_) * d_.dstStrides[2];
    }
  }
}

// The byte just past the highest byte the descriptor touches on one side (its
// own bytes: the widened run on the wide side of a widening copy),
// relative to its base address (strides are unsigned, so the last element is
// the highest). Exact in 128 bits.
unsigned __int128 descriptorExtent(const isa::DmaDescriptor& d, bool source);

}  // namespace tpusim::sim::dma
