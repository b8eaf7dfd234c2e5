// The library kernel behind a custom-call `tpu.NAME` (kernels/lib/Registry.h):
// its parameters come from the operand shapes, then from the call's
// backend_config. The lowering (LibraryCallLowering.cpp) and the reference
// evaluator's binding (compiler/driver/LibraryCallEvaluation.cpp) both build it
// here, so a rewritten module evaluates with the very kernel tpuc compiles.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/hlo/HloInstruction.h"
#include "kernels/lib/Registry.h"

namespace tpusim::lower {

// The call cannot be built: an unknown kernel, a bad parameter or
// backend_config, shapes the kernel rejects. what() names the target.
class LibraryCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// custom_call_target="tpu.NAME".
bool isLibraryCallTarget(const std::string& target);
// Builds the kernel `call` names, for the default target (the lowering's chip
// does not change a library kernel's numerics). Throws LibraryCallError.
kernels::lib::LibraryKernel buildLibraryCallKernel(const hlo::HloInstruction& call);

}  // namespace tpusim::lower
