// The fast issue loop (jumps over stalls, meets SystemC only at interactions)
// against the per-cycle reference (one SystemC wait per cycle): identical
// cycles and identical stats. Also: functional and timing-only modes agree,
// and two runs of one program give identical stats.
#include <catch2/catch.hpp>

#include "sim/chip/RunReport.h"
#include "testbench/unit/core/CoreHarness.h"
#include "testbench/unit/core/MatmulProgram.h"

using namespace tpusim;
using namespace tpusim::testing;

namespace {

std::string statsOf(const sim::SimResult& r, const sim::ChipConfig& chip) {
  sim::RunInfo info{"p", "any"};
  return sim::statsJson(r, chip, info).dump(1);
}

// A loop with every kind of stall: operands, branch, bank conflicts, EUP,
// XLU, MXU ports and results, DMA queue and sync waits.
const char* kMixed = R"(
.buffer x, shape=[64,128], dtype=f32, space=hbm, addr=0x0, role=input
.dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=32768
.dma_descriptor 16, src=vmem:0x0, dst=hbm:0x10000, inner=4096
  sli s1, 0 ;; sli s2, 16
  sli s5, 6
  dma s1, f0, q0
  sync.wait f0, 1
top:
  vld v1, s0, 0, 32, 255
  vld v2, s0, 1, 1, 255 ;; vexp.f32 v3, v1
  vadd.f32 v4, v2, v2
  vtanh.f32 v5, v4
  xlu.sum.f32 v6, v3
  xlu.max.f32 v7, v5 ;; mxu.wpush.bf16 mxu0, v1
  mxu.wpush.bf16 mxu0, v2
  mxu.latch mxu0
  mxu.mm.bf16 mxu0, v2, a1
  mxu.pop v8, mxu0, a1
  vst v8, s0, 16, 1, 255
  dma s2, f1, q2
  dma s2, f1, q2
  loop s5, top
  sync.wait f1, 12
  halt
)";

}  // namespace

TEST_CASE("the fast loop and the per-cycle reference agree exactly", "[core][equivalence]") {
  for (std::string name : {"v5e", "v4", "tiny16"}) {
    sim::ChipConfig chip = preset(name);
    chip.dma.queue_depth = 1;  // make the second dma of each iteration wait for the first
    std::vector<std::string> programs = {kMixed};
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
  sim::ChipConfig chip = preset("v5e");
  for (const std::string& text : {std::string(kMixed), matmulProgram(MatmulShape{})}) {
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
  sim::ChipConfig chip = preset("v5p");  // two cores sharing HBM
  isa::Program p = assembleOrFail(kMixed);
  RunSpec spec;
  spec.dma = sim::makeChipDma;
  auto a = runProgram(chip, p, spec);
  auto b = runProgram(chip, p, spec);
  REQUIRE(a.halted);
  REQUIRE(a.cores.size() == size_t(chip.core.cores));
  CHECK(statsOf(a, chip) == statsOf(b, chip));
}
