// Placeholder: not implemented yet (reports no change).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class CallInlinerPass : public HloPass {
 public:
  std::string_view name() const override { return "inline"; }
  bool run(hlo::HloModule&) override { return false; }
};

}  // namespace

std::unique_ptr<HloPass> createCallInlinerPass() { return std::make_unique<CallInlinerPass>(); }

}  // namespace tpusim::passes
