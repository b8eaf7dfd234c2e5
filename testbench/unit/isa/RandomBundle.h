// Random valid bundles for the property tests: every slot filled with some
// probability, operands drawn with a bias to the edges of their ranges, and
// the assembler's bundle rules respected (at most kNumSharedImms distinct
// immediates, one write per register, one branch).
#pragma once

#include <random>
#include <vector>

#include "isa/Bundle.h"
#include "isa/Rules.h"

namespace tpusim::isa::testing {

inline int64_t randomOperand(OperandKind kind, std::mt19937_64& rng) {
  OperandRange r = operandRange(kind);
  switch (rng() % 4) {
    case 0:
      return r.min;
    case 1:
      return r.max;
    default:
      return r.min + int64_t(rng() % uint64_t(r.max - r.min + 1));
  }
}

inline std::vector<Opcode> opcodesOfSlot(SlotKind kind) {
  std::vector<Opcode> ops;
  for (int i = 1; i < kNumOpcodes; ++i)
    if (kOpcodeTable[i].slot == kind) ops.push_back(kOpcodeTable[i].op);
  return ops;
}

inline Bundle randomBundle(std::mt19937_64& rng, double fill = 0.6) {
  static const auto slotOps = [] {
    std::vector<std::vector<Opcode>> t(kNumSlotKinds);
    for (int k = 0; k < kNumSlotKinds; ++k) t[k] = opcodesOfSlot(SlotKind(k));
    return t;
  }();
  Bundle b;
  std::vector<uint32_t> imms;
  std::vector<RegisterRef> written;
  bool branch = false;
  std::uniform_real_distribution<double> u(0, 1);
  for (int s = 0; s < kNumSlotInstances; ++s) {
    if (u(rng) >= fill) continue;
    const auto& ops = slotOps[int(kSlotLayout[s].kind)];
    Instruction inst;
    inst.op = ops[rng() % ops.size()];
    if (isBranch(inst.op) && branch) continue;
    const OpcodeInfo& info = inst.info();
    bool ok = true;
    std::vector<uint32_t> newImms = imms;
    for (int i = 0; i < info.numOperands && ok; ++i) {
      OperandKind k = info.operands[i];
      OperandClass cls = operandInfo(k).cls;
      int64_t v = randomOperand(k, rng);
      if (cls == OperandClass::Imm32 || cls == OperandClass::Target) {
        // Reuse an earlier value now and then, so deduplication is exercised.
        if (!newImms.empty() && rng() % 3 == 0) v = newImms[rng() % newImms.size()];
        bool seen = false;
        for (uint32_t x : newImms) seen |= x == uint32_t(v);
        if (!seen) {
          if (int(newImms.size()) == kNumSharedImms) {
            v = newImms[rng() % newImms.size()];
          } else {
            newImms.push_back(uint32_t(v));
          }
        }
      }
      inst.operands[i] = v;
    }
    std::vector<RegisterRef> regs = writtenRegisters(inst);
    for (size_t i = 0; i < regs.size() && ok; ++i) {
      for (const RegisterRef& w : written) ok &= !(w == regs[i]);
      for (size_t j = 0; j < i; ++j) ok &= !(regs[j] == regs[i]);
    }
    if (!ok) continue;
    for (const RegisterRef& r : regs) written.push_back(r);
    imms = newImms;
    branch |= isBranch(inst.op);
    b.slots[s] = inst;
  }
  return b;
}

}  // namespace tpusim::isa::testing
