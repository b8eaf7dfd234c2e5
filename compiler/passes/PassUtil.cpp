#include "compiler/passes/PassUtil.h"

#include "compiler/hlo/HloModule.h"

namespace tpusim::passes {

std::optional<double> splatValue(const hlo::HloInstruction* inst) {
  using hlo::HloOpcode;
  while (inst->opcode() == HloOpcode::Broadcast && inst->operandCount() == 1)
    inst = inst->operand(0);
  if (inst->opcode() != HloOpcode::Constant || !inst->literal()) return std::nullopt;
  const hlo::Literal& l = *inst->literal();
  if (l.elided || l.shape.isTuple() || l.size() == 0) return std::nullopt;
  double v = l.getDouble(0);
  if (!l.allEqual(v)) return std::nullopt;
  return v;
}

hlo::HloInstruction* addNew(hlo::HloComputation* comp, hlo::HloOpcode op, const std::string& base,
                            hlo::Shape shape, std::vector<hlo::HloInstruction*> operands) {
  std::string name = comp->parent() ? comp->parent()->uniqueInstructionName(base) : base;
  return comp->addInstruction(
      hlo::HloInstruction::create(op, name, std::move(shape), std::move(operands)));
}

}  // namespace tpusim::passes
