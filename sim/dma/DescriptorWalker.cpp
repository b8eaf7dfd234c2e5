#include "sim/dma/DescriptorWalker.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::sim::dma {

DescriptorWalker::DescriptorWalker(const isa::DmaDescriptor& d, uint32_t requestBytes)
    : d_(d),
      requestBytes_(requestBytes),
      alignOnSource_(d.src == isa::MemorySpace::Hbm || d.dst != isa::MemorySpace::Hbm),
      srcBase_(d.srcAddr),
      dstBase_(d.dstAddr),
      alignMask_((requestBytes & (requestBytes - 1)) == 0 ? requestBytes - 1 : 0),
      widening_(d.widening()),
      wideSrc_(d.wideSource()),
      wideDst_(d.widening() && !d.wideSource()),
      paired_(d.paired()) {
  if (widening_ && d.elemBytes != 1 && d.elemBytes != 2)  // DmaDescriptor::validate rejects it
    throw std::invalid_argument("DescriptorWalker: a widening copy's element size must be 1 or 2");
  elemShift_ = d.elemBytes == 2 ? 1 : 0;
  done_ = d.innerBytes == 0;
}

void DescriptorWalker::next(DmaRequestRange* out) {
  const uint64_t srcBase = srcBase_, dstBase = dstBase_;
  // Offsets within the element on each side (the wide side of a widening copy
  // advances 4 bytes per dense element of E bytes).
  auto wide = [&](uint64_t denseBytes) {
    return (denseBytes >> elemShift_) * isa::kDmaWideWordBytes;  // / elemBytes * 4
  };
  const bool wideSrc = wideSrc_, wideDst = wideDst_;
  const uint64_t src = srcBase + (wideSrc ? wide(offset_) : offset_);
  const uint64_t dst = dstBase + (wideDst ? wide(offset_) : offset_);
  uint64_t align = alignOnSource_ ? src : dst;
  uint64_t toBoundary = requestBytes_ - (alignMask_ ? align & alignMask_ : align % requestBytes_);
  if (widening_)  // whole elements only (a request smaller than one element moves one)
    toBoundary = std::max<uint64_t>(d_.elemBytes, toBoundary & ~uint64_t(d_.elemBytes - 1));
  const uint32_t bytes = uint32_t(std::min<uint64_t>(d_.innerBytes - offset_, toBoundary));
  uint32_t srcBytes = wideSrc ? uint32_t(wide(bytes)) : bytes;
  if (paired_) srcBytes *= 2;  // the runs at src and src + pair offset
  out->src = src;
  out->dst = dst;
  out->bytes = bytes;
  out->srcBytes = srcBytes;
  out->dstBytes = wideDst ? uint32_t(wide(bytes)) : bytes;
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

unsigned __int128 descriptorExtent(const isa::DmaDescriptor& d, bool source) {
  const auto& strides = source ? d.srcStrides : d.dstStrides;
  unsigned __int128 extent = d.innerBytesOn(source);
  for (int i = 0; i < 3; ++i)
    extent += (unsigned __int128)(d.counts[i] == 0 ? 0 : d.counts[i] - 1) * strides[i];
  if (source) extent += d.pairOffset;  // a pair's high elements (0 unless paired)
  return extent;
}

}  // namespace tpusim::sim::dma
