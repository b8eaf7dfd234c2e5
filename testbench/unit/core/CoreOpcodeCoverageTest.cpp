// Every opcode of isa/Opcodes.def executes in the core: a program generated
// from the table (one op per bundle, operands picked by kind) must halt
// without an "internal" fault in both modes. Adding an opcode without
// simulator semantics fails here. dma.remote and sync.remote need a second
// chip: testbench/unit/system/SystemTest.cpp runs them.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "testbench/unit/core/CoreHarness.h"

using namespace tpusim;
using namespace tpusim::testing;
using isa::OperandKind;

namespace {

std::string operandText(const isa::OpcodeInfo& info, OperandKind kind, int bundle) {
  bool s8 = info.mnemonic.find("s8") != std::string_view::npos;
  bool s8x2 = info.mnemonic.find("s8x2") != std::string_view::npos;
  switch (kind) {
    case OperandKind::SDst:
    case OperandKind::SRw:
      return "s5";
    case OperandKind::SSrc:
      return "s6";  // always 0: SMEM word 0, VMEM row 0, not-taken br.nz
    case OperandKind::VDst:
      return "v5";
    case OperandKind::VSrc:
      return "v6";
    case OperandKind::MDst:
      return "m1";
    case OperandKind::MSrc:
      return "m2";
    case OperandKind::Flag:
      return "f1";
    case OperandKind::Mxu:
      return s8x2 ? "mxu2" : s8 ? "mxu1" : "mxu0";  // keep the weight dtypes apart
    case OperandKind::Acc:
      return "a0";
    case OperandKind::Queue:
      return "q0";
    case OperandKind::Simm16:
      return "64";  // SMEM word / VMEM row 64: away from the descriptor at word 0
    case OperandKind::Uimm16:
      return "0";
    case OperandKind::Uimm8:
      return "1";
    case OperandKind::Imm32:
      return "0";
    case OperandKind::Target:
      return std::to_string(bundle + 1);  // branches go to the next bundle
  }
  return "?";
}

}  // namespace

TEST_CASE("every opcode in the table executes", "[core][coverage]") {
  std::string text =
      ".dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=512\n"
      ".op everything\n";
  int bundle = 0;
  int opcodes = 0;
  for (const isa::OpcodeInfo& info : isa::kOpcodeTable) {
    if (info.op == isa::Opcode::Nop || info.op == isa::Opcode::Halt) continue;
    if (info.op == isa::Opcode::DmaRemote || info.op == isa::Opcode::SyncRemote) continue;
    ++opcodes;
    // The transpose unit pops only a complete block.
    int repeat = info.op == isa::Opcode::XluTrPush ? 16 : 1;
    for (int r = 0; r < repeat; ++r) {
      std::string line = "  " + std::string(info.mnemonic);
      for (int k = 0; k < info.numOperands; ++k)
        line += (k ? ", " : " ") + operandText(info, info.operands[k], bundle);
      text += line + "\n";
      ++bundle;
    }
  }
  text += "  halt\n.endop\n";
  isa::Program p = assembleOrFail(text);
  target::ChipConfig chip = preset("v5e");
  RunSpec functional;
  functional.dma = sim::makeChipDma;
  RunSpec timing = functional;
  timing.functional = false;
  auto a = runProgram(chip, p, functional);
  auto b = runProgram(chip, p, timing);
  INFO(text << (a.fault ? a.fault->report() : "") << (b.fault ? b.fault->report() : ""));
  REQUIRE(a.halted);
  REQUIRE(b.halted);
  CHECK(a.cycles == b.cycles);
  CHECK(opcodes == isa::kNumOpcodes - 4);
  CHECK(a.cores[0].bundlesIssued == bundle + 1);
}
