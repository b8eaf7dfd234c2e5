#include "compiler/tools/tpu-opt/EvaluateMode.h"

#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>

#include <map>

#include "compiler/driver/EvaluateHlo.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "isa/support/Npy.h"
#include "isa/support/RunFiles.h"

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

}  // namespace

namespace tpuopt {

namespace {

// Evaluates one module and writes its results into `dir`.
int evaluateOne(const hlo::HloModule& module, const std::string& dir,
                const std::string& inputPath) {
  support::RunFiles files;
  files.input("the input module", inputPath);
  driver::checkEvaluable(module);
  std::vector<hlo::HloInstruction*> params = module.entry()->parameters();

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
    files.input("--input " + name, path);
    npy::Array a = npy::read(path);
    given.emplace(*index, fromNpy(a, params[*index]->shape(), path));
  }

  driver::EvaluateOptions options;
  options.replicas = Replicas;
  options.seed = Seed;
  std::vector<driver::EvaluatedOutput> outputs = driver::evaluateEntry(module, given, options);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail(fmt::format("cannot create '{}': {}", dir, ec.message()));
  std::vector<std::string> names;
  for (const driver::EvaluatedOutput& o : outputs) names.push_back(o.name + ".npy");
  files.outputsIn("--output-dir", dir, names);
  if (std::string clash = files.clash(); !clash.empty()) return fail(clash);
  for (const driver::EvaluatedOutput& o : outputs) {
    std::string path = dir + "/" + o.name + ".npy";
    if (!Force && llvm::sys::fs::exists(path))
      return fail(fmt::format("'{}' exists; pass --force to overwrite it", path));
  }
  for (const driver::EvaluatedOutput& o : outputs) {
    npy::write(dir + "/" + o.name + ".npy", toNpy(o.value));
    fmt::print("{}.npy = {}\n", o.name, o.value.toString(16));
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
      if (int rc = evaluateOne(module, dir, in.inputPath)) return rc;
    } catch (const driver::EvaluationError& e) {
      return fail(e.what());
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
