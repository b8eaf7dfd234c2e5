// `tpusim IN.hlo --check` (functional mode): the same module evaluated by the
// reference evaluator (what `tpu-opt --evaluate` runs, linked into tpusim)
// on the same inputs, every output compared with a tolerance by dtype.
//
// Tolerance: an element passes when |sim - ref| <= atol + rtol * |ref|, with
// atol = rtol * rms(ref) (the output's root mean square, so an element near
// zero after cancellation is judged against the output's scale).
//   - f32: rtol 2e-2. The reference computes f32 dots as the MXU does (bf16
//     operands at DEFAULT precision, evaluateReference's mxuDots), so what is
//     left is transcendental approximations and accumulation order, chained
//     through normalizations and softmax;
//   - bf16: rtol 3e-2 (the result itself is rounded to 8 bits, 0.4%, after
//     bf16 dot inputs);
//   - integers and pred: exact.
// NaN equals NaN; an infinity must match exactly. --check-rtol overrides rtol
// for the float types.
//
// bf16 rounding: a deep bf16 graph (a decoder stack) rounds after every op in
// the evaluator but after every fusion on the chip (fusions compute in f32, as
// XLA's do on TPU), so the two differ by about as much as each differs from
// exact arithmetic, and some elements fail the per-element test although
// neither is wrong. A float output that fails it (with finite values only) is
// judged again against the module evaluated in f32 (pass promote-to-f32): it
// passes when the simulator's rms error is at most 1.5x the evaluator's plus
// one bf16 rounding (2^-9) of the output's rms: the simulator is about as
// accurate as the reference. An output the evaluator computes exactly (no bf16
// on its path) gets no second chance.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/EvaluateHlo.h"
#include "isa/Program.h"
#include "isa/support/Npy.h"

namespace tpusim::sim {

// The array an input buffer's raw bytes (dense, little-endian) make, typed as
// the simulator and the evaluator read it (bf16 as uint16 bits, pred as bool).
npy::Array bytesToNpy(const isa::BufferDesc& buffer, const std::vector<uint8_t>& bytes);

struct OutputCheck {
  std::string name;
  std::string type;  // "f32[2,3]"
  int64_t elements = 0, mismatches = 0;
  double maxAbsError = 0, maxRelError = 0;
  double rtol = 0, atol = 0;
  int64_t worstIndex = -1;
  double worstSim = 0, worstRef = 0;
  int64_t nonFiniteMismatches = 0;  // NaN or infinity where the reference has none (or another)
  std::string problem;              // shape/type mismatch, missing file
  // The bf16 rounding judgement (roundingJudged after judgeBf16Rounding):
  // rms errors of simulator and evaluator against the module evaluated in f32.
  bool roundingJudged = false, roundingOk = false;
  double simRmsError = 0, evalRmsError = 0, roundingLimit = 0;
  bool ok() const { return problem.empty() && (mismatches == 0 || roundingOk); }
  // Failed per element, but may pass the bf16 rounding judgement.
  bool wantsRoundingJudgement() const {
    return problem.empty() && mismatches > 0 && nonFiniteMismatches == 0 && rtol > 0;
  }
  std::string line() const;  // one report line
};

// Compares one output; `rtolOverride` >= 0 replaces the float tolerance (0: exact).
OutputCheck compareOutput(const isa::BufferDesc& buffer, const npy::Array& sim,
                          const npy::Array& ref, double rtolOverride);

// The bf16 rounding judgement above: `ref` is the evaluator's result, `exact`
// the result of the module evaluated in f32 (same shape, f32).
void judgeBf16Rounding(OutputCheck& c, const isa::BufferDesc& buffer, const npy::Array& sim,
                       const npy::Array& ref, const npy::Array& exact);

}  // namespace tpusim::sim

namespace tpusim::sim {

// Evaluates the module of `hloPath` with the reference evaluator in process
// (compiler/driver/EvaluateHlo.h: what `tpu-opt HLO [--passes=PASSES]
// --evaluate --input N=x.npy ...` computes) on `parameters` (entry parameter
// number -> array) and returns the result of every output name (out, out.0,
// ...). `mxuDots`: f32 dots as the chip's MXU computes them (bf16 operands at
// DEFAULT precision, compiler/hlo/DotPrecision.h), as the reference --check
// judges against; off for the f32 module of the rounding judgement. On failure prints the
// evaluator's message on stderr, as tpu-opt prints it, and throws std::runtime_error.
std::map<std::string, npy::Array> evaluateReference(
    const std::string& hloPath, const std::map<int64_t, driver::ParameterArray>& parameters,
    const std::vector<std::string>& outputNames, const std::string& passes = "",
    bool mxuDots = true);

}  // namespace tpusim::sim
