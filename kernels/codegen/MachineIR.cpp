#include "kernels/codegen/MachineIR.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tpusim::kernels::codegen {

const char* regClassName(RegClass c) {
  switch (c) {
    case RegClass::Scalar:
      return "s";
    case RegClass::Vector:
      return "v";
    case RegClass::Mask:
      return "m";
  }
  return "?";
}

bool regClassOf(isa::OperandKind k, RegClass* out) {
  switch (isa::operandInfo(k).cls) {
    case isa::OperandClass::ScalarReg:
      *out = RegClass::Scalar;
      return true;
    case isa::OperandClass::VectorReg:
      *out = RegClass::Vector;
      return true;
    case isa::OperandClass::MaskReg:
      *out = RegClass::Mask;
      return true;
    default:
      return false;
  }
}

bool MInstr::barrier() const {
  if (waitRegion >= 0) return false;
  switch (op) {
    case isa::Opcode::Dma:
    case isa::Opcode::DmaRemote:
    case isa::Opcode::SyncRemote:
    case isa::Opcode::SyncWait:
    case isa::Opcode::SyncSignal:
    case isa::Opcode::SyncSet:
    case isa::Opcode::SyncRead:
    case isa::Opcode::Fence:
    case isa::Opcode::Halt:
      return true;
    default:
      return false;
  }
}

int MInstr::pairedOperand() const {
  const isa::OpcodeInfo& i = info();
  for (int k = 0; k < i.numOperands; ++k)
    if (isa::operandInfo(i.operands[k]).cls == isa::OperandClass::VectorReg) return k;
  return -1;
}

MInstr makeInstr(isa::Opcode op, std::vector<MOperand> operands) {
  const isa::OpcodeInfo& info = isa::opcodeInfo(op);
  if (int(operands.size()) != info.numOperands)
    throw std::logic_error(fmt::format("{} takes {} operands, {} given", info.mnemonic,
                                       info.numOperands, operands.size()));
  MInstr mi;
  mi.op = op;
  for (size_t i = 0; i < operands.size(); ++i) {
    RegClass want;
    bool isReg = regClassOf(info.operands[i], &want);
    if (isReg != operands[i].isReg() || (isReg && operands[i].cls != want))
      throw std::logic_error(
          fmt::format("{} operand {} has the wrong kind or register class", info.mnemonic, i));
    mi.ops[i] = operands[i];
  }
  return mi;
}

std::string printInstr(const MInstr& mi) {
  const isa::OpcodeInfo& info = mi.info();
  std::string s(info.mnemonic);
  for (int i = 0; i < info.numOperands; ++i) {
    const MOperand& o = mi.ops[i];
    s += i ? ", " : " ";
    switch (o.kind) {
      case MOperand::Kind::VirtReg:
        s += fmt::format("%{}{}", regClassName(o.cls), o.value);
        break;
      case MOperand::Kind::PhysReg:
        s += fmt::format("{}{}", regClassName(o.cls), o.value);
        break;
      case MOperand::Kind::Block:
        s += fmt::format("@bb{}", o.value);
        break;
      default:
        s += fmt::format("{}{}", isa::operandInfo(info.operands[i]).prefix, o.value);
    }
    // A register pair prints as both halves: %v3:%v4.
    if (i == mi.pairedOperand() && mi.pairHi.isReg())
      s += fmt::format(":{}{}{}", mi.pairHi.kind == MOperand::Kind::VirtReg ? "%" : "",
                       regClassName(mi.pairHi.cls), mi.pairHi.value);
  }
  return s;
}

}  // namespace tpusim::kernels::codegen
