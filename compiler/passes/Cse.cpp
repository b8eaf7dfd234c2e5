// Placeholder: not implemented yet (reports no change).
#include "compiler/passes/PassRegistry.h"

namespace tpusim::passes {
namespace {

class CsePass : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(hlo::HloModule&) override { return false; }
};

}  // namespace

std::unique_ptr<HloPass> createCsePass() { return std::make_unique<CsePass>(); }

}  // namespace tpusim::passes
