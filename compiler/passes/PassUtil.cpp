#include "compiler/passes/PassUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_set>
#include <vector>

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

bool rewriteEntryComputationLayout(hlo::HloModule& module) {
  hlo::HloComputation* entry = module.entry();
  if (!entry) return false;
  bool changed = false;
  for (auto& [key, value] : module.headerAttributes()) {
    if (key != "entry_computation_layout") continue;
    std::vector<std::string> params;
    for (hlo::HloInstruction* p : entry->parameters())
      params.push_back(p ? p->shape().toString() : "?");
    std::string text = fmt::format("{{({})->{}}}", fmt::join(params, ", "),
                                   entry->root() ? entry->root()->shape().toString() : "()");
    if (text != value) {
      value = text;
      changed = true;
    }
  }
  return changed;
}

bool rewriteEach(hlo::HloModule& module, hlo::HloOpcode op,
                 const std::function<bool(hlo::HloComputation*, hlo::HloInstruction*)>& rewrite) {
  bool changed = false;
  std::vector<hlo::HloComputation*> comps;
  for (const auto& comp : module.computations()) comps.push_back(comp.get());
  for (hlo::HloComputation* comp : comps) {
    std::vector<hlo::HloInstruction*> matches;
    for (const auto& inst : comp->instructions())
      if (inst->opcode() == op) matches.push_back(inst.get());
    for (hlo::HloInstruction* inst : matches) changed |= rewrite(comp, inst);
  }
  return changed;
}

bool reaches(const hlo::HloInstruction* from, const hlo::HloInstruction* target) {
  std::unordered_set<const hlo::HloInstruction*> seen;
  std::vector<const hlo::HloInstruction*> stack(from->operands().begin(), from->operands().end());
  while (!stack.empty()) {
    const hlo::HloInstruction* i = stack.back();
    stack.pop_back();
    if (i == target) return true;
    if (!seen.insert(i).second) continue;
    for (const hlo::HloInstruction* op : i->operands()) stack.push_back(op);
  }
  return false;
}

}  // namespace tpusim::passes
