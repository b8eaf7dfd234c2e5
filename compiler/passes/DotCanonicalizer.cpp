// Placeholder: not implemented yet (reports no change).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class DotCanonicalizerPass : public HloPass {
 public:
  std::string_view name() const override { return "dot-canonicalize"; }
  bool run(hlo::HloModule&) override { return false; }
};

}  // namespace

std::unique_ptr<HloPass> createDotCanonicalizerPass() {
  return std::make_unique<DotCanonicalizerPass>();
}

}  // namespace tpusim::passes
