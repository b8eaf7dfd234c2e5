// The fast HBM and DMA models against the detailed ones on the DMA traffic of
// real programs: the micro Llama traces compiled by the HLO compiler (matmuls,
// attention, norms, KV-cache updates, gathers, all through library and
// generated kernels) and the cycle-regression programs, in timing mode on
// several presets. Cycles and the whole stats JSON (per-op, per-queue and
// per-HBM-channel counters) must be identical with both models detailed, both
// fast, and the fast HBM model under the detailed DMA model (so that a
// difference names the model that made it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/hlo/HloParser.h"
#include "isa/Assembler.h"
#include "isa/target/ChipLoader.h"
#include "kernels/codegen/TargetInfo.h"
#include "sim/chip/RunReport.h"
#include "sim/chip/Simulation.h"

using namespace tpusim;

namespace {

std::string source(const std::string& relative) {
  return std::string(TPUSIM_TEST_SOURCE_DIR) + "/" + relative;
}

isa::Program compileTrace(const std::string& file, const std::string& chip) {
  hlo::ParseResult parsed = hlo::parseHloFile(source("traces/" + file));
  INFO(parsed.error);
  REQUIRE(parsed.ok());
  target::ChipConfig config = target::loadChip(chip);
  lower::TargetDescription target = lower::describeTarget(config);
  kernels::codegen::TargetInfo codegen = kernels::codegen::TargetInfo::fromChip(config);
  return driver::compileModule(*parsed.modules.at(0), target, codegen).program;
}

// Stats JSON of a timing-mode run with the given HBM and DMA models (their
// names are dropped from the echoed config, the fields that must differ).
struct Run {
  std::string stats;
  bool halted = false;
  int64_t hbmBytes = 0;
};
Run run(const isa::Program& program, target::ChipConfig chip, const char* hbmModel,
        const char* dmaModel) {
  chip.hbm.model = hbmModel;
  chip.dma.model = dmaModel;
  sim::SimOptions o;
  o.functional = false;
  o.dmaFactory = sim::makeChipDma;
  sim::Simulation s(chip, program, o);
  sim::SimResult r = s.run();
  nlohmann::ordered_json j = sim::statsJson(r, chip, sim::RunInfo{"p", "timing"});
  j["chip_config"]["hbm"].erase("model");
  j["chip_config"]["dma"].erase("model");
  return Run{j.dump(1), r.halted, r.dma.hbmBytesRead + r.dma.hbmBytesWritten};
}

// Returns the HBM bytes the program moved.
int64_t compare(const isa::Program& program, const target::ChipConfig& chip) {
  Run detailed = run(program, chip, "detailed", "detailed");
  Run fastHbm = run(program, chip, "fast", "detailed");
  Run fast = run(program, chip, "fast", "fast");
  CHECK(detailed.halted == fastHbm.halted);
  CHECK(detailed.stats == fastHbm.stats);  // the HBM models
  CHECK(fastHbm.halted == fast.halted);
  CHECK(fastHbm.stats == fast.stats);  // the DMA models
  return detailed.hbmBytes;
}

}  // namespace

TEST_CASE("fast and detailed HBM models give the same stats on compiled model traces",
          "[hbm][programs]") {
  for (const char* chip : {"v5e", "v4"}) {
    for (const char* trace :
         {"llama_micro_prefill.hlo", "llama_micro_decode.hlo", "llama_micro_gqa_prefill.hlo"}) {
      INFO(trace << " on " << chip);
      isa::Program p = compileTrace(trace, chip);
      CHECK(compare(p, target::loadChip(chip)) > (1 << 16));  // real HBM traffic
    }
  }
}

TEST_CASE("fast and detailed HBM models give the same stats on the regression programs",
          "[hbm][programs]") {
  std::vector<std::string> files;
  for (const char* dir : {"isa/samples", "testbench/regression/cycles/programs"})
    for (const auto& e : std::filesystem::directory_iterator(source(dir)))
      if (e.path().extension() == ".s") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 3);
  int64_t bytes = 0;
  for (const char* chip : {"v5e", "v5p", "tiny16"}) {
    for (const std::string& f : files) {
      INFO(f << " on " << chip);
      std::ifstream in(f);
      std::stringstream text;
      text << in.rdbuf();
      isa::Program p;
      std::vector<isa::Diagnostic> errors;
      REQUIRE(isa::assemble(text.str(), f, &p, &errors));
      bytes += compare(p, target::loadChip(chip));
    }
  }
  CHECK(bytes > 0);
}

TEST_CASE("fast and detailed HBM models agree on a compiled trace under HBM pressure",
          "[hbm][programs]") {
  // Real DMA traffic (several queues, whole and partial channel lines) with
  // shallow scheduler queues (back-pressure into the FIFO), frequent refresh
  // and a low starvation limit (row conflicts served out of order).
  isa::Program p = compileTrace("llama_micro_decode.hlo", "v5e");
  struct Variant {
    const char* refresh;
    int64_t queueDepth, starvation, tREFI;
  };
  for (Variant v : {Variant{"all_bank", 4, 2, 1200}, Variant{"per_bank", 2, 1, 800}}) {
    INFO(v.refresh << " queue " << v.queueDepth << " starvation " << v.starvation << " tREFI "
                   << v.tREFI);
    target::ChipConfig chip = target::loadChip("v5e");
    chip.hbm.refresh = v.refresh;
    chip.hbm.queue_depth = v.queueDepth;
    chip.hbm.starvation_limit = v.starvation;
    chip.hbm.tREFI = v.tREFI;
    chip.hbm.tRFC = std::min<int64_t>(chip.hbm.tRFC, v.tREFI / 2);
    chip.hbm.tRFCsb = std::min<int64_t>(chip.hbm.tRFCsb, v.tREFI / 4);
    CHECK(compare(p, chip) > (1 << 16));
  }
}
