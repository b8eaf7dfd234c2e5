#include "isa/Encoder.h"

#include <fmt/format.h>

#include "isa/BitField.h"
#include "isa/Rules.h"

namespace tpusim::isa {

namespace {
bool usesSharedImm(OperandKind k) {
  OperandClass c = operandInfo(k).cls;
  return c == OperandClass::Imm32 || c == OperandClass::Target;
}
}  // namespace

int allocateSharedImmediates(const Bundle& b, std::array<uint32_t, kNumSharedImms>* values,
                             std::string* error) {
  values->fill(0);
  int count = 0;
  for (int s = 0; s < kNumSlotInstances; ++s) {
    const Instruction& inst = b.slots[s];
    if (inst.empty()) continue;
    const OpcodeInfo& info = inst.info();
    for (int i = 0; i < info.numOperands; ++i) {
      if (!usesSharedImm(info.operands[i])) continue;
      uint32_t v = static_cast<uint32_t>(inst.operands[i]);
      bool seen = false;
      for (int j = 0; j < count && !seen; ++j) seen = (*values)[j] == v;
      if (seen) continue;
      if (count == kNumSharedImms) {
        *error = fmt::format(
            "more than {} distinct 32-bit immediates in one bundle (slot {} needs 0x{:x})",
            kNumSharedImms, slotInstanceName(s), v);
        return -1;
      }
      (*values)[count++] = v;
    }
  }
  return count;
}

bool tryEncode(const Bundle& b, EncodedBundle* out, std::string* error) {
  for (int s = 0; s < kNumSlotInstances; ++s) {
    if (b.slots[s].empty()) continue;  // an empty slot is always valid
    std::string problem = checkInstruction(b.slots[s], s);
    if (!problem.empty()) {
      *error = problem;
      return false;
    }
  }
  std::array<uint32_t, kNumSharedImms> imms;
  int numImms = allocateSharedImmediates(b, &imms, error);
  if (numImms < 0) return false;

  out->fill(0);
  uint8_t* bytes = out->data();
  for (int s = 0; s < kNumSlotInstances; ++s) {
    const Instruction& inst = b.slots[s];
    if (inst.empty()) continue;
    const OpcodeInfo& info = inst.info();
    int pos = kSlotLayout[s].bitStart;
    bits::set(bytes, pos, kOpcodeFieldBits, uint64_t(info.slotOpcode));
    pos += kOpcodeFieldBits;
    for (int i = 0; i < info.numOperands; ++i) {
      OperandKind kind = info.operands[i];
      int width = operandBits(kind);
      uint64_t field;
      if (usesSharedImm(kind)) {
        field = 0;
        while (imms[field] != static_cast<uint32_t>(inst.operands[i])) ++field;
      } else {
        // Two's complement truncation to the field keeps signed immediates.
        field = static_cast<uint64_t>(inst.operands[i]) & ((uint64_t(1) << width) - 1);
      }
      bits::set(bytes, pos, width, field);
      pos += width;
    }
  }
  for (int i = 0; i < numImms; ++i)
    bits::set(bytes, kImmFieldsBitStart + i * kImmFieldBits, kImmFieldBits, imms[i]);
  return true;
}

EncodedBundle encode(const Bundle& b) {
  EncodedBundle out;
  std::string error;
  if (!tryEncode(b, &out, &error)) throw IsaError(error);
  return out;
}

}  // namespace tpusim::isa
