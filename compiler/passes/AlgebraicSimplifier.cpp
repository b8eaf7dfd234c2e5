// Placeholder: not implemented yet (reports no change).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class AlgebraicSimplifierPass : public HloPass {
 public:
  std::string_view name() const override { return "algsimp"; }
  bool run(hlo::HloModule&) override { return false; }
};

}  // namespace

std::unique_ptr<HloPass> createAlgebraicSimplifierPass() {
  return std::make_unique<AlgebraicSimplifierPass>();
}

}  // namespace tpusim::passes
