// Faults the assembler cannot produce (it rejects them), built as Programs
// directly: two writes to one register, an op in a slot of another kind.
// Each must fault when the bundle is reached, naming the bundle and slot.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "testbench/unit/core/CoreHarness.h"

using namespace tpusim;
using namespace tpusim::testing;
using isa::Opcode;
using isa::SlotKind;

namespace {
isa::Program withBundle(const isa::Bundle& bad) {
  isa::Program p;
  isa::Bundle first;
  first.slot(SlotKind::VectorAlu, 0).op = Opcode::VIotaLane;
  first.slot(SlotKind::VectorAlu, 0).operands[0] = 1;
  isa::Bundle halt;
  halt.slot(SlotKind::Misc, 0).op = Opcode::Halt;
  p.code = {first, bad, halt};
  p.debugMap.push_back({1, 2, "the_op", "", "k.py", 3});
  return p;
}
RunSpec spec() {
  RunSpec s;
  s.dma = sim::makeChipDma;
  return s;
}
}  // namespace

TEST_CASE("two writes to one register in a bundle fault at that bundle", "[core][fault]") {
  isa::Bundle b;
  b.slot(SlotKind::VectorAlu, 0).op = Opcode::VMov;
  b.slot(SlotKind::VectorAlu, 0).operands = {7, 1};
  b.slot(SlotKind::VectorAlu, 1).op = Opcode::VIotaSub;
  b.slot(SlotKind::VectorAlu, 1).operands = {7};
  auto r = runProgram(preset("v5e"), withBundle(b), spec());
  REQUIRE(r.fault);
  CHECK(r.fault->kind == "invalid-bundle");
  CHECK(r.fault->message == "two writes to one register (v7) in one bundle");
  CHECK(r.fault->bundle == 1);
  CHECK(r.fault->cycle == 1);
  CHECK(r.fault->slot == "valu1");
  CHECK(r.fault->opName == "the_op");
  CHECK_FALSE(r.halted);
}

TEST_CASE("an op in a slot of another kind faults", "[core][fault]") {
  isa::Bundle b;
  b.slots[isa::firstSlotInstance(SlotKind::Scalar)].op = Opcode::VMov;  // a valu op in scalar0
  auto r = runProgram(preset("v5e"), withBundle(b), spec());
  REQUIRE(r.fault);
  CHECK(r.fault->kind == "invalid-bundle");
  CHECK(r.fault->message == "vmov is not a scalar op");
  CHECK(r.fault->slot == "scalar0");
}

TEST_CASE("--strict names the op of a bank conflict; stats stop at the fault", "[core][fault]") {
  target::ChipConfig chip = preset("v5e");
  isa::Program p = assembleOrFail(R"(
    vimm v1, 1.0
    vld v2, s0, 0, 32, 255
    halt
  )");
  RunSpec strict = spec();
  strict.strict = true;
  auto r = runProgram(chip, p, strict);
  REQUIRE(r.fault);
  CHECK(r.fault->kind == "strict-hazard");
  CHECK(r.fault->bundle == 1);
  CHECK(r.fault->slot == "vld0");
  CHECK(r.fault->message.find("vmem_bank_conflict") != std::string::npos);
  CHECK(r.cores[0].bundlesIssued == 1);
}

TEST_CASE("a load or store faults on its first VMEM row out of range, in sublane order",
          "[core][fault]") {
  target::ChipConfig chip = preset("v5e");
  const int64_t rows = chip.vmem.rows();
  // From s1 = rows - 2, stride 1: sublane 2 is the first row past the end.
  auto run = [&](const std::string& op) {
    return runProgram(chip, assembleOrFail(fmt::format("sli s1, {}\n {}\n halt\n", rows - 2, op)),
                      spec());
  };
  auto load = run("vld v2, s1, 0, 1, 254");
  REQUIRE(load.fault);
  CHECK(load.fault->kind == "vmem-out-of-bounds");
  CHECK(load.fault->message ==
        fmt::format("vector load of VMEM row {} (sublane 2) is out of bounds (VMEM has {} rows)",
                    rows, rows));
  auto store = run("vst v1, s1, 0, 1, 255");
  REQUIRE(store.fault);
  CHECK(store.fault->message ==
        fmt::format("vector store to VMEM row {} (sublane 2) is out of bounds (VMEM has {} rows)",
                    rows, rows));
  // A negative row (the offset below the base) is the first sublane's.
  auto below = run("vld v2, s0, -1, 1, 255");
  REQUIRE(below.fault);
  CHECK(below.fault->message.find("row -1 (sublane 0)") != std::string::npos);
  // Masked-off sublanes are not rows: only sublanes 0 and 1, both in range.
  auto masked = run("vld v2, s1, 0, 1, 3");
  CHECK_FALSE(masked.fault);
}
