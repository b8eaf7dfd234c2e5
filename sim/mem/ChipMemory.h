// The functional memories of one chip: HBM shared by the cores, and VMEM and
// SMEM per core. DMA and the core look memories up by (space, core) here.
#pragma once

#include <memory>
#include <vector>

#include "sim/mem/Smem.h"
#include "sim/mem/SparseMemory.h"

namespace tpusim::sim::mem {

struct ChipMemorySizes {
  uint64_t hbmBytes = 0;
  uint64_t vmemBytes = 0;  // per core
  uint64_t smemWords = 0;  // per core
  int cores = 1;
};

class ChipMemory {
 public:
  explicit ChipMemory(const ChipMemorySizes& sizes);

  int cores() const { return int(vmem_.size()); }
  SparseMemory& hbm() { return hbm_; }
  SparseMemory& vmem(int core) { return *vmem_.at(core); }
  Smem& smem(int core) { return *smem_.at(core); }
  // The byte view of a space (core is ignored for HBM).
  SparseMemory& space(isa::MemorySpace space, int core);
  const SparseMemory& space(isa::MemorySpace space, int core) const;

 private:
  SparseMemory hbm_;
  std::vector<std::unique_ptr<SparseMemory>> vmem_;
  std::vector<std::unique_ptr<Smem>> smem_;
};

}  // namespace tpusim::sim::mem
