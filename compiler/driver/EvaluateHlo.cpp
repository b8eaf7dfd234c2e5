#include "compiler/driver/EvaluateHlo.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/driver/LibraryCallEvaluation.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "compiler/passes/PassPipeline.h"

namespace tpusim::driver {

using hlo::eval::Literal;

namespace {

void collectOutputs(const Literal& value, const std::string& stem,
                    std::vector<EvaluatedOutput>& out) {
  if (!value.isTuple()) {
    out.push_back({stem, value});
    return;
  }
  for (size_t i = 0; i < value.elements().size(); ++i)
    collectOutputs(value.elements()[i], fmt::format("{}.{}", stem, i), out);
}

}  // namespace

void checkEvaluable(const hlo::HloModule& module) {
  registerLibraryCallsForEvaluation();
  const hlo::HloComputation* entry = module.entry();
  if (!entry)
    throw EvaluationError(fmt::format("module {} has no entry computation", module.name()));
  std::vector<std::string> unsupported = hlo::eval::unsupportedInstructions(module);
  size_t unsupportedCount = unsupported.size();
  if (unsupported.size() > 8) {
    size_t more = unsupported.size() - 8;
    unsupported.resize(8);
    unsupported.push_back(fmt::format("and {} more", more));
  }
  if (!unsupported.empty())
    throw EvaluationError(fmt::format(
        "{}: module {} cannot be evaluated: {} instruction(s) the reference "
        "evaluator does not support: {}",
        module.sourceFile(), module.name(), unsupportedCount, fmt::join(unsupported, ", ")));
  for (int64_t i = 0; i < entry->parameterCount(); ++i)
    if (!entry->parameter(i))
      throw EvaluationError(fmt::format("the entry computation has no parameter({})", i));
}

std::vector<EvaluatedOutput> evaluateEntry(const hlo::HloModule& module,
                                           const std::map<size_t, Literal>& given,
                                           const EvaluateOptions& options) {
  return evaluateEntry(module, std::vector<std::map<size_t, Literal>>{given}, options);
}

std::vector<EvaluatedOutput> evaluateEntry(const hlo::HloModule& module,
                                           const std::vector<std::map<size_t, Literal>>& perReplica,
                                           const EvaluateOptions& options) {
  checkEvaluable(module);
  const hlo::HloComputation* entry = module.entry();
  hlo::eval::EvalOptions evalOptions;
  evalOptions.replicas = options.replicas;
  evalOptions.mxuDotPrecision = options.mxuDotPrecision;
  int64_t replicas = 0;
  try {
    replicas = hlo::eval::replicaCountFor(module, evalOptions);
  } catch (const hlo::eval::EvalError& e) {
    throw EvaluationError(e.what());
  }
  std::vector<hlo::HloInstruction*> params = entry->parameters();
  if (perReplica.size() != 1 && int64_t(perReplica.size()) != replicas)
    throw EvaluationError(
        fmt::format("{} parameter lists for {} replicas", perReplica.size(), replicas));
  std::vector<std::vector<Literal>> args(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r)
    for (size_t i = 0; i < params.size(); ++i) {
      const std::map<size_t, Literal>& given =
          perReplica.size() == 1 ? perReplica[0] : perReplica[size_t(r)];
      auto it = given.find(i);
      args[static_cast<size_t>(r)].push_back(
          it != given.end()
              ? it->second
              : hlo::eval::randomLiteral(params[i]->shape(),
                                         hlo::eval::parameterSeed(options.seed, r, int64_t(i))));
    }
  std::vector<Literal> results;
  try {
    results = hlo::eval::evaluateReplicated(module, args, evalOptions);
  } catch (const hlo::eval::EvalError& e) {
    throw EvaluationError(e.what());
  }
  std::vector<EvaluatedOutput> outputs;
  for (int64_t r = 0; r < replicas; ++r)
    collectOutputs(results[static_cast<size_t>(r)],
                   replicas == 1 ? std::string("out") : fmt::format("out.r{}", r), outputs);
  return outputs;
}

EvaluateFileResult evaluateHloFile(const std::string& hloPath,
                                   const std::map<int64_t, ParameterArray>& parameters,
                                   const std::string& passes, const EvaluateOptions& options) {
  return evaluateHloFile(hloPath, std::vector<std::map<int64_t, ParameterArray>>{parameters},
                         passes, options);
}

EvaluateFileResult evaluateHloFile(const std::string& hloPath,
                                   const std::vector<std::map<int64_t, ParameterArray>>& perReplica,
                                   const std::string& passes, const EvaluateOptions& options) {
  EvaluateFileResult out;
  passes::PassPipeline pipeline;
  std::string err;
  if (!pipeline.addPasses(passes, &err)) {
    out.error = "tpu-opt: error: " + err;
    return out;
  }
  pipeline.setVerify(true);
  hlo::ParseResult parsed = hlo::parseHloFile(hloPath);
  if (!parsed.ok()) {
    out.error = parsed.error;
    return out;
  }
  if (parsed.modules.size() != 1) {
    out.error = fmt::format("tpu-opt: error: {} holds {} modules; evaluating one needs one",
                            hloPath, parsed.modules.size());
    return out;
  }
  hlo::HloModule& module = *parsed.modules[0];
  hlo::VerifierResult v = hlo::verifyModule(module);
  if (!v.ok()) {
    out.error = v.message();
    return out;
  }
  if (!pipeline.run(module, &err)) {
    out.error = fmt::format("{}: error: {}", hloPath, err);
    return out;
  }
  try {
    checkEvaluable(module);
    const hlo::HloComputation* entry = module.entry();
    std::vector<std::map<size_t, Literal>> given(perReplica.size());
    for (size_t r = 0; r < perReplica.size(); ++r)
      for (const auto& [number, value] : perReplica[r]) {
        if (number < 0 || number >= entry->parameterCount() || !entry->parameter(number))
          throw EvaluationError(
              fmt::format("--input {}={}: the entry computation has no parameter {}", number,
                          value.source, number));
        given[r].emplace(
            size_t(number),
            hlo::eval::fromNpy(value.array, entry->parameter(number)->shape(), value.source));
      }
    for (EvaluatedOutput& o : evaluateEntry(module, given, options))
      out.outputs.emplace_back(o.name, hlo::eval::toNpy(o.value));
  } catch (const EvaluationError& e) {
    out.error = fmt::format("tpu-opt: error: {}", e.what());
  } catch (const hlo::eval::EvalError& e) {
    out.error = fmt::format("tpu-opt: error: {}", e.what());
  } catch (const npy::NpyError& e) {
    out.error = fmt::format("tpu-opt: error: {}", e.what());
  }
  return out;
}

}  // namespace tpusim::driver
