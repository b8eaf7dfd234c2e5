#include "compiler/lower/TargetDescription.h"

#include <fmt/format.h>

#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"

namespace tpusim::lower {

TargetDescription describeTarget(const target::ChipConfig& chip, const std::string& sourcePath) {
  TargetDescription t;
  t.chip = chip;
  t.name = chip.name;
  t.sourcePath = sourcePath;
  t.cores = chip.core.cores;
  t.clockHz = chip.core.clock_hz;
  t.vectorRegs = chip.core.vector_regs;
  t.smemBytes = chip.core.smem_bytes;
  t.vmemBytes = chip.vmem.bytes;
  t.mxuCount = chip.mxu.count;
  t.mxuSize = chip.mxu.size;
  t.int8Rate = chip.mxu.int8_rate;
  t.transcendentalInterval = chip.vpu.transcendental_interval;
  t.hbmBytes = chip.hbm.capacity_bytes;
  t.hbmBytesPerSecond = chip.hbmPeakBytesPerSecond();
  return t;
}

double TargetDescription::peakFlopsPerSecond() const {
  return static_cast<double>(cores * mxuCount * mxuSize * mxuSize) * 2.0 * clockHz;
}

std::string TargetDescription::summary() const {
  return fmt::format(
      "chip {}: {} core(s), {} MXU(s) of {}x{} per core, clock {:.4g} GHz, {} vregs, "
      "VMEM {} bytes, HBM {} bytes at {:.4g} GB/s, peak {:.4g} TFLOP/s (bf16)",
      name, cores, mxuCount, mxuSize, mxuSize, clockHz / 1e9, vectorRegs, vmemBytes, hbmBytes,
      hbmBytesPerSecond / 1e9, peakFlopsPerSecond() / 1e12);
}

TargetDescription parseTarget(const std::string& jsonText, const std::string& what) {
  try {
    return describeTarget(target::parseChipText(jsonText, what));
  } catch (const target::ConfigError& e) {
    throw TargetError(e.what());
  }
}

TargetDescription loadTarget(const std::string& nameOrPath,
                             const std::vector<std::string>& overrides) {
  try {
    return describeTarget(target::loadChip(nameOrPath, overrides),
                          target::resolveChipPath(nameOrPath));
  } catch (const target::ConfigError& e) {
    throw TargetError(e.what());
  }
}

}  // namespace tpusim::lower
