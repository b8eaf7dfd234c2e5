// The library kernel behind a custom-call `tpu.NAME` (kernels/lib/Registry.h):
// its parameters come from the operand shapes, then from the call's
// backend_config. The lowering (LibraryCallLowering.cpp) and the reference
// evaluator's binding (compiler/driver/LibraryCallEvaluation.cpp) both build it
// here, so a rewritten module evaluates with the very kernel tpuc compiles.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/hlo/HloInstruction.h"
#include "kernels/codegen/TargetInfo.h"
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
// Builds the kernel `call` names for `chip`, the chip it runs on: blocks
// left to "auto" (matmul) and MXU-sized splits (flash attention's overlapped
// p x V) are chosen for it. Interpret such a kernel with the chip's MXU size
// (dsl::InterpretOptions::mxuSize) for the chip's accumulation order. Throws
// LibraryCallError.
kernels::lib::LibraryKernel buildLibraryCallKernel(const hlo::HloInstruction& call,
                                                   const kernels::codegen::TargetInfo& chip);

}  // namespace tpusim::lower
