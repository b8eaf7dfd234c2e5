// Lets the reference evaluator run custom-calls to library kernels
// (custom_call_target="tpu.NAME", kernels/lib/Registry.h): each call runs the
// kernel tpuc compiles for it in interpret mode (kernels/dsl/Interpret.h),
// whose numerics are the machine's. So a module that `flash-attention` or a
// user rewrote into library calls still evaluates (`tpu-opt --passes=...
// --evaluate`, `tpusim --check` on such a module). The evaluator has no chip:
// calls are built and interpreted for TargetInfo::defaults() (128x128 MXUs, as
// v5e), so on a chip with other MXUs a compiled call may differ in rounding.
#pragma once

namespace tpusim::driver {

// Registers every library kernel under "tpu.NAME" with the evaluator's
// custom-call registry (compiler/hlo/eval/CustomCalls.h). Idempotent and
// thread-safe; evaluateEntry and checkEvaluable call it.
void registerLibraryCallsForEvaluation();

}  // namespace tpusim::driver
