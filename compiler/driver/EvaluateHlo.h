// The reference evaluator (compiler/hlo/eval) on an HLO module, in process:
// what `tpu-opt IN.hlo [--passes=...] --evaluate --input N=x.npy ...` computes,
// as a library for tpu-opt's --evaluate mode and for `tpusim IN.hlo --check`.
//
// Results are named as tpu-opt names its files (without ".npy"): "out" for an
// array result, out.0, out.1, ... for a tuple (out.1.0 nested), and with
// several replicas out.r0, out.r1.0, .... These are the output buffer names
// tpuc gives the program (compiler/lower/module/Names.h), so results compare by
// name.
//
// Errors carry the text tpu-opt prints: a malformed module is the parser's
// "IN.hlo:line:col: error: ...", a failing pass "IN.hlo: error: ...", and an
// evaluation error (unsupported instruction, bad input) the message tpu-opt
// prints after "tpu-opt: error: ".
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/eval/Literal.h"
#include "isa/support/Npy.h"

namespace tpusim::driver {

// An evaluation that cannot run; what() is tpu-opt's message after "tpu-opt: error: ".
class EvaluationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EvaluateOptions {
  int64_t replicas = 0;          // 0: the module's replica_count or num_partitions
  uint64_t seed = 0;             // of the random values of parameters not given
  bool mxuDotPrecision = false;  // f32 dots as the MXU computes them (hlo/eval/Evaluator.h)
};

struct EvaluatedOutput {
  std::string name;  // "out", "out.0", "out.r1.0", ...
  hlo::eval::Literal value;
};

// Throws EvaluationError when the entry of `module` cannot be evaluated: no
// entry, a missing parameter number, instructions the evaluator does not
// support (the first 8 named).
void checkEvaluable(const hlo::HloModule& module);

// Evaluates the entry of `module` (verified; checkEvaluable first). `given` holds values of entry
// parameters by number; the others get seeded random data (Evaluator.h).
// Throws EvaluationError.
std::vector<EvaluatedOutput> evaluateEntry(const hlo::HloModule& module,
                                           const std::map<size_t, hlo::eval::Literal>& given,
                                           const EvaluateOptions& options = {});
// Per replica: replica r gets given[r] (a single map: every replica).
std::vector<EvaluatedOutput> evaluateEntry(
    const hlo::HloModule& module, const std::vector<std::map<size_t, hlo::eval::Literal>>& given,
    const EvaluateOptions& options);

// One parameter value given as an array (.npy contents); `source` names it in
// errors (the file it came from).
struct ParameterArray {
  npy::Array array;
  std::string source;
};

struct EvaluateFileResult {
  std::string error;  // the text tpu-opt prints (see above); empty on success
  std::vector<std::pair<std::string, npy::Array>> outputs;  // by name, in result order
  bool ok() const { return error.empty(); }
};

// Parses `hloPath` (it must hold one module), verifies it, runs `passes`
// (comma-separated, verified after each; "" = none) and evaluates the entry
// on `parameters` (by number; bf16 arrays as uint16 bits or f32).
EvaluateFileResult evaluateHloFile(const std::string& hloPath,
                                   const std::map<int64_t, ParameterArray>& parameters,
                                   const std::string& passes = "",
                                   const EvaluateOptions& options = {});
// The same with parameters per replica (an SPMD module, `tpusim --check` on
// several devices): replica r gets perReplica[r] (one list: every replica).
EvaluateFileResult evaluateHloFile(const std::string& hloPath,
                                   const std::vector<std::map<int64_t, ParameterArray>>& perReplica,
                                   const std::string& passes, const EvaluateOptions& options);

}  // namespace tpusim::driver
