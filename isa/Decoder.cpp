#include "isa/Decoder.h"

#include <fmt/format.h>

#include "isa/BitField.h"
#include "isa/Rules.h"

namespace tpusim::isa {

namespace {
bool fail(std::string* error, std::string message) {
  *error = std::move(message);
  return false;
}

}  // namespace

bool tryDecode(const uint8_t* bytes, Bundle* out, std::string* error) {
  Bundle b;
  uint32_t imms[kNumSharedImms];
  for (int i = 0; i < kNumSharedImms; ++i)
    imms[i] = uint32_t(bits::get(bytes, kImmFieldsBitStart + i * kImmFieldBits, kImmFieldBits));
  int usedImms = 0;

  for (int s = 0; s < kNumSlotInstances; ++s) {
    const SlotInstance& slot = kSlotLayout[s];
    int pos = slot.bitStart;
    int slotOpcode = int(bits::get(bytes, pos, kOpcodeFieldBits));
    if (slotOpcode == 0) {
      if (!bits::allZero(bytes, pos, slot.bits))
        return fail(error, fmt::format("slot {} is empty (opcode 0) but its operand bits are not "
                                       "zero",
                                       slotInstanceName(s)));
      continue;
    }
    std::optional<Opcode> op = opcodeFromSlotOpcode(slot.kind, slotOpcode);
    if (!op)
      return fail(error, fmt::format("slot {}: unknown opcode {} for a {} slot",
                                     slotInstanceName(s), slotOpcode, slotInfo(slot.kind).name));
    Instruction& inst = b.slots[s];
    inst.op = *op;
    const OpcodeInfo& info = opcodeInfo(*op);
    pos += kOpcodeFieldBits;
    for (int i = 0; i < info.numOperands; ++i) {
      const OperandInfo& operand = operandInfo(info.operands[i]);
      uint64_t field = bits::get(bytes, pos, operand.bits);
      pos += operand.bits;
      switch (operand.cls) {
        case OperandClass::Simm: {
          int64_t v = int64_t(field);
          if (v >> (operand.bits - 1)) v -= int64_t(1) << operand.bits;
          inst.operands[i] = v;
          break;
        }
        case OperandClass::Imm32:
        case OperandClass::Target: {
          int idx = int(field);
          if (idx >= kNumSharedImms || idx > usedImms)
            return fail(error,
                        fmt::format("slot {}: '{}' operand {} refers to shared immediate {}, but "
                                    "the next unused one is {} (immediates are allocated in "
                                    "slot order)",
                                    slotInstanceName(s), info.mnemonic, i + 1, idx, usedImms));
          if (idx == usedImms) {
            for (int j = 0; j < usedImms; ++j)
              if (imms[j] == imms[idx])
                return fail(error, fmt::format("slot {}: shared immediates {} and {} both hold "
                                               "0x{:x} (equal values must share one field)",
                                               slotInstanceName(s), j, idx, imms[idx]));
            ++usedImms;
          }
          inst.operands[i] = int64_t(imms[idx]);
          break;
        }
        default:
          inst.operands[i] = int64_t(field);
      }
    }
    int end = slot.bitStart + slot.bits;
    if (!bits::allZero(bytes, pos, end - pos))
      return fail(
          error,
          fmt::format("slot {}: '{}' leaves bits {}..{} of the slot unused, but they "
                      "are not zero",
                      slotInstanceName(s), info.mnemonic, pos - slot.bitStart, slot.bits - 1));
    std::string problem = checkInstruction(inst, s);
    if (!problem.empty()) return fail(error, problem);
  }
  for (int i = usedImms; i < kNumSharedImms; ++i)
    if (imms[i] != 0)
      return fail(error, fmt::format("shared immediate {} is not used by any slot but holds 0x{:x}",
                                     i, imms[i]));
  int padStart = kImmFieldsBitStart + kNumSharedImms * kImmFieldBits;
  if (!bits::allZero(bytes, padStart, kBundleBits - padStart))
    return fail(error, fmt::format("padding bits {}..{} of the bundle are not zero", padStart,
                                   kBundleBits - 1));
  *out = b;
  return true;
}

Bundle decode(const EncodedBundle& bytes) {
  Bundle b;
  std::string error;
  if (!tryDecode(bytes.data(), &b, &error)) throw IsaError(error);
  return b;
}

}  // namespace tpusim::isa
