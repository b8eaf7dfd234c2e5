#include "compiler/tools/tpu-opt/EvaluateMode.h"

#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>

#include <map>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "isa/support/Npy.h"

namespace cl = llvm::cl;
using namespace tpusim;
using namespace tpusim::hlo::eval;

namespace {

cl::OptionCategory EvalCat("tpu-opt --evaluate options");
cl::opt<bool> Evaluate("evaluate",
                       cl::desc("Evaluate the entry computation with the reference evaluator "
                                "instead of printing the module"),
                       cl::cat(EvalCat));
cl::list<std::string> Inputs("input",
                             cl::desc("Value of an entry parameter (by name or number) from a "
                                      ".npy file; others get seeded random data"),
                             cl::value_desc("NAME=x.npy"), cl::cat(EvalCat));
cl::opt<std::string> OutputDir("output-dir", cl::desc("Directory for the result .npy files"),
                               cl::value_desc("DIR"), cl::cat(EvalCat));
cl::opt<int64_t> Replicas("replicas",
                          cl::desc("Replicas to evaluate (default: the module's replica_count "
                                   "or num_partitions)"),
                          cl::init(0), cl::cat(EvalCat));
cl::opt<uint64_t> Seed("seed", cl::desc("Seed of the random inputs"), cl::init(0),
                       cl::cat(EvalCat));
cl::opt<bool> Force("force", cl::desc("Overwrite existing result files"), cl::cat(EvalCat));

int fail(const std::string& msg) {
  fmt::print(stderr, "tpu-opt: error: {}\n", msg);
  return 1;
}

// Output files for `value`: (file name, array) pairs.
void collectOutputs(const Literal& value, const std::string& stem,
                    std::vector<std::pair<std::string, const Literal*>>& out) {
  if (!value.isTuple()) {
    out.emplace_back(stem + ".npy", &value);
    return;
  }
  for (size_t i = 0; i < value.elements().size(); ++i)
    collectOutputs(value.elements()[i], fmt::format("{}.{}", stem, i), out);
}

}  // namespace

namespace tpuopt {

namespace {

// Evaluates one module and writes its results into `dir`.
int evaluateOne(const hlo::HloModule& module, const std::string& dir) {
  const hlo::HloComputation* entry = module.entry();
  if (!entry) return fail(fmt::format("module {} has no entry computation", module.name()));
  std::vector<std::string> unsupported = unsupportedInstructions(module);
  size_t unsupportedCount = unsupported.size();
  if (unsupported.size() > 8) {
    size_t more = unsupported.size() - 8;
    unsupported.resize(8);
    unsupported.push_back(fmt::format("and {} more", more));
  }
  if (!unsupported.empty())
    return fail(fmt::format(
        "{}: module {} cannot be evaluated: {} instruction(s) the reference "
        "evaluator does not support: {}",
        module.sourceFile(), module.name(), unsupportedCount, fmt::join(unsupported, ", ")));
  EvalOptions options;
  options.replicas = Replicas;
  int64_t replicas = replicaCountFor(module, options);
  std::vector<hlo::HloInstruction*> params = entry->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i]) return fail(fmt::format("the entry computation has no parameter({})", i));

  // --input NAME=path, NAME a parameter name or number.
  std::map<size_t, Literal> given;
  for (const std::string& spec : Inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return fail(fmt::format("--input '{}' is not NAME=file.npy", spec));
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (name[0] == '%') name = name.substr(1);
    std::optional<size_t> index;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i]->name() == name) index = i;
    if (!index && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 9 &&
        std::stoul(name) < params.size())
      index = std::stoul(name);
    if (!index) {
      std::vector<std::string> names;
      for (const auto* p : params) names.push_back(p->name());
      return fail(
          fmt::format("--input {}: the entry computation has no parameter '{}' (it has: {})", spec,
                      name, fmt::join(names, ", ")));
    }
    if (given.count(*index)) return fail(fmt::format("parameter '{}' is given twice", name));
    npy::Array a = npy::read(path);
    given.emplace(*index, fromNpy(a, params[*index]->shape(), path));
  }

  std::vector<std::vector<Literal>> args(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r)
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = given.find(i);
      args[static_cast<size_t>(r)].push_back(
          it != given.end()
              ? it->second
              : randomLiteral(params[i]->shape(), parameterSeed(Seed, r, static_cast<int64_t>(i))));
    }
  std::vector<Literal> results = evaluateReplicated(module, args, options);

  std::vector<std::pair<std::string, const Literal*>> outputs;
  for (int64_t r = 0; r < replicas; ++r)
    collectOutputs(results[static_cast<size_t>(r)],
                   replicas == 1 ? std::string("out") : fmt::format("out.r{}", r), outputs);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail(fmt::format("cannot create '{}': {}", dir, ec.message()));
  for (const auto& [file, value] : outputs) {
    std::string path = dir + "/" + file;
    if (!Force && llvm::sys::fs::exists(path))
      return fail(fmt::format("'{}' exists; pass --force to overwrite it", path));
  }
  for (const auto& [file, value] : outputs) {
    npy::write(dir + "/" + file, toNpy(*value));
    fmt::print("{} = {}\n", file, value->toString(16));
  }
  return 0;
}

}  // namespace

int runEvaluateMode(ModeInput& in) {
  if (OutputDir.empty()) return fail("--evaluate needs --output-dir DIR");
  if (Replicas < 0) return fail("--replicas must be positive");
  size_t count = in.modules->size();
  for (size_t k = 0; k < count; ++k) {
    const hlo::HloModule& module = *(*in.modules)[k];
    std::string dir = OutputDir;
    if (count > 1) {
      dir += fmt::format("/{}", k);
      fmt::print("// module {}: {} -> {}\n", k, module.name(), dir);
    }
    try {
      if (int rc = evaluateOne(module, dir)) return rc;
    } catch (const EvalError& e) {
      return fail(e.what());
    } catch (const npy::NpyError& e) {
      return fail(e.what());
    }
  }
  return 0;
}

}  // namespace tpuopt

static tpuopt::ModeRegistration registration({"evaluate", [] { return Evaluate.getValue(); },
                                              tpuopt::runEvaluateMode});
