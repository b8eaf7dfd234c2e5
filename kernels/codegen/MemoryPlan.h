// Where every buffer of a compiled kernel lives: HBM addresses of the arrays,
// VMEM rows of the pipeline buffers, scratch and temporaries, SMEM words of
// scalar data and DMA descriptors, and sync flags. Running out of VMEM, SMEM
// or flags is an error listing what was placed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/codegen/TargetInfo.h"
#include "kernels/llo/Ir.h"

namespace tpusim::kernels::codegen {

class MemoryPlan {
 public:
  // SMEM words are handed out from `smemBase` on (a linked kernel's share).
  explicit MemoryPlan(const TargetInfo& t, int64_t smemBase = 0)
      : t_(t), smemBase_(smemBase), smemNext_(smemBase) {}

  // Cross-kernel prefetch (Prefetch.h): VMEM rows and flags handed out from
  // the top down, and rows / flags at the other end kept free for the next
  // kernel's first blocks (check() counts them as used).
  void setEnds(bool fromTop, int64_t reservedRows, int reservedFlags) {
    fromTop_ = fromTop;
    reservedRows_ = reservedRows;
    reservedFlags_ = reservedFlags;
  }

  // Each returns the first row / word / byte / flag of the new allocation.
  int64_t vmem(const std::string& what, const std::vector<int64_t>& shape, int copies = 1);
  int64_t smemWords(const std::string& what, int64_t words);
  int64_t hbm(const std::string& what, int64_t bytes);
  int flags(const std::string& what, int count);

  int64_t vmemRowsUsed() const { return vmemNext_; }               // reserved rows not included
  int64_t smemWordsUsed() const { return smemNext_ - smemBase_; }  // from smemBase
  int flagsUsed() const { return flagNext_; }
  bool fromTop() const { return fromTop_; }  // rows and flags handed out from the top down
  // Throws CodegenError listing every allocation when a space overflows.
  void check() const;

 private:
  struct Entry {
    std::string space, what;
    int64_t start, size;
  };
  const TargetInfo& t_;
  int64_t smemBase_ = 0;
  int64_t vmemNext_ = 0, smemNext_ = 0, hbmNext_ = 0;
  int flagNext_ = 0;
  bool fromTop_ = false;
  int64_t reservedRows_ = 0;
  int reservedFlags_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace tpusim::kernels::codegen
