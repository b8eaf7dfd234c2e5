#include "sim/mem/ChipMemory.h"

namespace tpusim::sim::mem {

ChipMemory::ChipMemory(const ChipMemorySizes& sizes) : hbm_(isa::MemorySpace::Hbm, sizes.hbmBytes) {
  for (int c = 0; c < sizes.cores; ++c) {
    vmem_.push_back(std::make_unique<SparseMemory>(isa::MemorySpace::Vmem, sizes.vmemBytes, c));
    smem_.push_back(std::make_unique<Smem>(sizes.smemWords, c));
  }
}

SparseMemory& ChipMemory::space(isa::MemorySpace s, int core) {
  return const_cast<SparseMemory&>(static_cast<const ChipMemory&>(*this).space(s, core));
}

const SparseMemory& ChipMemory::space(isa::MemorySpace s, int core) const {
  switch (s) {
    case isa::MemorySpace::Hbm:
      return hbm_;
    case isa::MemorySpace::Vmem:
      return *vmem_.at(core);
    case isa::MemorySpace::Smem:
      return smem_.at(core)->bytes();
  }
  return hbm_;
}

}  // namespace tpusim::sim::mem
