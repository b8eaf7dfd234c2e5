// The decoded form of a bundle: what the assembler produces, the encoder
// packs, the decoder returns and the simulator executes.
#pragma once

#include <array>
#include <cstdint>

#include "isa/Isa.h"

namespace tpusim::isa {

// One operation in one slot. Operand values by class:
//   registers, flags, MXU/acc/queue indices: the index;
//   Simm: the sign-extended value; Uimm: the value;
//   Imm32 / Target: the 32-bit value itself (stored zero-extended), not the
//   shared-immediate index, which is an encoding detail.
struct Instruction {
  Opcode op = Opcode::Nop;
  std::array<int64_t, kMaxOperands> operands{};

  bool empty() const { return op == Opcode::Nop; }
  const OpcodeInfo& info() const { return opcodeInfo(op); }
  bool operator==(const Instruction& o) const {
    if (op != o.op) return false;
    for (int i = 0; i < info().numOperands; ++i)
      if (operands[i] != o.operands[i]) return false;
    return true;
  }
  bool operator!=(const Instruction& o) const { return !(*this == o); }
};

// A bundle: one Instruction per slot instance, indexed like kSlotLayout.
struct Bundle {
  std::array<Instruction, kNumSlotInstances> slots{};

  bool operator==(const Bundle& o) const { return slots == o.slots; }
  bool operator!=(const Bundle& o) const { return !(*this == o); }
  Instruction& slot(SlotKind kind, int index) { return slots[firstSlotInstance(kind) + index]; }
  const Instruction& slot(SlotKind kind, int index) const {
    return slots[firstSlotInstance(kind) + index];
  }
};

using EncodedBundle = std::array<uint8_t, kBundleBytes>;

}  // namespace tpusim::isa
