// Placeholder: not implemented yet (reports no change).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class ConstantFoldingPass : public HloPass {
 public:
  std::string_view name() const override { return "constant-folding"; }
  bool run(hlo::HloModule&) override { return false; }
};

}  // namespace

std::unique_ptr<HloPass> createConstantFoldingPass() {
  return std::make_unique<ConstantFoldingPass>();
}

}  // namespace tpusim::passes
