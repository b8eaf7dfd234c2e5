// TensorCore parameters: count per chip, clock, register files, bundle slots.
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include "isa/Isa.h"
#include "isa/target/Params.h"

namespace tpusim::target {

struct CoreConfig {
  int64_t cores = 1;  // TensorCores per chip; 2 = megacore
  double clock_hz = 1.5e9;
  int64_t vector_regs = 32;
  int64_t sync_flags = 32;
  int64_t scalar_slots = 2;
  int64_t valu_slots = 2;
  int64_t vld_slots = 1;
  int64_t vst_slots = 1;
  int64_t branch_penalty = 2;
  int64_t smem_bytes = 1 << 20;

  template <class V>
  void visit(V& v) {
    v.field("cores", cores, "count", "TensorCores per chip (2 = megacore sharing HBM)", 1, 2);
    v.field("clock_hz", clock_hz, "Hz", "core clock; every core-side cycle count uses it", 1e6,
            1e10);
    v.field("vector_regs", vector_regs, "count", "vector registers per core (8 x 128 x 32 bit)", 1,
            isa::kMaxVectorRegs);
    v.field("sync_flags", sync_flags, "count", "sync flags (counting semaphores) per core", 1,
            isa::kMaxSyncFlags);
    v.field("scalar_slots", scalar_slots, "count", "scalar slots enabled per bundle", 1,
            slotCount(isa::SlotKind::Scalar));
    v.field("valu_slots", valu_slots, "count", "vector ALU slots enabled per bundle", 1,
            slotCount(isa::SlotKind::VectorAlu));
    v.field("vld_slots", vld_slots, "count", "vector load slots enabled per bundle", 1,
            slotCount(isa::SlotKind::VectorLoad));
    v.field("vst_slots", vst_slots, "count", "vector store slots enabled per bundle", 1,
            slotCount(isa::SlotKind::VectorStore));
    v.field("branch_penalty", branch_penalty, "cycles",
            "extra cycles before the target of a taken branch issues", 0, 64);
    v.field("smem_bytes", smem_bytes, "bytes", "scalar memory (SMEM) per core", 64,
            int64_t(1) << 30);
  }

  void check(ConfigProblems& p) const {
    p.require(smem_bytes % 4 == 0, "smem_bytes",
              "must be a multiple of 4 (SMEM is addressed in 32-bit words)");
    // A descriptor is 16 words; an SMEM that cannot hold one cannot issue any DMA.
    p.require(smem_bytes >= 64, "smem_bytes", "must hold at least one 64-byte DMA descriptor");
  }

  static constexpr int64_t slotCount(isa::SlotKind k) { return isa::slotInfo(k).count; }
};

}  // namespace tpusim::target
