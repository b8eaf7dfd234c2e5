// Cross-kernel prefetch: a linked kernel's first input blocks loaded while the
// kernel before it still runs, as XLA on TPU overlaps one kernel's prologue
// with the previous kernel's last step and drain.
//
// Without it every kernel's grid pipeline starts by issuing its first blocks
// and waiting for them (a 2 MiB weight block is ~3.8k cycles on v5e), after the
// kernel before it has waited for its last write-back. With a PrefetchPlan:
//  - the next kernel (CompileOptions::prefetched) places the planned streams'
//    block buffers and flags first, at its end of VMEM and of the flags
//    (`fromTop`), and its prologue does not issue their first block: it only
//    records it as in flight, so its first grid step waits for it as usual;
//  - the kernel before it (CompileOptions::prefetchNext) keeps its own VMEM
//    rows and flags out of that region and issues the planned descriptors (all
//    addresses absolute, stored in its own SMEM) at the start of its last grid
//    step, after its own last input block has arrived.
// Kernels alternate ends (a kernel that is prefetched into the top issues for
// the next into the bottom), so each keeps one contiguous allocation.
//
// Only blocks the kernel before does not write may be prefetched: an input
// whose HBM bytes overlap none of `written` (the previous kernel's outputs;
// blocks of outputs whose write-backs the kernel before it deferred are
// started after that kernel waited for them: Drain.h).
// Everything older has completed: a linked kernel waits for every DMA of its
// own before it ends, or the kernel after it does (Link.h, Drain.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/DmaDescriptor.h"
#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

// One descriptor of a prefetched first block, every address absolute.
struct PrefetchCopy {
  isa::DmaDescriptor desc;
  int flag = 0, queue = 0;
};

// One input stream whose first block is prefetched.
struct PrefetchedStream {
  int input = -1;                   // index into kernel.inputs
  int64_t bufRow = 0;               // first VMEM row of its block buffers (all of them)
  int64_t rows = 0;                 // rows of all its buffers
  int flag = 0;                     // its block-copy flag
  int descriptors = 0;              // copies of its first block (what its first wait counts)
  int variant = 0;                  // the copy variant (edge clipping) of its first block
  std::vector<int64_t> firstBlock;  // block index at grid point 0
};

struct PrefetchPlan {
  // The consumer's allocation end: VMEM rows and flags from the top down.
  bool fromTop = false;
  std::vector<PrefetchedStream> streams;
  std::vector<PrefetchCopy> copies;  // in issue order
  int64_t rows = 0;                  // VMEM rows of the region at the consumer's end
  int flags = 0;                     // flags of the region
  int64_t hbmBytes = 0;              // bytes the copies read from HBM
  bool empty() const { return streams.empty(); }
  // The plan as text without HBM addresses (the kernel cache's key).
  std::string key() const;
};

struct HbmRange {
  int64_t begin = 0, end = 0;
};

// The first blocks of `next` (compiled with `inputAddresses`) that may be
// loaded before it starts: input streams with VMEM blocks, a known address
// (>= 0) and a block index at grid point 0 that is a constant, whose HBM
// window overlaps no range of `written`. At most `maxRows` VMEM rows (the
// streams taken in input order until one does not fit); `only` >= 0 keeps
// that input alone. Empty for kernels with scalar prefetch (their index maps
// read SMEM) or without grid points.
PrefetchPlan planPrefetch(const llo::Kernel& next, const TargetInfo& t,
                          const std::vector<int64_t>& inputAddresses,
                          const std::vector<HbmRange>& written, bool fromTop, int64_t maxRows,
                          int only = -1);

}  // namespace tpusim::kernels::codegen
