#include "kernels/codegen/MemoryPlan.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/codegen/RegAlloc.h"

namespace tpusim::kernels::codegen {

int64_t MemoryPlan::vmem(const std::string& what, const std::vector<int64_t>& shape, int copies) {
  int64_t rows = llo::tiledLayout(shape).totalRows() * copies;
  int64_t at = vmemNext_;
  vmemNext_ += rows;
  // From the top: clamped at row 0 when VMEM overflows (check() reports it).
  if (fromTop_) at = std::max<int64_t>(0, t_.vmemRows() - vmemNext_);
  entries_.push_back({"vmem", what, at, rows});
  return at;
}

int64_t MemoryPlan::smemWords(const std::string& what, int64_t words) {
  int64_t at = smemNext_;
  smemNext_ += words;
  entries_.push_back({"smem", what, at, words});
  return at;
}

int64_t MemoryPlan::hbm(const std::string& what, int64_t bytes) {
  int64_t at = hbmNext_;
  hbmNext_ += (bytes + 511) / 512 * 512;  // row-aligned, so DMA requests stay aligned
  entries_.push_back({"hbm", what, at, bytes});
  return at;
}

int MemoryPlan::flags(const std::string& what, int count) {
  int at = flagNext_;
  flagNext_ += count;
  if (fromTop_) at = std::max(0, t_.syncFlags - flagNext_);
  entries_.push_back({"flags", what, at, count});
  return at;
}

void MemoryPlan::check() const {
  std::vector<Entry> entries = entries_;
  auto overflow = [&](const char* space, int64_t used, int64_t limit, const char* unit) {
    if (used <= limit) return;
    std::string msg = fmt::format("the kernel needs {} {} of {} but the target '{}' has {}:", used,
                                  unit, space, t_.name, limit);
    for (const Entry& e : entries)
      if (e.space == space) msg += fmt::format("\n  {:>10} {}  {}", e.size, unit, e.what);
    throw CodegenError(msg);
  };
  const std::string kept = "kept free for the next kernel's first blocks";
  if (reservedRows_ > 0) entries.push_back({"vmem", kept, -1, reservedRows_});
  if (reservedFlags_ > 0) entries.push_back({"flags", kept, -1, reservedFlags_});
  overflow("vmem", vmemNext_ + reservedRows_, t_.vmemRows(), "rows");
  overflow("smem", smemNext_, t_.smemBytes / 4, "words");  // the end, smemBase included
  overflow("flags", flagNext_ + reservedFlags_, t_.syncFlags, "flags");
  if (hbmNext_ > t_.hbmBytes)
    throw CodegenError(
        fmt::format("the kernel's arrays need {} bytes of HBM but the target '{}' "
                    "has {}",
                    hbmNext_, t_.name, t_.hbmBytes));
}

}  // namespace tpusim::kernels::codegen
