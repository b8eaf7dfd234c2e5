// Dead-code elimination: removes instructions whose values no one uses
// (parameters stay: they are the signature), then computations no
// instruction calls any more (the entry stays).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class DcePass : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  bool run(hlo::HloModule& module) override {
    int64_t removed = 0;
    for (const auto& comp : module.computations()) removed += comp->removeDeadInstructions();
    removed += module.removeUnreachableComputations();
    return removed > 0;
  }
};

}  // namespace

std::unique_ptr<HloPass> createDcePass() { return std::make_unique<DcePass>(); }

}  // namespace tpusim::passes
