// Per-unit latency and throughput of the TensorCore: every expected number is
// computed from the preset's parameters, so a preset change moves the
// expectation with it.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/core/DecodedProgram.h"
#include "testbench/unit/core/CoreHarness.h"
#include "testbench/unit/core/FakeDma.h"

using namespace tpusim;
using namespace tpusim::testing;
using isa::LatencyClass;
using sim::StallCause;

namespace {
RunSpec timingSpec() {
  RunSpec s;
  s.dma = fakeDmaFactory();
  return s;
}
}  // namespace

TEST_CASE("a dependent VPU chain waits the vpu_alu latency per link", "[core][timing]") {
  for (std::string name : {"v5e", "v4"}) {
    target::ChipConfig chip = preset(name);
    auto r = runProgram(chip, assembleOrFail(R"(
      vimm v1, 1.0
      vadd.f32 v2, v1, v1
      vadd.f32 v3, v2, v2
      halt
    )"),
                        timingSpec());
    INFO(name);
    REQUIRE(r.halted);
    int64_t L = lat(chip, LatencyClass::VectorAlu);
    CHECK(r.cycles == 2 * L + 2);
    CHECK(stall(r, StallCause::OperandNotReady) == 2 * (L - 1));
    CHECK(r.cores[0].bundlesIssued == 4);
  }
}

TEST_CASE("a write waits for an older write to the same register (WAW)", "[core][timing]") {
  target::ChipConfig chip = preset("v5e");
  auto r = runProgram(chip, assembleOrFail(R"(
    xlu.sum.f32 v1, v0
    vimm v1, 2.0
    halt
  )"),
                      timingSpec());
  int64_t Lr = lat(chip, LatencyClass::XluReduce);
  CHECK(r.cycles == Lr + 2);
  CHECK(stall(r, StallCause::OperandNotReady) == Lr - 1);
}

TEST_CASE("the transcendental unit accepts one op per transcendental_interval", "[core][timing]") {
  target::ChipConfig chip = preset("v5e");
  auto r = runProgram(chip, assembleOrFail(R"(
    vexp.f32 v1, v0
    vtanh.f32 v2, v0
    halt
  )"),
                      timingSpec());
  int64_t I = chip.vpu.transcendental_interval;
  CHECK(r.cycles == I + 2);
  CHECK(stall(r, StallCause::VpuBusy) == I - 1);
}

TEST_CASE("XLU reductions occupy one of the XLUs for reduce_interval", "[core][timing]") {
  target::ChipConfig chip = preset("v5e");
  int64_t X = chip.xlu.count, R = chip.xlu.reduce_interval;
  REQUIRE(R > X);
  std::string text;
  for (int64_t i = 0; i <= X; ++i) text += fmt::format("xlu.sum.f32 v{}, v0\n", i + 1);
  text += "halt\n";
  auto r = runProgram(chip, assembleOrFail(text), timingSpec());
  // The first X go out on consecutive cycles, the next waits for XLU 0.
  CHECK(r.cycles == R + 2);
  CHECK(stall(r, StallCause::XluBusy) == R - X);
}

TEST_CASE("a counted loop pays the branch penalty per taken branch", "[core][timing]") {
  for (std::string name : {"v5e", "v5p"}) {
    target::ChipConfig chip = preset(name);
    const int64_t n = 10;
    auto r = runProgram(chip,
                        assembleOrFail(fmt::format(R"(
      sli s1, {}
    top:
      loop s1, top
      halt
    )",
                                                   n)),
                        timingSpec());
    INFO(name);
    int64_t La = lat(chip, LatencyClass::ScalarAlu), Lb = lat(chip, LatencyClass::Branch);
    int64_t P = chip.core.branch_penalty;
    int64_t spacing = std::max(1 + P, Lb);
    int64_t lastLoop = La + (n - 1) * spacing;
    CHECK(r.cycles == lastLoop + 2);
    CHECK(stall(r, StallCause::Branch) == (n - 1) * P);
    CHECK(r.cores[0].bundlesIssued == 1 + n + 1);
  }
}

TEST_CASE("k rows of one VMEM bank in one bundle cost k - 1 cycles", "[core][timing]") {
  target::ChipConfig chip = preset("v5e");
  int64_t B = chip.vmem.banks;
  REQUIRE(B >= 8);
  auto r = runProgram(chip,
                      assembleOrFail(fmt::format(R"(
    vld v1, s0, 0, {}, 255
    vld v2, s0, 0, 1, 255 ;; vld v3, s0, 8, 1, 255
    halt
  )",
                                                 B)),
                      timingSpec());
  // Bundle 0: 8 rows in bank 0 (7 extra); bundle 1: rows 0..15 over 16 banks: none.
  CHECK(stall(r, StallCause::VmemBankConflict) == 7);
  CHECK(r.cycles == 7 + 3);
  // Loads in different bundles never conflict; two loads of the same rows do.
  auto same = runProgram(chip, assembleOrFail(R"(
    vld v2, s0, 0, 1, 255 ;; vld v3, s0, 0, 1, 255
    halt
  )"),
                         timingSpec());
  CHECK(stall(same, StallCause::VmemBankConflict) == 0);  // the same row is read once
  auto two = runProgram(chip,
                        assembleOrFail(fmt::format(R"(
    vld v2, s0, 0, 1, 255 ;; vld v3, s0, {}, 1, 255
    halt
  )",
                                                   B)),
                        timingSpec());
  CHECK(stall(two, StallCause::VmemBankConflict) == 1);
}

TEST_CASE("a load of a row waits until an earlier store to it is visible", "[core][timing]") {
  target::ChipConfig chip = preset("v5e");
  chip.latency.of(LatencyClass::VectorStore) = 6;
  auto r = runProgram(chip, assembleOrFail(R"(
    vst v0, s0, 40, 1, 1
    vld v1, s0, 33, 1, 255
    halt
  )"),
                      timingSpec());
  // Row 40 is sublane 7 of the load: visible at 0 + 6.
  CHECK(stall(r, StallCause::OperandNotReady) == 5);
  CHECK(r.cycles == 6 + 2);
}

TEST_CASE("an MXU pop waits for the result slot: mm issue + 7 + 2N", "[core][timing][mxu]") {
  for (std::string name : {"v5e", "tiny16"}) {
    target::ChipConfig chip = preset(name);
    int64_t N = chip.mxu.size;
    int64_t pushes = (N + 7) / 8;
    std::string text;
    for (int64_t p = 0; p < pushes; ++p) text += "mxu.wpush.bf16 mxu0, v0\n";
    text += "mxu.latch mxu0\nmxu.mm.bf16 mxu0, v1, a0\nmxu.pop v2, mxu0, a0\nhalt\n";
    auto r = runProgram(chip, assembleOrFail(text), timingSpec());
    INFO(name);
    REQUIRE(r.halted);
    // Pushes every 8 cycles; the latch once every pushed row is written.
    int64_t lastPush = (pushes - 1) * 8;
    int64_t latch = lastPush + 8;
    int64_t mm = latch + 1;
    int64_t pop = mm + 7 + 2 * N;
    CHECK(r.cycles == pop + 2);
    CHECK(stall(r, StallCause::MxuResultNotReady) == pop - (mm + 1));
    CHECK(stall(r, StallCause::MxuBusy) == (pushes - 1) * 7 + (latch - lastPush - 1));
    CHECK(r.cores[0].mxuLhsBusy[0] == 8);
  }
}

TEST_CASE("halt waits for outstanding DMAs; sync.wait for its flag", "[core][timing][dma]") {
  target::ChipConfig chip = preset("v5e");
  const int64_t dmaLatency = 50;
  RunSpec spec;
  spec.dma = fakeDmaFactory(dmaLatency, 512);
  auto r = runProgram(chip, assembleOrFail(R"(
    .dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=512, counts=[8], src_strides=[512], dst_strides=[512]
    sli s1, 0
    dma s1, f3, q0
    sync.wait f3, 1
    halt
  )"),
                      spec);
  REQUIRE(r.halted);
  int64_t La = lat(chip, LatencyClass::ScalarAlu);
  int64_t issue = La;  // dma reads s1 after the scalar latency
  int64_t complete = issue + dmaLatency + 4096 / 512;
  // The flag is visible the cycle after completion.
  CHECK(r.cycles == complete + 1 + 2);
  CHECK(stall(r, StallCause::SyncWait) == complete + 1 - (issue + 1));
}

TEST_CASE("the transpose unit takes one push or pop per interval", "[core][timing][xlu]") {
  target::ChipConfig chip = preset("v5e");
  int64_t push = chip.xlu.transpose_push_interval, pop = chip.xlu.transpose_pop_interval;
  std::string text;
  for (int i = 0; i < 16; ++i) text += "xlu.tr.push v1\n";
  text += "xlu.tr.pop v2\nxlu.tr.pop v3\nvmov v4, v3\nhalt\n";
  auto r = runProgram(chip, assembleOrFail(text), timingSpec());
  REQUIRE(r.halted);
  int64_t firstPop = 16 * push, secondPop = firstPop + pop;
  int64_t use = secondPop + lat(chip, LatencyClass::XluTranspose);
  CHECK(r.cycles == use + 2);
  CHECK(stall(r, StallCause::XluBusy) == 15 * (push - 1) + (push - 1) + (pop - 1));
  CHECK(stall(r, StallCause::OperandNotReady) == use - (secondPop + 1));
}

TEST_CASE("bank conflicts are the same whether loads share a base register or not",
          "[core][timing]") {
  // Loads on one base register use the conflict decoded once (a shift of the
  // base moves every row alike); loads on two registers compute it per issue.
  target::ChipConfig chip = preset("v5e");
  int64_t B = chip.vmem.banks;
  auto run = [&](const std::string& loads) {
    return runProgram(chip,
                      assembleOrFail(fmt::format(R"(
    sli s2, 5 ;; sli s3, {}
    {}
    halt
  )",
                                                 B + 5, loads)),
                      timingSpec());
  };
  auto shared = run(fmt::format("vld v2, s2, 0, 1, 255 ;; vld v3, s2, {}, 1, 255", B));
  auto apart = run("vld v2, s2, 0, 1, 255 ;; vld v3, s3, 0, 1, 255");
  CHECK(stall(shared, StallCause::VmemBankConflict) == 1);
  CHECK(stall(apart, StallCause::VmemBankConflict) == 1);
  CHECK(shared.cycles == apart.cycles);
  auto strided = run(fmt::format("vld v2, s2, 0, {}, 15 ;; vld v3, s2, 1, {}, 240", B, B));
  CHECK(stall(strided, StallCause::VmemBankConflict) == 3);  // 4 rows in each of two banks
}

TEST_CASE("bank conflicts by count table equal the sort-and-run definition", "[core][timing]") {
  // The definition: sort the distinct rows' banks; the longest run of one bank, minus 1.
  auto reference = [](std::vector<int64_t> rows, int64_t banks) {
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    std::vector<int64_t> bank;
    for (int64_t r : rows) bank.push_back(((r % banks) + banks) % banks);
    std::sort(bank.begin(), bank.end());
    int64_t worst = 0, run = 0;
    for (size_t i = 0; i < bank.size(); ++i) {
      run = (i > 0 && bank[i] == bank[i - 1]) ? run + 1 : 0;
      worst = std::max(worst, run);
    }
    return worst;
  };
  std::mt19937_64 rng(13);
  // Both paths: the table (banks <= 64) and the sort (more banks), repeated and negative rows.
  for (int64_t banks : {1, 3, 16, 64, 65, 256}) {
    for (int trial = 0; trial < 400; ++trial) {
      const int n = int(rng() % 25);
      std::vector<int64_t> rows;
      for (int i = 0; i < n; ++i)
        rows.push_back(trial % 2 ? int64_t(rng() % 40) - 8 : int64_t(rng() % 4096));
      std::vector<int64_t> work = rows;
      INFO("banks " << banks << " trial " << trial);
      REQUIRE(sim::bankConflictExtra(work.data(), n, banks) == reference(rows, banks));
    }
  }
}
