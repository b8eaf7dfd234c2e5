// Internal to the evaluator: runs computations of one module for one replica.
// Evaluator.h is the public entry point.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/eval/Elementwise.h"
#include "compiler/hlo/eval/Literal.h"
#include "compiler/hlo/eval/Reduce.h"

namespace tpusim::hlo::eval {

class Rendezvous;

// An EvalError already annotated with the instruction it happened in.
class InstructionError : public EvalError {
 public:
  using EvalError::EvalError;
};

class Interpreter {
 public:
  // `rendezvous` may be null when there is a single replica.
  // `mxuDotPrecision`: f32 dots as the MXU computes them (EvalOptions).
  Interpreter(const HloModule& module, int64_t replicaId, int64_t replicaCount,
              Rendezvous* rendezvous, bool mxuDotPrecision = false)
      : module_(module),
        replica_(replicaId),
        replicas_(replicaCount),
        rendezvous_(rendezvous),
        mxuDotPrecision_(mxuDotPrecision) {}

  // Evaluates `comp` with args[i] as parameter i.
  Literal run(const HloComputation& comp, const std::vector<const Literal*>& args);

 private:
  Literal eval(const HloInstruction& inst, const std::vector<const Literal*>& ops);
  Literal evalElementwise(const HloInstruction& inst, const std::vector<const Literal*>& ops);
  Literal evalShapeOp(const HloInstruction& inst, const std::vector<const Literal*>& ops);
  Literal evalCompute(const HloInstruction& inst, const std::vector<const Literal*>& ops);
  Literal evalControl(const HloInstruction& inst, const std::vector<const Literal*>& ops);
  Literal evalCollective(const HloInstruction& inst, const std::vector<const Literal*>& ops);

  // Runs `comp` on scalar arguments (reducers, comparators, combiners) and
  // returns the root's values (a tuple's elements separately).
  std::vector<Literal> callScalar(const HloComputation& comp, const std::vector<Literal>& args);
  // A reducer for `comp`, with the fast path when `comp` is op(p0, p1) on `type`.
  Reducer makeReducer(const HloComputation* comp, const HloInstruction& user);
  const HloComputation& called(const HloInstruction& inst, const char* key);

  const HloModule& module_;
  int64_t replica_, replicas_;
  Rendezvous* rendezvous_;
  bool mxuDotPrecision_ = false;
  int64_t collectiveSeq_ = 0;
  int depth_ = 0;
};

// The evaluator's op for an HLO opcode (nullopt if it is not element-wise binary).
std::optional<BinaryOp> binaryOpOf(HloOpcode op);
CompareDir compareDirOf(ComparisonDirection d);

// "%name (opcode) at file:line" for messages.
std::string describe(const HloInstruction& inst);

}  // namespace tpusim::hlo::eval
