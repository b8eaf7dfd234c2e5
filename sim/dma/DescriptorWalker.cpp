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
  static_assert(isa::kDmaWideWordBytes == 4, "the wide side's up shift is log2 of the word");
  if (wideSrc_) {
    srcDown_ = elemShift_;
    srcUp_ = 2;
  }
  if (wideDst_) {
    dstDown_ = elemShift_;
    dstUp_ = 2;
  }
  pairShift_ = paired_ ? 1 : 0;
  if (widening_) {
    minBytes_ = d.elemBytes;
    elemMask_ = ~uint64_t(d.elemBytes - 1);
  }
  done_ = d.innerBytes == 0;
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
