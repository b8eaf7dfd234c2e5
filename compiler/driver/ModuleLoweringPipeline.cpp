#include "compiler/driver/ModuleLoweringPipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include "compiler/lower/collectives/CollectiveLowering.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/lower/module/Layouts.h"
#include "compiler/lower/module/Unfuse.h"
#include "compiler/passes/PassOptions.h"
#include "compiler/passes/PassPipeline.h"

namespace tpusim::driver {

using lower::ModuleLoweringError;

std::string defaultLoweringPasses() {
  return "spmd-collectives,inline,dot-scale-to-output,attention-backward,flash-attention,dot-"
         "precision-split,"
         "dot-canonicalize,"
         "rng-bit-generator-expander,sort-expander,int64-to-pairs,algsimp,"
         "constant-folding,cse,dce,fusion,multi-output-fusion,row-reduce-fusion,dce";
}

static std::vector<std::string> splitCommas(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    if (comma > start) names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

std::string pipelineWithout(const std::string& passes, const std::string& skip,
                            std::string* error) {
  std::vector<std::string> names = splitCommas(passes.empty() ? defaultLoweringPasses() : passes);
  for (const std::string& gone : splitCommas(skip)) {
    auto end = std::remove(names.begin(), names.end(), gone);
    if (end == names.end()) {
      *error = fmt::format("--skip-passes: '{}' is not in the pipeline ({})", gone,
                           passes.empty() ? defaultLoweringPasses() : passes);
      return "";
    }
    names.erase(end, names.end());
  }
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ",") + name;
  if (list.empty()) *error = "--skip-passes: no pass would be left to run";
  return list;
}

std::vector<std::string> runLoweringPasses(hlo::HloModule& module, const std::string& passes,
                                           const target::ChipConfig& chip,
                                           const std::string& dumpDir) {
  std::string list = passes.empty() ? defaultLoweringPasses() : passes;
  passes::passOptions().chip = chip.name;
  passes::passOptions().chipConfig = std::make_shared<const target::ChipConfig>(chip);
  passes::PassPipeline pipeline;
  std::string error;
  if (!pipeline.addPasses(list, &error)) throw ModuleLoweringError(error);
  if (!dumpDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dumpDir, ec);
    if (ec) throw ModuleLoweringError(fmt::format("cannot create '{}': {}", dumpDir, ec.message()));
    pipeline.setDumpDir(dumpDir, module.name());
  }
  // Layouts are not physical here (dense row-major HBM); drop the input's.
  lower::dropLayouts(module);
  // Fusions of the input were made for another back end: ours decides again.
  if (("," + list + ",").find(",fusion,") != std::string::npos) lower::unfuseInputFusions(module);
  if (!pipeline.run(module, &error)) throw ModuleLoweringError(error);
  return splitCommas(list);
}

lower::LoweredModule compileModule(hlo::HloModule& module, const lower::TargetDescription& target,
                                   const kernels::codegen::TargetInfo& codegenTarget,
                                   const ModuleLoweringOptions& options) {
  std::vector<std::string> ran =
      runLoweringPasses(module, options.passes, target.chip, options.dumpDir);
  // The top flags belong to the SPMD collectives the module has (CollectiveLowering.h).
  kernels::codegen::TargetInfo kernelTarget = codegenTarget;
  try {
    lower::spmdDeviceCount(module);
  } catch (const std::invalid_argument& e) {
    throw ModuleLoweringError(e.what());
  }
  kernelTarget.syncFlags -= lower::spmdReservedFlags(module, target.chip);
  lower::LoweredModule out = lower::lowerModule(module, target, kernelTarget, options.lower);
  out.passes = std::move(ran);
  return out;
}

}  // namespace tpusim::driver
