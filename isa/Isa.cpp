#include "isa/Isa.h"

#include <array>

namespace tpusim::isa {

std::optional<Opcode> opcodeFromMnemonic(std::string_view mnemonic) {
  for (int i = 1; i < kNumOpcodes; ++i)
    if (kOpcodeTable[i].mnemonic == mnemonic) return kOpcodeTable[i].op;
  return std::nullopt;
}

std::optional<Opcode> opcodeFromSlotOpcode(SlotKind kind, int slotOpcode) {
  // Slot-local numbers are dense per slot, so a small per-slot index suffices.
  static const auto index = [] {
    std::array<std::array<Opcode, 256>, kNumSlotKinds> t{};
    for (int i = 1; i < kNumOpcodes; ++i)
      t[static_cast<int>(kOpcodeTable[i].slot)][kOpcodeTable[i].slotOpcode] = kOpcodeTable[i].op;
    return t;
  }();
  if (slotOpcode <= 0 || slotOpcode > 255) return std::nullopt;
  Opcode op = index[static_cast<int>(kind)][slotOpcode];
  if (op == Opcode::Nop) return std::nullopt;
  return op;
}

}  // namespace tpusim::isa
