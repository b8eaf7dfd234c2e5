// tpu-opt IN.hlo [--passes=dce,cse,algsimp] [--dump-after-all DIR] [-o OUT.hlo]
//
// Parses HLO text (one or several modules separated by "// -----"), verifies
// each module, runs the passes (verifying after each), and prints the result
// the same way. Other modes (TpuOptMode.h) may consume the modules instead.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>

#include <cstdio>
#include <fstream>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/passes/PassPipeline.h"
#include "compiler/passes/PassRegistry.h"
#include "compiler/tools/tpu-opt/TpuOptMode.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/support/RunFiles.h"

namespace cl = llvm::cl;
using namespace tpusim;

static cl::OptionCategory Cat("tpu-opt options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<input .hlo file, or - for stdin>"),
                                  cl::Required, cl::cat(Cat));
static cl::opt<std::string> Passes("passes",
                                   cl::desc("Comma-separated passes to run, in order (e.g. "
                                            "dce,cse,algsimp,layout-assignment,fusion; an unknown "
                                            "name prints every registered pass)"),
                                   cl::value_desc("p1,p2,..."), cl::cat(Cat));
static cl::opt<std::string> DumpDir("dump-after-all",
                                    cl::desc("Write the module after each pass to DIR"),
                                    cl::value_desc("DIR"), cl::cat(Cat));
static cl::opt<std::string> Output("o", cl::desc("Output file (default: stdout)"),
                                   cl::value_desc("OUT.hlo"), cl::cat(Cat));
static cl::opt<bool> NoVerify("no-verify", cl::desc("Do not run the verifier"), cl::cat(Cat));

static int error(const std::string& message) {
  fmt::print(stderr, "{}\n", message);
  return 1;
}

int main(int argc, char** argv) {
  // Hide LLVM's own options (general category); modes keep their categories visible.
  for (auto& entry : cl::getRegisteredOptions())
    for (cl::OptionCategory* c : entry.second->Categories)
      if (c == &cl::getGeneralCategory()) entry.second->setHiddenFlag(cl::ReallyHidden);
  tpusim::support::parseCommandLineOrExit(argc, argv,
                                          "tpu-opt: HLO parser, verifier and optimizer\n");

  passes::PassPipeline pipeline;
  std::string err;
  if (!pipeline.addPasses(Passes, &err)) return error("tpu-opt: error: " + err);
  pipeline.setVerify(!NoVerify);

  support::RunFiles files;
  files.input("the input module", Input);
  files.output("-o", Output);
  if (std::string clash = files.clash(); !clash.empty()) return error("tpu-opt: error: " + clash);
  if (!DumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(DumpDir))
      return error(
          fmt::format("tpu-opt: error: cannot create '{}': {}", DumpDir.getValue(), ec.message()));
  }

  hlo::ParseResult parsed = hlo::parseHloFile(Input);
  if (!parsed.ok()) return error(parsed.error);

  for (size_t k = 0; k < parsed.modules.size(); ++k) {
    hlo::HloModule& module = *parsed.modules[k];
    if (!NoVerify) {
      hlo::VerifierResult v = hlo::verifyModule(module);
      if (!v.ok()) return error(v.message());
    }
    std::string prefix =
        parsed.modules.size() > 1 ? fmt::format("{}.{}", k, module.name()) : module.name();
    pipeline.setDumpDir(DumpDir, prefix);
    if (!pipeline.run(module, &err))
      return error(fmt::format("{}: error: {}", Input.getValue(), err));
  }

  for (const tpuopt::Mode& mode : tpuopt::registeredModes()) {
    if (!mode.requested()) continue;
    tpuopt::ModeInput in{Input, &parsed.modules};
    return mode.run(in);
  }

  std::vector<const hlo::HloModule*> modules;
  for (const auto& m : parsed.modules) modules.push_back(m.get());
  std::string text = hlo::printModules(modules);
  if (Output.empty() || Output == "-") {
    fmt::print("{}", text);
    return 0;
  }
  std::ofstream out(Output, std::ios::binary);
  out << text;
  if (!out) return error(fmt::format("tpu-opt: error: cannot write '{}'", Output.getValue()));
  return 0;
}
