// An independent check of generated code against the timing rules of
// isa/README.md: given the bundles of one straight-line block issuing on
// consecutive cycles, reports every place where the machine would stall
// (operand not ready, write still in flight, MXU port busy or result not
// ready, XLU or transcendental unit busy), every slot-count violation for the
// preset, two writes of one register in a bundle, and results still in flight
// when the block ends. This is what `tpusim --strict` would flag, checked at
// compile time; VMEM bank conflicts depend on register values and are not
// checked here.
#pragma once

#include <string>
#include <vector>

#include "isa/Bundle.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::kernels::codegen {

std::vector<std::string> checkBlockTiming(const std::vector<isa::Bundle>& bundles,
                                          const TargetInfo& target);

}  // namespace tpusim::kernels::codegen
