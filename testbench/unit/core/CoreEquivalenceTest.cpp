// The fast issue loop (jumps over stalls, meets SystemC only at interactions)
// against the per-cycle reference (one SystemC wait per cycle): identical
// cycles and identical stats. Also: functional and timing-only modes agree,
// and two runs of one program give identical stats.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/chip/RunReport.h"
#include "testbench/unit/core/CoreHarness.h"
#include "testbench/unit/core/MatmulProgram.h"

using namespace tpusim;
using namespace tpusim::testing;

namespace {

std::string statsOf(const sim::SimResult& r, const target::ChipConfig& chip) {
  sim::RunInfo info{"p", "any"};
  return sim::statsJson(r, chip, info).dump(1);
}

// A loop with every kind of stall (operands, branch, bank conflicts, EUP, XLU,
// MXU ports and results, DMA queue and sync waits): the same program the cycle
// goldens track, read from testbench/regression so the two never drift apart.
std::string mixedStallsProgram() {
  std::string path =
      std::string(TPUSIM_TEST_SOURCE_DIR) + "/testbench/regression/cycles/programs/mixed_stalls.s";
  std::ifstream in(path);
  if (!in) FAIL("cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the fast loop and the per-cycle reference agree exactly", "[core][equivalence]") {
  for (std::string name : {"v5e", "v4", "tiny16"}) {
    target::ChipConfig chip = preset(name);
    chip.dma.queue_depth = 1;  // make the second dma of each iteration wait for the first
    std::vector<std::string> programs = {mixedStallsProgram()};
    if (chip.mxu.size == 128) programs.push_back(matmulProgram(MatmulShape{8, 256, 128, false, 1}));
    for (const std::string& text : programs) {
      isa::Program p = assembleOrFail(text);
      RunSpec fast;
      fast.dma = sim::makeChipDma;
      RunSpec stepping = fast;
      stepping.stepping = true;
      auto a = runProgram(chip, p, fast);
      auto b = runProgram(chip, p, stepping);
      INFO(name << (a.fault ? a.fault->report() : "") << (b.fault ? b.fault->report() : ""));
      REQUIRE(a.halted);
      REQUIRE(b.halted);
      CHECK(a.cycles == b.cycles);
      CHECK(statsOf(a, chip) == statsOf(b, chip));
      // The program really stalls on several causes, so the test means something.
      int causes = 0;
      for (int64_t s : a.cores[0].stalls) causes += s > 0;
      CHECK(causes >= 3);
    }
  }
}

TEST_CASE("functional and timing-only runs give identical cycles and stats",
          "[core][equivalence]") {
  target::ChipConfig chip = preset("v5e");
  for (const std::string& text : {mixedStallsProgram(), matmulProgram(MatmulShape{})}) {
    isa::Program p = assembleOrFail(text);
    RunSpec functional;
    functional.dma = sim::makeChipDma;
    RunSpec timing = functional;
    timing.functional = false;
    auto a = runProgram(chip, p, functional);
    auto b = runProgram(chip, p, timing);
    REQUIRE(a.halted);
    REQUIRE(b.halted);
    CHECK(a.cycles == b.cycles);
    CHECK(statsOf(a, chip) == statsOf(b, chip));
    CHECK(a.outputs.size() >= b.outputs.size());
  }
}

TEST_CASE("two runs of one program give identical stats", "[core][equivalence]") {
  target::ChipConfig chip = preset("v5p");  // two cores sharing HBM
  isa::Program p = assembleOrFail(mixedStallsProgram());
  RunSpec spec;
  spec.dma = sim::makeChipDma;
  auto a = runProgram(chip, p, spec);
  auto b = runProgram(chip, p, spec);
  REQUIRE(a.halted);
  REQUIRE(a.cores.size() == size_t(chip.core.cores));
  CHECK(statsOf(a, chip) == statsOf(b, chip));
}
