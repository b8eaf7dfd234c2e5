// Deferred write-back: a linked kernel's last output write-backs left in
// flight when it ends, waited for by the kernel after it, as XLA on TPU
// overlaps one kernel's epilogue with the next one's prologue.
//
// Without it every linked kernel waits for its last write-back before the next
// kernel starts (a 256 x 1024 f32 block is ~1.3k cycles on v5e). With
// CompileOptions::deferWriteBack the kernel's epilogue does not wait for the
// last write-back of its double-buffered output streams; CompiledKernel::
// pendingWriteBacks says what is left in flight: the flag, how many copies it
// counts, and the VMEM rows the copies still read. The next kernel gets them as
// its CompileOptions::drainBefore and waits for them (`sync.wait` on each flag
// with its count), so the flags are back at zero and the outputs in HBM
// before anything can depend on them:
//  - at its start, when it reads or writes HBM bytes of those outputs
//    (`atStart`, the caller's decision: only it knows the addresses), or when
//    its own VMEM rows or flags overlap the pending ones;
//  - before it starts the kernel after it's first blocks (Prefetch.h), when
//    that region overlaps the pending rows or flags, or some of those blocks
//    are of the pending outputs (`beforePrefetch`, the caller's decision);
//  - otherwise at its end, after its own write-backs.
// The pending rows and flags are within the kernel before's allocation, and
// kernels alternate allocation ends along a prefetch chain, so the next
// kernel's own allocation usually misses them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::kernels::codegen {

// One output stream's last write-back, still in flight after its kernel ended.
struct PendingWriteBack {
  int output = -1;            // index into kernel.outputs
  int flag = 0;               // its block-copy flag
  int count = 0;              // descriptors the last write-back started (the wait's count)
  int64_t row = 0, rows = 0;  // VMEM rows of the stream's block buffers
};

// Where a kernel waits for the write-backs the kernel before deferred.
enum class DrainAt { None, Start, BeforePrefetch, End };
const char* drainAtName(DrainAt a);  // "at its start", ..., "at its end"

struct DrainPlan {
  std::vector<PendingWriteBack> copies;
  bool atStart = false;  // wait before anything else (the kernel touches those outputs)
  // Wait before starting the kernel after it's first blocks (some read those outputs).
  bool beforePrefetch = false;
  bool empty() const { return copies.empty(); }
  // The plan as text (the kernel cache's key).
  std::string key() const;
};

}  // namespace tpusim::kernels::codegen
