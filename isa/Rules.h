// What makes an operand, an instruction and a bundle valid, from the tables:
// operand value ranges (field width and the kNum*/kMax* machine limits), slot
// placement, and the bundle rules of isa/README.md that the encoding alone
// cannot enforce (one write per register, one branch per bundle).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Bundle.h"

namespace tpusim::isa {

// The inclusive range of values an operand of this kind may hold in an
// Instruction (Imm32 and Target: 0 .. 2^32-1, the zero-extended bits).
struct OperandRange {
  int64_t min, max;
};
OperandRange operandRange(OperandKind kind);

// "scalar register (s0..s31)", "signed 16-bit immediate (-32768..32767)", ...
std::string describeOperand(OperandKind kind);

// describeOperand with "a" or "an" in front: "an 8-bit unsigned immediate (0..255)".
std::string describeOperandWithArticle(OperandKind kind);

// "valu1", "misc0": the name of slot instance `instance` (index into kSlotLayout).
std::string slotInstanceName(int instance);

// Checks an instruction for slot instance `instance`: opcode known and of the
// slot's kind, every operand within its range. Returns "" when valid.
std::string checkInstruction(const Instruction& inst, int instance);

// True for the opcodes of the Branch latency class (jmp, br.*, loop).
bool isBranch(Opcode op);

// A register an instruction writes, for the one-write-per-register rule.
struct RegisterRef {
  OperandClass cls;  // ScalarReg, VectorReg or MaskReg
  int64_t index;
  bool operator==(const RegisterRef& o) const { return cls == o.cls && index == o.index; }
};
std::vector<RegisterRef> writtenRegisters(const Instruction& inst);
std::string registerName(const RegisterRef& reg);  // "s3", "v12", "m2"

// Bundle rules beyond the encoding (isa/README.md, "Issue and timing rules"):
// no register written twice, at most one branch. Returns one message per
// violation (empty when the bundle is fine).
std::vector<std::string> checkBundleRules(const Bundle& b);

}  // namespace tpusim::isa
