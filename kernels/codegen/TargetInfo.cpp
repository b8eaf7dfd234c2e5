#include "kernels/codegen/TargetInfo.h"

#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"

namespace tpusim::kernels::codegen {

int TargetInfo::slotsOf(isa::SlotKind k) const {
  switch (k) {
    case isa::SlotKind::Scalar:
      return scalarSlots;
    case isa::SlotKind::VectorAlu:
      return valuSlots;
    case isa::SlotKind::VectorLoad:
      return vldSlots;
    case isa::SlotKind::VectorStore:
      return vstSlots;
    default:
      return isa::slotInfo(k).count;
  }
}

TargetInfo TargetInfo::defaults() {
  TargetInfo t;
  t.name = "default";
  for (int i = 0; i < isa::kNumLatencyClasses; ++i) {
    using L = isa::LatencyClass;
    switch (static_cast<L>(i)) {
      case L::VectorAlu:
      case L::VectorLoad:
      case L::MxuPop:
      case L::ScalarMem:
        t.latency[i] = 2;
        break;
      case L::VectorTrans:
      case L::XluShort:
      case L::XluReduce:
      case L::XluTranspose:
        t.latency[i] = 8;
        break;
      default:
        t.latency[i] = 1;
    }
  }
  return t;
}

namespace {

// The interleave line: the fewest consecutive bytes (from a line boundary)
// that reach every channel, pseudo-channel and bank group, i.e. a burst times
// every digit of hbm.address_mapping from the least significant up to the most
// significant of ch, pc and bg (4096 for v5e's "ro-ba-co-bg-pc-ch" with 16
// channels, 2 pseudo-channels, 4 bank groups and 32-byte bursts).
int64_t interleaveBytes(const target::HbmConfig& h) {
  std::vector<std::string> digits = h.mappingDigits();
  auto spreads = [](const std::string& d) { return d == "ch" || d == "pc" || d == "bg"; };
  size_t top = digits.size();  // the most significant spreading digit
  for (size_t i = digits.size(); i-- > 0;)
    if (spreads(digits[i])) top = i;
  int64_t bytes = h.burst_bytes;
  for (size_t i = top; i < digits.size(); ++i) {
    const std::string& d = digits[i];
    bytes *= d == "ro"   ? h.rows
             : d == "ba" ? h.banks_per_group
             : d == "bg" ? h.bank_groups
             : d == "ch" ? h.channels
             : d == "pc" ? h.pseudo_channels
                         : h.columnsPerRow();
  }
  return bytes;
}

}  // namespace

TargetInfo TargetInfo::fromChip(const target::ChipConfig& chip) {
  TargetInfo t;
  t.name = chip.name;
  t.cores = int(chip.core.cores);
  t.vectorRegs = int(chip.core.vector_regs);
  t.syncFlags = int(chip.core.sync_flags);
  t.scalarSlots = int(chip.core.scalar_slots);
  t.valuSlots = int(chip.core.valu_slots);
  t.vldSlots = int(chip.core.vld_slots);
  t.vstSlots = int(chip.core.vst_slots);
  t.branchPenalty = int(chip.core.branch_penalty);
  t.smemBytes = chip.core.smem_bytes;
  t.vmemBytes = chip.vmem.bytes;
  t.vmemBanks = int(chip.vmem.banks);
  t.mxuCount = int(chip.mxu.count);
  t.mxuSize = int(chip.mxu.size);
  t.accSlots = int(chip.mxu.acc_slots);
  t.int8Rate = int(chip.mxu.int8_rate);
  t.transcendentalInterval = int(chip.vpu.transcendental_interval);
  t.xluCount = int(chip.xlu.count);
  t.xluPermuteInterval = int(chip.xlu.permute_interval);
  t.xluReduceInterval = int(chip.xlu.reduce_interval);
  t.transposePushInterval = int(chip.xlu.transpose_push_interval);
  t.transposePopInterval = int(chip.xlu.transpose_pop_interval);
  t.dmaQueues = int(chip.dma.queues);
  t.dmaQueueDepth = int(chip.dma.queue_depth);
  t.hbmBytes = chip.hbm.capacity_bytes;
  t.hbmBytesPerCycle = chip.hbmPeakBytesPerSecond() / chip.core.clock_hz;
  t.hbmInterleaveBytes = interleaveBytes(chip.hbm);
  t.hasHbm = true;
  t.hbm = chip.hbm;
  t.dma = chip.dma;
  for (int i = 0; i < isa::kNumLatencyClasses; ++i)
    t.latency[i] = int(chip.latency.of(static_cast<isa::LatencyClass>(i)));
  return t;
}

namespace {

// Loads through isa/target; its ConfigError becomes the code generator's TargetError.
template <class F>
TargetInfo viewOf(F load) {
  try {
    return TargetInfo::fromChip(load());
  } catch (const target::ConfigError& e) {
    throw TargetError(e.what());
  }
}

}  // namespace

TargetInfo parseTarget(const std::string& text, const std::string& file) {
  return viewOf([&] { return target::parseChipText(text, file); });
}

TargetInfo loadTarget(const std::string& path) {
  return viewOf([&] { return target::loadChip(path); });
}

TargetInfo loadTargetByName(const std::string& nameOrPath, const std::string& chipsDir) {
  bool isPath = nameOrPath.find('/') != std::string::npos ||
                (nameOrPath.size() > 5 && nameOrPath.substr(nameOrPath.size() - 5) == ".json");
  if (isPath || chipsDir.empty()) return loadTarget(nameOrPath);
  return loadTarget(chipsDir + "/" + nameOrPath + ".json");
}

}  // namespace tpusim::kernels::codegen
