#include "compiler/lower/module/Unfuse.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::lower {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

namespace {

std::string unusedName(const HloComputation& comp, const std::string& base) {
  if (!comp.findInstruction(base)) return base;
  for (int64_t n = 1;; ++n) {
    std::string name = base + "." + std::to_string(n);
    if (!comp.findInstruction(name)) return name;
  }
}

bool inlineFusion(HloComputation& caller, HloInstruction* fusion) {
  std::vector<HloComputation*> called = fusion->calledComputations();
  if (called.size() != 1 || !called[0] || !called[0]->root() || called[0] == &caller) return false;
  const HloComputation& fused = *called[0];
  std::unordered_map<const HloInstruction*, HloInstruction*> copy;
  for (HloInstruction* inst : fused.postOrder()) {
    if (inst->opcode() == HloOpcode::Parameter) {
      int64_t n = inst->attrs().parameterNumber;
      if (n < 0 || n >= fusion->operandCount()) return false;
      copy[inst] = fusion->operand(n);
      continue;
    }
    std::vector<HloInstruction*> operands;
    for (HloInstruction* op : inst->operands()) operands.push_back(copy.at(op));
    copy[inst] =
        caller.addInstruction(inst->cloneWithOperands(unusedName(caller, inst->name()), operands));
  }
  fusion->replaceAllUsesWith(copy.at(fused.root()));
  caller.removeInstruction(fusion);
  return true;
}

}  // namespace

int64_t unfuseInputFusions(hlo::HloModule& module) {
  int64_t count = 0;
  // A fused computation may itself hold fusions: repeat until none is left
  // (bounded, for input the verifier did not reject).
  for (int round = 0; round < 64; ++round) {
    int64_t any = 0;
    for (const auto& comp : module.computations()) {
      std::vector<HloInstruction*> fusions;
      for (const auto& inst : comp->instructions())
        if (inst->opcode() == HloOpcode::Fusion) fusions.push_back(inst.get());
      for (HloInstruction* f : fusions) any += inlineFusion(*comp, f);
    }
    count += any;
    if (!any) break;
  }
  if (count) module.removeUnreachableComputations();
  return count;
}

}  // namespace tpusim::lower
