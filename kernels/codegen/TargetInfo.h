// The machine parameters the code generator needs: a view of the one chip
// description (isa/target, target::ChipConfig) that the simulator and the
// graph compiler read too, so the three can never disagree about a preset.
// Presets are read, validated and overridden only by isa/target.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "isa/Isa.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::kernels::codegen {

class TargetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TargetInfo {
  std::string name;
  // core.*
  int cores = 1;
  int vectorRegs = 32;
  int syncFlags = 32;
  int scalarSlots = 2, valuSlots = 2, vldSlots = 1, vstSlots = 1;
  int branchPenalty = 2;
  int64_t smemBytes = 1 << 20;
  // vmem.*
  int64_t vmemBytes = int64_t(16) << 20;
  int vmemBanks = 16;
  // mxu.*
  int mxuCount = 4, mxuSize = 128, accSlots = 16;
  int int8Rate = 1;  // 2: the MXU's packed int8 mode (s8x2) exists
  // vpu.* / xlu.*
  int transcendentalInterval = 4;
  int xluCount = 1, xluPermuteInterval = 8, xluReduceInterval = 8;
  // The transpose unit (one per core, beside the XLUs): cycles a push / pop holds it.
  int transposePushInterval = 8, transposePopInterval = 8;
  // dma.*
  int dmaQueues = 4, dmaQueueDepth = 8;
  // hbm.*: capacity (where arrays may be placed) and peak bandwidth / core
  // clock (the tiling cost model's memory roof).
  int64_t hbmBytes = int64_t(16) << 30;
  double hbmBytesPerCycle = 512;
  // Consecutive bytes the address mapping spreads over every channel,
  // pseudo-channel and bank group (target::HbmConfig::interleaveBytes).
  int64_t hbmInterleaveBytes = 4096;
  // The preset's HBM and DMA sections (the tiling model's run efficiency,
  // kernels/tiling/HbmRuns.h); hasHbm false for hand-built targets.
  bool hasHbm = false;
  target::HbmConfig hbm;
  target::DmaConfig dma;
  // latency.<key> for every isa::LatencyClass
  std::array<int, isa::kNumLatencyClasses> latency{};

  int latencyOf(isa::LatencyClass c) const { return latency[static_cast<int>(c)]; }
  int64_t vmemRows() const { return vmemBytes / isa::kVmemRowBytes; }
  // Slots of a kind the preset enables in a bundle.
  int slotsOf(isa::SlotKind k) const;

  // A small default (tests): 4 MXUs of 128, the ISA's default latencies.
  static TargetInfo defaults();
  // The code generator's view of a loaded (validated) chip.
  static TargetInfo fromChip(const target::ChipConfig& chip);
};

// Loads a preset file through isa/target; errors (TargetError) name the file and the field.
TargetInfo loadTarget(const std::string& path);
// Parses preset JSON text (`file` is used in messages and to resolve "extends").
TargetInfo parseTarget(const std::string& text, const std::string& file);
// Finds a preset by name (v5e) in `chipsDir` ("" = the preset search path of
// target::loadChip), or takes a path to a .json file.
TargetInfo loadTargetByName(const std::string& nameOrPath, const std::string& chipsDir);

}  // namespace tpusim::kernels::codegen
