// tpuc IN.hlo -o OUT.tpuprog --chip v5e [--chips-dir D] [--passes=...]
//      [--dump-after-all DIR] [--print-stats] [--io-map FILE] [--module N|NAME]
//
// Compiles one HLO module into one program for the simulator
// (compiler/lower/ModuleLowering.h; docs/compiler.md). Errors: a malformed
// module is "IN.hlo:line:col: error: ..."; an instruction the back end cannot
// compile is "IN.hlo:line: error: cannot lower %x (opcode) [op_name ...]: why".
// Exit status 0 on success, 1 on any error.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <fstream>
#include <map>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/ModuleLowering.h"
#include "compiler/lower/ModuleLoweringNames.h"
#include "compiler/lower/TargetDescription.h"
#include "isa/ProgramFile.h"
#include "kernels/codegen/TargetInfo.h"

namespace cl = llvm::cl;
using namespace tpusim;

static cl::OptionCategory Cat("tpuc options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<input .hlo file>"), cl::Required,
                                  cl::cat(Cat));
static cl::opt<std::string> Output("o", cl::desc("Output program (default: IN with .tpuprog)"),
                                   cl::value_desc("OUT.tpuprog"), cl::cat(Cat));
static cl::opt<std::string> Chip("chip",
                                 cl::desc("Chip preset name (looked up in --chips-dir, else "
                                          "$TPUSIM_CHIPS_DIR, then sim/chips) or a .json path"),
                                 cl::value_desc("NAME|PATH"), cl::init("v5e"), cl::cat(Cat));
static cl::list<std::string> Overrides(
    "set", cl::desc("Override one chip field, as tpusim --set does (e.g. --set mxu.count=2)"),
    cl::value_desc("section.field=value"), cl::cat(Cat));
static cl::opt<std::string> ChipsDir("chips-dir", cl::desc("Directory of chip presets"),
                                     cl::value_desc("DIR"), cl::cat(Cat));
static cl::opt<std::string> Passes("passes",
                                   cl::desc("Passes to run before lowering, comma-separated "
                                            "(default: "
                                            "inline,dot-canonicalize,algsimp,constant-folding,"
                                            "cse,dce,fusion,dce)"),
                                   cl::value_desc("p1,p2,..."), cl::cat(Cat));
static cl::opt<std::string> DumpDir("dump-after-all",
                                    cl::desc("Write the module after each pass to DIR"),
                                    cl::value_desc("DIR"), cl::cat(Cat));
static cl::opt<std::string> ModuleChoice(
    "module",
    cl::desc("For a file holding several modules (\"// -----\"): the one to compile, by "
             "position (0, 1, ...) or name"),
    cl::value_desc("N|NAME"), cl::cat(Cat));
static cl::opt<bool> PrintStats("print-stats",
                                cl::desc("Print passes, buffers, kernels and bundles per HLO op"),
                                cl::cat(Cat));
static cl::opt<std::string> IoMap(
    "io-map",
    cl::desc("Write the buffer table's inputs and outputs with their HLO parameter numbers "
             "and result indices (TSV; tpusim --check reads it)"),
    cl::value_desc("FILE"), cl::cat(Cat));

static int fail(const std::string& message) {
  fmt::print(stderr, "tpuc: {}\n", message);
  return 1;
}

// Where each instruction of the input was (line in the HLO file), by name:
// the passes make new instructions (fusions) whose members keep the names.
static std::map<std::string, int> sourceLines(const hlo::HloModule& m) {
  std::map<std::string, int> lines;
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->sourceLine() > 0) lines.emplace(i->name(), i->sourceLine());
  return lines;
}

// The input line of `name`, or of its fused root (then another fused member).
static int sourceLineOf(const hlo::HloModule& m, const std::map<std::string, int>& lines,
                        const std::string& name) {
  if (auto it = lines.find(name); it != lines.end()) return it->second;
  for (const auto& c : m.computations())
    if (const hlo::HloInstruction* i = c->findInstruction(name))
      for (const hlo::HloComputation* called : i->calledComputations()) {
        if (!called) continue;
        if (called->root())
          if (auto it = lines.find(called->root()->name()); it != lines.end()) return it->second;
        for (const auto& member : called->instructions())
          if (auto it = lines.find(member->name()); it != lines.end()) return it->second;
      }
  return 0;
}

static std::string resolveChip() {
  const std::string& c = Chip;
  bool isPath = c.find('/') != std::string::npos ||
                (c.size() > 5 && c.compare(c.size() - 5, 5, ".json") == 0);
  if (ChipsDir.empty() || isPath) return c;
  std::string path = ChipsDir + "/" + c + ".json";
  if (!llvm::sys::fs::exists(path))
    throw lower::TargetError(fmt::format("error: unknown chip '{}': {} does not exist", c, path));
  return path;
}

static void writeIoMap(const hlo::HloModule& module, const isa::Program& program) {
  std::ofstream out(IoMap.getValue(), std::ios::binary);
  // Inputs are listed in parameter order, tuple parameters leaf by leaf.
  const hlo::HloComputation* entry = module.entry();
  size_t input = 0;
  std::vector<const isa::BufferDesc*> inputs;
  for (const isa::BufferDesc& b : program.buffers)
    if (b.role == isa::BufferRole::Input) inputs.push_back(&b);
  for (int64_t n = 0; n < entry->parameterCount(); ++n) {
    const hlo::HloInstruction* p = entry->parameter(n);
    bool tuple = p->shape().isTuple();
    size_t leaves = tuple ? p->shape().tupleShapes.size() : 1;
    for (size_t k = 0; k < leaves && input < inputs.size(); ++k, ++input)
      out << fmt::format("input\t{}\t{}\t{}\n", inputs[input]->name, n, tuple ? "tuple" : "array");
  }
  for (const isa::BufferDesc& b : program.buffers)
    if (b.role == isa::BufferRole::Output) out << fmt::format("output\t{}\n", b.name);
  if (!out) throw std::runtime_error(fmt::format("cannot write '{}'", IoMap.getValue()));
}

int main(int argc, char** argv) {
  for (auto& entry : cl::getRegisteredOptions())
    for (cl::OptionCategory* c : entry.second->Categories)
      if (c == &cl::getGeneralCategory()) entry.second->setHiddenFlag(cl::ReallyHidden);
  cl::ParseCommandLineOptions(argc, argv,
                              "tpuc: compile an HLO module into one .tpuprog\n\n"
                              "  tpuc model.hlo -o model.tpuprog --chip v5e --print-stats\n");
  std::string output = Output;
  if (output.empty()) {
    llvm::SmallString<256> p(llvm::sys::path::filename(Input.getValue()));
    llvm::sys::path::replace_extension(p, ".tpuprog");
    output = std::string(p.str());
  }
  if (Input == "-") return fail("error: the input must be a file (tpuc names errors by file)");
  if (llvm::sys::fs::exists(output) && llvm::sys::fs::equivalent(Input, output))
    return fail(fmt::format("error: refusing to overwrite the input file '{}' with -o", output));

  hlo::ParseResult parsed = hlo::parseHloFile(Input);
  if (!parsed.ok()) {
    fmt::print(stderr, "{}\n", parsed.error);
    return 1;
  }
  size_t chosen = 0;
  if (!ModuleChoice.empty() || parsed.modules.size() != 1) {
    std::vector<std::string> names;
    for (const auto& m : parsed.modules) names.push_back(m->name());
    size_t found = names.size();
    for (size_t k = 0; k < names.size(); ++k)
      if (names[k] == ModuleChoice || std::to_string(k) == ModuleChoice) found = k;
    if (found == names.size())
      return fail(fmt::format("error: {} holds {} module(s) ({}); {}", Input.getValue(),
                              names.size(), fmt::join(names, ", "),
                              ModuleChoice.empty() ? "choose one with --module N|NAME"
                                                   : fmt::format("--module {} names none of them",
                                                                 ModuleChoice.getValue())));
    chosen = found;
  }
  hlo::HloModule& module = *parsed.modules[chosen];
  hlo::VerifierResult v = hlo::verifyModule(module);
  if (!v.ok()) {
    fmt::print(stderr, "{}\n", v.message());
    return 1;
  }
  const std::map<std::string, int> lines = sourceLines(module);
  try {
    std::string chip = resolveChip();
    // One chip description (isa/target), seen by the passes, the lowering and
    // the code generator alike.
    lower::TargetDescription target =
        lower::loadTarget(chip, std::vector<std::string>(Overrides.begin(), Overrides.end()));
    kernels::codegen::TargetInfo codegenTarget =
        kernels::codegen::TargetInfo::fromChip(target.chip);
    lower::ModuleLoweringOptions options;
    options.passes = Passes;
    options.dumpDir = DumpDir;
    lower::LoweredModule lowered = lower::lowerModule(module, target, codegenTarget, options);
    std::string error;
    if (!isa::writeProgramFile(lowered.program, output, &error))
      return fail(fmt::format("error: {}", error));
    if (!IoMap.empty()) writeIoMap(module, lowered.program);
    if (PrintStats) fmt::print("{}", lowered.statsText());
  } catch (const lower::CannotLower& e) {
    int line = sourceLineOf(module, lines, e.instruction());
    std::string where = line > 0 ? fmt::format("{}:{}", Input.getValue(), line) : Input.getValue();
    fmt::print(stderr, "{}: error: {}\n", where, e.what());
    return 1;
  } catch (const lower::TargetError& e) {
    std::string m = e.what();
    return fail(
        m.rfind("error: ", 0) == 0 || m.find(": error: ") != std::string::npos ? m : "error: " + m);
  } catch (const kernels::codegen::TargetError& e) {
    return fail(fmt::format("error: {}", e.what()));
  } catch (const lower::ModuleLoweringError& e) {
    return fail(fmt::format("error: {}: {}", Input.getValue(), e.what()));
  } catch (const std::exception& e) {
    return fail(fmt::format("error: {}: {}", Input.getValue(), e.what()));
  }
  return 0;
}
