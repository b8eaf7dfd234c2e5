// The reference evaluator: runs an HloModule's entry computation on given
// inputs with XLA's numerics (see Elementwise.h, Convert.h, Dot.h, Reduce.h).
// It is the ground truth every compiled program is checked against.
//
// Supported: every opcode of issue 6 (element-wise, shape, dot, reduce,
// reduce-window, gather, scatter, sort, map, control flow, tuples, collectives
// and their -start/-done forms, custom-calls registered in CustomCalls.h) plus
// a few more (atan2, erf, popcnt, reduce-precision, async wrappers ...).
// Anything else is an EvalError naming the instruction ("evaluating %x (rng)
// at file:line: ...").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

struct EvalOptions {
  // Replicas (devices) to run; 0 means the module's replica_count or num_partitions, or more
  // if a collective names a higher device id.
  int64_t replicas = 0;
  // Compute f32 dots as the TPU's MXU does (Dot.h, compiler/hlo/DotPrecision.h):
  // bf16 operands at DEFAULT precision, the bf16_3x passes at HIGH, f32 at
  // HIGHEST. Off: every f32 dot in f32. `tpusim --check` turns it on.
  bool mxuDotPrecision = false;
};

// At most kMaxReplicas (an EvalError past it, before any input is built).
constexpr int64_t kMaxReplicas = 1024;
int64_t replicaCountFor(const HloModule& module, const EvalOptions& options);

// Evaluates the entry computation once per replica (each replica in its own
// thread when there are several). args[r][i] is parameter i of replica r; a
// single argument list is used for every replica. Returns one result per replica.
std::vector<Literal> evaluateReplicated(const HloModule& module,
                                        const std::vector<std::vector<Literal>>& args,
                                        const EvalOptions& options = {});
// One replica.
Literal evaluate(const HloModule& module, const std::vector<Literal>& args);

// Seeded random data for a parameter of `shape` (tuples element-wise):
//   floats: uniform in [-1, 1), rounded to the type (round to nearest even);
//   signed integers: uniform in [-8, 8]; unsigned: uniform in [0, 16]; pred: 0 or 1.
// The stream is SplitMix64 of `seed`, so values are the same on every platform.
Literal randomLiteral(const Shape& shape, uint64_t seed);
// The seed of parameter `param` of replica `replica` given the user's seed.
uint64_t parameterSeed(uint64_t seed, int64_t replica, int64_t param);

// Instructions (of any computation reachable from the entry) whose opcode the
// evaluator cannot run, as "%name (opcode)"; custom-calls with an unregistered
// target and constants with an elided value count. Empty when the module is
// fully supported.
std::vector<std::string> unsupportedInstructions(const HloModule& module);

}  // namespace tpusim::hlo::eval
