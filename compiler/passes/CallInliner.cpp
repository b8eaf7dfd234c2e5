// Call inlining: every `call` is replaced by a copy of the called
// computation's instructions (parameters become the call's operands; new
// names are unique in the module); computations no longer called are removed.
#include <unordered_map>

#include "compiler/passes/PassRegistry.h"
#include "compiler/passes/PassUtil.h"

namespace tpusim::passes {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// `base`, or base.1, base.2 ... whichever is free in `comp` (names are per computation).
std::string freeName(const HloComputation* comp, const std::string& base) {
  if (!comp->findInstruction(base)) return base;
  for (int64_t n = 1;; ++n) {
    std::string cand = base + "." + std::to_string(n);
    if (!comp->findInstruction(cand)) return cand;
  }
}

bool inlineCall(HloComputation* caller, HloInstruction* call) {
  HloComputation* callee = call->toApply();
  if (!callee || !callee->root() || callee == caller) return false;
  std::unordered_map<const HloInstruction*, HloInstruction*> map;
  for (HloInstruction* inst : callee->postOrder()) {
    if (inst->opcode() == HloOpcode::Parameter) {
      int64_t n = inst->attrs().parameterNumber;
      if (n < 0 || n >= call->operandCount()) return false;
      map[inst] = call->operand(n);
      continue;
    }
    std::vector<HloInstruction*> ops;
    for (HloInstruction* op : inst->operands()) ops.push_back(map.at(op));
    std::string name = freeName(caller, inst->name());
    map[inst] = caller->addInstruction(inst->cloneWithOperands(name, ops));
  }
  call->replaceAllUsesWith(map.at(callee->root()));
  caller->removeInstruction(call);
  return true;
}

class CallInlinerPass : public HloPass {
 public:
  std::string_view name() const override { return "inline"; }
  bool run(hlo::HloModule& module) override {
    bool changed = false;
    // Inlined bodies may hold calls themselves; the verifier rules out
    // recursion, and the round limit guards unverified input.
    for (int round = 0; round < 64; ++round) {
      bool any = rewriteEach(module, HloOpcode::Call, inlineCall);
      changed |= any;
      if (!any) break;
    }
    if (changed) module.removeUnreachableComputations();
    return changed;
  }
};

}  // namespace

std::unique_ptr<HloPass> createCallInlinerPass() { return std::make_unique<CallInlinerPass>(); }

}  // namespace tpusim::passes
