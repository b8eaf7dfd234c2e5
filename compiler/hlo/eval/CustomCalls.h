// The registry of custom-call targets the evaluator can run. A custom-call
// whose target is not registered is an "unknown custom-call target" error.
// Library kernels (kernels/lib) register their reference implementation here
// under their target name (e.g. "tpu.flash_attention").
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// Computes the custom-call's result (of the instruction's shape) from its operands.
using CustomCallKernel =
    std::function<Literal(const HloInstruction& call, const std::vector<const Literal*>& operands)>;

// Registers (or replaces) the kernel for `target`. Thread-safe.
void registerCustomCall(const std::string& target, CustomCallKernel kernel);
// The kernel for `target`, or an empty function.
CustomCallKernel findCustomCall(const std::string& target);
// Registered target names, sorted (for messages).
std::vector<std::string> registeredCustomCalls();

}  // namespace tpusim::hlo::eval
