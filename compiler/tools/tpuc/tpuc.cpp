// tpuc IN.hlo -o OUT.tpuprog --chip v5e [--chips-dir D] [--passes=...]
//      [--dump-after-all DIR] [--print-stats] [--module N|NAME]
//      [--no-kernel-cache] [--verify-kernel-cache] [--no-shared-code]
//      [--no-cross-kernel-prefetch] [--no-deferred-write-back] [--no-packed-weights]
// tpuc --print-support-table [--chip v5e]
//
// Compiles one HLO module into one program for the simulator, its entry
// signature included (compiler/driver/CompileHlo.h, the library tpusim
// compiles with too; docs/compiler.md). Errors: a malformed
// module is "IN.hlo:line:col: error: ..."; an instruction the back end cannot
// compile is "IN.hlo:line: error: cannot lower %x (opcode) [op_name ...]: why".
// A library kernel's notes (a fast path it could not take, and why) print on
// stderr as "IN.hlo:line: note: %x: ..." and do not fail the compile.
// Exit status 0 on success, 1 on any error.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include "compiler/driver/CompileHlo.h"
#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/driver/SupportTable.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/passes/PassOptions.h"
#include "isa/ProgramFile.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/support/RunFiles.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "kernels/tiling/Tiling.h"

namespace cl = llvm::cl;
using namespace tpusim;

static cl::OptionCategory Cat("tpuc options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<input .hlo file>"), cl::cat(Cat));
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
// The help names the default pipeline from the one place that defines it.
static const std::string kPassesHelp =
    "Passes to run before lowering, comma-separated (default: " + driver::defaultLoweringPasses() +
    ")";
static cl::opt<std::string> Passes("passes", cl::desc(kPassesHelp), cl::value_desc("p1,p2,..."),
                                   cl::cat(Cat));
static cl::opt<std::string> SkipPasses(
    "skip-passes",
    cl::desc("Passes to leave out of the pipeline (--passes, else the default), comma-separated; "
             "each must be in it"),
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
static cl::opt<bool> NoKernelCache(
    "no-kernel-cache",
    cl::desc("Compile every kernel, also those that differ from an earlier one only in their "
             "addresses (by default they are derived from it: the same program, faster)"),
    cl::cat(Cat));
static cl::opt<bool> VerifyKernelCache(
    "verify-kernel-cache",
    cl::desc("Also compile every kernel the cache derives, and fail if the two differ"),
    cl::cat(Cat));
static cl::opt<bool> NoSharedCode(
    "no-shared-code",
    cl::desc("Write every kernel's code in full (by default a kernel that repeats an earlier one "
             "but for a few operands is stored as an instance of its shared body: the same "
             "bundles, a smaller file)"),
    cl::cat(Cat));
static cl::opt<bool> NoCrossKernelPrefetch(
    "no-cross-kernel-prefetch",
    cl::desc("Run every kernel's prologue after the kernel before it has ended (by default a "
             "kernel starts the next kernel's first input blocks in its last grid step when it "
             "does not write them and VMEM has room)"),
    cl::cat(Cat));
static cl::opt<bool> DotEpilogueOutputs(
    "dot-epilogue-outputs",
    cl::desc("Compile a dot kernel and the element-wise kernel reading its results as one "
             "kernel with several outputs (the consumer's outputs, and the dot results other "
             "kernels read) (default on; --dot-epilogue-outputs=false: apart)"),
    cl::init(true), cl::cat(Cat));
static cl::opt<bool> SiblingDots(
    "sibling-dots",
    cl::desc("Compile sibling dots (one LHS, results combined element-wise: a SwiGLU FFN's gate "
             "and up projections) as one kernel that runs both and applies the combination as "
             "its epilogue, where the tiling model prices it cheaper (default on; "
             "--sibling-dots=false: a kernel each)"),
    cl::init(true), cl::cat(Cat));
static cl::opt<bool> HeadEpilogues(
    "head-epilogues",
    cl::desc("Fuse element-wise work and lane shuffles on a dot's result split into 128-lane "
             "heads (RoPE of q and k after their projections) into the dot's kernel as its "
             "epilogue (default on; --head-epilogues=false: a loop kernel of their own)"),
    cl::init(true), cl::cat(Cat));
static cl::opt<bool> TransposeWeightsOnce(
    "transpose-weights-once",
    cl::desc("Transpose a dot's [N, K] weights once through HBM (an MXU fragment) where its M "
             "rows would load them transposed often enough: a transposed weight push waits N "
             "cycles after the MXU's latch (default off: loaded transposed)"),
    cl::init(false), cl::cat(Cat));
static cl::opt<bool> HbmRunModel(
    "hbm-run-model",
    cl::desc("Price dot blocks' HBM reads with the preset's HBM run model (bank groups, "
             "channels, row activations: kernels/tiling/HbmRuns.h) instead of the "
             "interleave-line rule (off by default: its tile choices measured slower)"),
    cl::cat(Cat));
static cl::opt<bool> ReassociateDequantScales(
    "reassociate-dequant-scales",
    cl::desc(
        "Let dot-scale-to-output move any dequantization scale (convert(w) * broadcast(s)) from "
        "the int8 operand to the dot's result, treating floats as reals: one rounding "
        "instead of the HLO's per-weight one, so results may differ in their last bits "
        "(by default only constant power-of-two scales move, which is exact)"),
    cl::cat(Cat));
static cl::opt<bool> NoPackedWeights(
    "no-packed-weights",
    cl::desc("Store every parameter row-major in HBM (by default an s8 parameter that the "
             "kernels read only as packed int8 MXU weights is stored in the chip's packed s8x2 "
             "layout, which the host I/O converts to and from)"),
    cl::cat(Cat));
static cl::opt<bool> NoDeferredWriteBack(
    "no-deferred-write-back",
    cl::desc("Make every kernel wait for its last output write-backs before the next kernel "
             "starts (by default the next kernel waits for them: at its start when it reads or "
             "writes those outputs, else at its end)"),
    cl::cat(Cat));
static cl::opt<bool> PrintSupportTable(
    "print-support-table",
    cl::desc("Print which HLO opcodes and element types compile for the chip (a Markdown "
             "table, generated by compiling one small module per cell) and exit"),
    cl::cat(Cat));
static int fail(const std::string& message) {
  fmt::print(stderr, "tpuc: {}\n", message);
  return 1;
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

int main(int argc, char** argv) {
  for (auto& entry : cl::getRegisteredOptions())
    for (cl::OptionCategory* c : entry.second->Categories)
      if (c == &cl::getGeneralCategory()) entry.second->setHiddenFlag(cl::ReallyHidden);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpuc: compile an HLO module into one .tpuprog\n\n"
      "  tpuc model.hlo -o model.tpuprog --chip v5e --print-stats\n"
      "  tpuc --print-support-table --chip v5e\n");
  if (PrintSupportTable) {
    try {
      target::ChipConfig chip = target::loadChip(
          resolveChip(), std::vector<std::string>(Overrides.begin(), Overrides.end()));
      fmt::print("{}", driver::supportTableMarkdown(chip));
      return 0;
    } catch (const std::exception& e) {
      std::string m = e.what();
      return fail(m.rfind("error: ", 0) == 0 ? m : "error: " + m);
    }
  }
  if (Input.empty()) return fail("error: no input file (tpuc IN.hlo -o OUT.tpuprog)");
  std::string output = Output;
  if (output.empty()) {
    llvm::SmallString<256> p(llvm::sys::path::filename(Input.getValue()));
    llvm::sys::path::replace_extension(p, ".tpuprog");
    output = std::string(p.str());
  }
  if (Input == "-") return fail("error: the input must be a file (tpuc names errors by file)");
  support::RunFiles files;
  files.input("the input module", Input);
  try {
    files.input("the --chip file", target::resolveChipPath(resolveChip()));
  } catch (const std::exception&) {
    // not a file: loading the chip below says why
  }
  files.output(Output.empty() ? "the output (IN with .tpuprog, no -o given)" : "-o", output);
  if (std::string clash = files.clash(); !clash.empty()) return fail("error: " + clash);

  // One chip description (isa/target), seen by the passes, the lowering and
  // the code generator alike.
  target::ChipConfig chip;
  auto chipError = [](const std::string& m) {
    return fail(
        m.rfind("error: ", 0) == 0 || m.find(": error: ") != std::string::npos ? m : "error: " + m);
  };
  try {
    chip = target::loadChip(resolveChip(),
                            std::vector<std::string>(Overrides.begin(), Overrides.end()));
  } catch (const lower::TargetError& e) {
    return chipError(e.what());
  } catch (const target::ConfigError& e) {
    return chipError(e.what());
  }
  driver::CompileOptions options;
  options.module = ModuleChoice;
  options.passes = Passes;
  if (!SkipPasses.empty()) {
    std::string error;
    options.passes = driver::pipelineWithout(Passes, SkipPasses, &error);
    if (!error.empty()) return fail("error: " + error);
  }
  options.dumpDir = DumpDir;
  options.kernelCache = !NoKernelCache;
  options.verifyKernelCache = VerifyKernelCache;
  options.shareCode = !NoSharedCode;
  options.crossKernelPrefetch = !NoCrossKernelPrefetch;
  options.packedWeights = !NoPackedWeights;
  options.deferWriteBack = !NoDeferredWriteBack;
  passes::passOptions().fusionSiblingDots = SiblingDots;
  passes::passOptions().fusionDotEpilogueOutputs = DotEpilogueOutputs;
  passes::passOptions().fusionHeadEpilogues = HeadEpilogues;
  passes::passOptions().transposeWeightsOnce = TransposeWeightsOnce;
  kernels::tiling::hbmRunPricing() = HbmRunModel;
  passes::passOptions().reassociateDequantScales = ReassociateDequantScales;
  driver::CompileResult compiled = driver::compileHloFile(Input, chip, options);
  if (!compiled.ok()) {
    fmt::print(stderr, "{}\n", compiled.error);
    return compiled.exitStatus();
  }
  for (const std::string& note : compiled.notes) fmt::print(stderr, "{}\n", note);
  std::string error;
  if (!isa::writeProgramFile(compiled.lowered.program, output, &error))
    return fail(fmt::format("error: {}", error));
  if (PrintStats) fmt::print("{}", compiled.lowered.statsText());
  return 0;
}
