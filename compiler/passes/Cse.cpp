// Common-subexpression elimination: two instructions of a computation with
// the same opcode, shape, operands and attributes (metadata ignored) compute
// the same value; the later one is replaced by the earlier one. Parameters,
// side-effecting instructions and elided constants are never merged.
#include <unordered_map>

#include "compiler/hlo/HloPrinter.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

std::string keyOf(const HloInstruction& inst) {
  auto copy = inst.clone(inst.name());
  copy->attrs().metadata = {};
  std::string key = std::string(hlo::opcodeName(inst.opcode())) + "|" + inst.shape().toString();
  for (const HloInstruction* op : inst.operands())
    key += "|" + std::to_string(reinterpret_cast<uintptr_t>(op));
  if (inst.literal()) key += "|" + inst.literal()->toString();
  key += hlo::printAttributes(*copy);
  return key;
}

class CsePass : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(hlo::HloModule& module) override {
    bool changed = false;
    for (const auto& comp : module.computations()) changed |= cseComputation(*comp);
    return changed;
  }
};

}  // namespace

bool cseComputation(hlo::HloComputation& comp) {
  bool changed = false;
  std::unordered_map<std::string, HloInstruction*> seen;
  for (HloInstruction* inst : comp.postOrder()) {
    if (inst->opcode() == HloOpcode::Parameter || inst->hasSideEffect()) continue;
    if (inst->literal() && inst->literal()->elided) continue;
    auto [it, fresh] = seen.emplace(keyOf(*inst), inst);
    if (fresh) continue;
    inst->replaceAllUsesWith(it->second);
    changed = true;
  }
  if (changed) comp.removeDeadInstructions();
  return changed;
}

bool cseFusedComputations(hlo::HloModule& module) {
  bool changed = false;
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions())
      if (inst->opcode() == HloOpcode::Fusion)
        for (hlo::HloComputation* body : inst->calledComputations())
          if (body) changed |= cseComputation(*body);
  return changed;
}

std::unique_ptr<HloPass> createCsePass() { return std::make_unique<CsePass>(); }

}  // namespace tpusim::passes
