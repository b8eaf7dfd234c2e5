// tpu-opt options of the target-dependent passes and the `--buffer-report` mode:
//   --chip NAME|PATH   the chip preset layout-assignment, fusion and the buffer
//                      report compile for (checked as soon as it is parsed);
//   --fusion-report    the fusion pass prints its decisions on stderr;
//   --fusion-max-duplication, --fusion-vmem-fraction: the cost model's limits;
//   --buffer-report    instead of the module, print the HBM buffer assignment of
//                      each module (after the passes); exit 1 with the largest
//                      buffers listed when a module does not fit the chip's HBM.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <cstdlib>

#include "compiler/lower/TargetDescription.h"
#include "compiler/lower/buffers/BufferAssignment.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/tools/tpu-opt/TpuOptMode.h"

namespace cl = llvm::cl;
using namespace tpusim;

namespace {

cl::OptionCategory TargetCat("tpu-opt target options (layout-assignment, fusion, --buffer-report)");

cl::opt<std::string> Chip(
    "chip",
    cl::desc("Chip preset name (looked up in $TPUSIM_CHIPS_DIR, then sim/chips) or path to a "
             "preset .json (default v5e)"),
    cl::value_desc("NAME|PATH"), cl::init("v5e"), cl::cat(TargetCat),
    cl::cb<void, std::string>([](const std::string& chip) {
      try {
        lower::loadTarget(chip);
      } catch (const lower::TargetError& e) {
        fmt::print(stderr, "tpu-opt: {}\n", e.what());
        std::exit(1);
      }
      passes::passOptions().chip = chip;
    }));

cl::opt<bool> FusionReport("fusion-report",
                           cl::desc("Print the fusion pass's decisions (fused, refused and why) "
                                    "and the fusions it made on stderr"),
                           cl::cat(TargetCat), cl::cb<void, bool>([](bool on) {
                             passes::passOptions().fusionReport = on;
                           }));

cl::opt<int64_t> MaxDuplication(
    "fusion-max-duplication",
    cl::desc(
        "Fusion: the largest weight x extra copies a duplicated producer may cost (default 3)"),
    cl::init(3), cl::cat(TargetCat), cl::cb<void, int64_t>([](int64_t v) {
      if (v < 0) {
        fmt::print(stderr, "tpu-opt: error: --fusion-max-duplication must be >= 0, not {}\n", v);
        std::exit(1);
      }
      passes::passOptions().fusionMaxDuplication = v;
    }));

cl::opt<double> VmemFraction(
    "fusion-vmem-fraction",
    cl::desc("Fusion: the share of the chip's VMEM one fusion's working set may use (default 1)"),
    cl::init(1.0), cl::cat(TargetCat), cl::cb<void, double>([](double v) {
      if (!(v > 0 && v <= 1)) {
        fmt::print(stderr, "tpu-opt: error: --fusion-vmem-fraction must be in (0, 1], not {}\n", v);
        std::exit(1);
      }
      passes::passOptions().fusionVmemFraction = v;
    }));

cl::opt<bool> SiblingDots(
    "fusion-sibling-dots",
    cl::desc("Fusion: sibling dots (one LHS, results combined element-wise) as one kernel "
             "(default true)"),
    cl::init(true), cl::cat(TargetCat),
    cl::cb<void, bool>([](bool on) { passes::passOptions().fusionSiblingDots = on; }));
cl::opt<bool> DotEpilogueOutputs(
    "fusion-dot-epilogue-outputs",
    cl::desc("Multi-output fusion: a dot kernel and its element-wise consumer as one kernel "
             "with several outputs (default true)"),
    cl::init(true), cl::cat(TargetCat),
    cl::cb<void, bool>([](bool on) { passes::passOptions().fusionDotEpilogueOutputs = on; }));
cl::opt<bool> HeadEpilogues(
    "fusion-head-epilogues",
    cl::desc("Fusion: element-wise work and lane shuffles on a dot's result split into 128-lane "
             "heads as the dot's epilogue (default true)"),
    cl::init(true), cl::cat(TargetCat),
    cl::cb<void, bool>([](bool on) { passes::passOptions().fusionHeadEpilogues = on; }));

cl::opt<bool> ReassociateDequantScales(
    "reassociate-dequant-scales",
    cl::desc("dot-scale-to-output: move any dequantization scale to the dot's result (floats "
             "as reals; by default only exact, constant power-of-two scales)"),
    cl::init(false), cl::cat(TargetCat),
    cl::cb<void, bool>([](bool on) { passes::passOptions().reassociateDequantScales = on; }));

cl::opt<bool> BufferReport("buffer-report",
                           cl::desc("Print the HBM buffer assignment of each module (after the "
                                    "passes) instead of the module"),
                           cl::cat(TargetCat));

int runBufferReport(tpuopt::ModeInput& in) {
  lower::TargetDescription target;
  try {
    target = lower::loadTarget(passes::passOptions().chip);
  } catch (const lower::TargetError& e) {
    fmt::print(stderr, "tpu-opt: {}\n", e.what());
    return 1;
  }
  int status = 0;
  for (const auto& module : *in.modules) {
    lower::BufferAssignment a = lower::assignBuffers(*module, target);
    fmt::print("{}", a.report());
    if (!a.fits()) {
      fmt::print(stderr, "{}: {}\n", in.inputPath, a.overflowMessage());
      status = 1;
    }
  }
  return status;
}

tpuopt::ModeRegistration reg({"buffer-report", [] { return BufferReport.getValue(); },
                              runBufferReport});

}  // namespace
