// The interpreter's control flow: call, fusion, while, conditional, async
// wrappers, and custom-call through the registry (CustomCalls.h).
#include <fmt/format.h>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/CustomCalls.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Interpreter.h"

namespace tpusim::hlo::eval {
namespace {

// A while loop that runs this many iterations is reported as a likely hang.
constexpr int64_t kMaxWhileIterations = 100'000'000;

}  // namespace

Literal Interpreter::evalControl(const HloInstruction& inst,
                                 const std::vector<const Literal*>& ops) {
  switch (inst.opcode()) {
    case HloOpcode::Call:
      return run(called(inst, "to_apply"), ops);
    case HloOpcode::Fusion:
      return run(called(inst, "calls"), ops);
    case HloOpcode::While: {
      const HloComputation& cond = called(inst, "condition");
      const HloComputation& body = called(inst, "body");
      Literal state = *ops.at(0);
      for (int64_t iter = 0;; ++iter) {
        if (iter >= kMaxWhileIterations)
          throw EvalError(
              fmt::format("while loop ran {} iterations without ending", kMaxWhileIterations));
        Literal c = run(cond, {&state});
        if (c.isTuple() || c.type() != ElemType::Pred || c.numElements() != 1)
          throw EvalError("while condition did not return pred[]");
        if (!c.data<uint8_t>()[0]) break;
        state = run(body, {&state});
      }
      return state;
    }
    case HloOpcode::Conditional: {
      std::vector<HloComputation*> branches;
      if (const HloComputation* t = inst.calledComputation("true_computation")) {
        const HloComputation* f = inst.calledComputation("false_computation");
        if (!f) throw EvalError("conditional with true_computation but no false_computation");
        branches = {const_cast<HloComputation*>(t), const_cast<HloComputation*>(f)};
        if (ops[0]->type() != ElemType::Pred)
          throw EvalError("true/false conditional needs a pred");
        // pred true selects branch 0.
        size_t pick = ops[0]->data<uint8_t>()[0] ? 0 : 1;
        return run(*branches[pick], {ops.at(1 + pick)});
      }
      for (const auto& c : inst.attrs().calls)
        if (c.key == "branch_computations") branches = c.computations;
      if (branches.empty()) throw EvalError("conditional without branch computations");
      if (ops.size() != branches.size() + 1)
        throw EvalError(fmt::format("conditional has {} branches but {} operands", branches.size(),
                                    ops.size()));
      int64_t index = ops[0]->type() == ElemType::Pred ? (ops[0]->data<uint8_t>()[0] ? 0 : 1)
                                                       : ops[0]->getInt(0);
      // XLA: an out-of-range index runs the last branch.
      if (index < 0 || index >= static_cast<int64_t>(branches.size()))
        index = static_cast<int64_t>(branches.size()) - 1;
      return run(*branches[static_cast<size_t>(index)], {ops[static_cast<size_t>(index) + 1]});
    }
    case HloOpcode::CustomCall: {
      std::string target = inst.attrs().customCallTarget.value_or("");
      CustomCallKernel kernel = findCustomCall(target);
      if (!kernel) {
        std::vector<std::string> known = registeredCustomCalls();
        throw EvalError(
            fmt::format("unknown custom-call target \"{}\" (the evaluator knows: {})", target,
                        known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
      }
      return kernel(inst, ops);
    }
    case HloOpcode::AsyncStart: {
      // ((operands...), result, context...): the wrapped computation runs at once.
      const HloComputation& comp = called(inst, "calls");
      std::vector<Literal> operands;
      for (const Literal* l : ops) operands.push_back(*l);
      std::vector<Literal> elems;
      elems.push_back(Literal::tuple(std::move(operands)));
      elems.push_back(run(comp, ops));
      for (size_t i = 2; i < inst.shape().tupleShapes.size(); ++i)
        elems.push_back(zerosOf(inst.shape().tupleShapes[i], describe(inst)));
      return Literal::tuple(std::move(elems));
    }
    case HloOpcode::AsyncUpdate:
      return *ops.at(0);
    case HloOpcode::AsyncDone:
      if (!ops[0]->isTuple() || ops[0]->elements().size() < 2)
        throw EvalError("async-done operand is not an async-start tuple");
      return ops[0]->elements()[1];
    default:
      break;
  }
  throw EvalError("internal: not a control op");
}

}  // namespace tpusim::hlo::eval
