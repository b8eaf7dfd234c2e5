#include "isa/Rules.h"

#include <fmt/format.h>

namespace tpusim::isa {

namespace {
// A register class's limit must fit its field, or the decoder could produce
// indices the rest of the toolchain rejects.
constexpr int registerLimit(OperandClass cls) {
  switch (cls) {
    case OperandClass::ScalarReg:
      return kNumScalarRegs;
    case OperandClass::VectorReg:
      return kMaxVectorRegs;
    case OperandClass::MaskReg:
      return kNumMaskRegs;
    case OperandClass::Flag:
      return kMaxSyncFlags;
    case OperandClass::Mxu:
      return kMaxMxus;
    case OperandClass::Acc:
      return kMaxAccSlots;
    case OperandClass::Queue:
      return kMaxDmaQueues;
    default:
      return 0;
  }
}

constexpr bool limitsFitFields() {
  for (int i = 0; i < kNumOperandKinds; ++i) {
    const OperandInfo& info = operandInfo(OperandKind(i));
    int limit = registerLimit(info.cls);
    if (limit > 0 && (info.bits >= 31 || limit > (1 << info.bits))) return false;
    if ((info.cls == OperandClass::Imm32 || info.cls == OperandClass::Target) &&
        (1 << info.bits) < kNumSharedImms)
      return false;
  }
  return true;
}
static_assert(limitsFitFields(), "a register limit does not fit its operand field");

const char* className(OperandClass cls) {
  switch (cls) {
    case OperandClass::ScalarReg:
      return "scalar register";
    case OperandClass::VectorReg:
      return "vector register";
    case OperandClass::MaskReg:
      return "mask register";
    case OperandClass::Flag:
      return "sync flag";
    case OperandClass::Mxu:
      return "MXU";
    case OperandClass::Acc:
      return "MXU result slot";
    case OperandClass::Queue:
      return "DMA queue";
    case OperandClass::Simm:
      return "signed immediate";
    case OperandClass::Uimm:
      return "unsigned immediate";
    case OperandClass::Imm32:
      return "32-bit immediate";
    case OperandClass::Target:
      return "branch target";
  }
  return "operand";
}
}  // namespace

OperandRange operandRange(OperandKind kind) {
  const OperandInfo& info = operandInfo(kind);
  switch (info.cls) {
    case OperandClass::Simm:
      return {-(int64_t(1) << (info.bits - 1)), (int64_t(1) << (info.bits - 1)) - 1};
    case OperandClass::Uimm:
      return {0, (int64_t(1) << info.bits) - 1};
    case OperandClass::Imm32:
    case OperandClass::Target:
      return {0, int64_t(0xFFFFFFFFu)};
    default:
      return {0, registerLimit(info.cls) - 1};
  }
}

std::string describeOperand(OperandKind kind) {
  const OperandInfo& info = operandInfo(kind);
  OperandRange r = operandRange(kind);
  if (!info.prefix.empty())
    return fmt::format("{} ({}{}..{}{})", className(info.cls), info.prefix, r.min, info.prefix,
                       r.max);
  if (info.cls == OperandClass::Simm || info.cls == OperandClass::Uimm)
    return fmt::format("{}-bit {} ({}..{})", info.bits, className(info.cls), r.min, r.max);
  return className(info.cls);
}

std::string describeOperandWithArticle(OperandKind kind) {
  std::string d = describeOperand(kind);
  // "an" before a vowel sound: vowels, "MXU" (em-), "8-bit", "11-", "18-".
  bool an = std::string_view("aeiouAEIOU").find(d[0]) != std::string_view::npos ||
            d.rfind("MXU", 0) == 0 || d.rfind("8-", 0) == 0 || d.rfind("11-", 0) == 0 ||
            d.rfind("18-", 0) == 0;
  return (an ? "an " : "a ") + d;
}

std::string slotInstanceName(int instance) {
  const SlotInstance& s = kSlotLayout[instance];
  return fmt::format("{}{}", slotInfo(s.kind).name, s.index);
}

std::string checkInstruction(const Instruction& inst, int instance) {
  const SlotInstance& slot = kSlotLayout[instance];
  if (inst.op == Opcode::Nop) return "";
  if (static_cast<int>(inst.op) >= kNumOpcodes)
    return fmt::format("slot {}: invalid opcode number {}", slotInstanceName(instance),
                       static_cast<int>(inst.op));
  const OpcodeInfo& info = inst.info();
  if (info.slot != slot.kind)
    return fmt::format("slot {}: '{}' belongs in a {} slot", slotInstanceName(instance),
                       info.mnemonic, slotInfo(info.slot).name);
  for (int i = 0; i < info.numOperands; ++i) {
    OperandRange r = operandRange(info.operands[i]);
    if (inst.operands[i] < r.min || inst.operands[i] > r.max)
      return fmt::format("slot {}: '{}' operand {} is {}, outside the range of {}",
                         slotInstanceName(instance), info.mnemonic, i + 1, inst.operands[i],
                         describeOperandWithArticle(info.operands[i]));
  }
  return "";
}

bool isBranch(Opcode op) {
  return op != Opcode::Nop && opcodeInfo(op).latency == LatencyClass::Branch;
}

std::vector<RegisterRef> writtenRegisters(const Instruction& inst) {
  std::vector<RegisterRef> regs;
  if (inst.empty()) return regs;
  const OpcodeInfo& info = inst.info();
  for (int i = 0; i < info.numOperands; ++i) {
    const OperandInfo& op = operandInfo(info.operands[i]);
    if (op.access == Access::Write || op.access == Access::ReadWrite)
      regs.push_back({op.cls, inst.operands[i]});
  }
  return regs;
}

std::string registerName(const RegisterRef& reg) {
  const char* prefix = reg.cls == OperandClass::ScalarReg   ? "s"
                       : reg.cls == OperandClass::VectorReg ? "v"
                       : reg.cls == OperandClass::MaskReg   ? "m"
                                                            : "?";
  return fmt::format("{}{}", prefix, reg.index);
}

std::vector<std::string> checkBundleRules(const Bundle& b) {
  std::vector<std::string> problems;
  std::vector<std::pair<RegisterRef, int>> writes;
  int branchSlot = -1;
  for (int i = 0; i < kNumSlotInstances; ++i) {
    const Instruction& inst = b.slots[i];
    for (const RegisterRef& reg : writtenRegisters(inst)) {
      for (const auto& [earlier, slot] : writes)
        if (earlier == reg)
          problems.push_back(fmt::format("register {} is written by both {} and {}",
                                         registerName(reg), slotInstanceName(slot),
                                         slotInstanceName(i)));
      writes.push_back({reg, i});
    }
    if (isBranch(inst.op)) {
      if (branchSlot >= 0)
        problems.push_back(fmt::format("two branches in one bundle ({} and {})",
                                       slotInstanceName(branchSlot), slotInstanceName(i)));
      else
        branchSlot = i;
    }
  }
  return problems;
}

}  // namespace tpusim::isa
