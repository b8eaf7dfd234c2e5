// tpusim: runs a program on the cycle-accurate chip model and reports cycles,
// utilization, stalls and the per-op profile. See docs/performance.md and
// `tpusim --help`.
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include "compiler/passes/PassOptions.h"
#include "isa/support/ParseCommandLine.h"
#include "sim/tools/tpusim/TpusimDriver.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("tpusim options");
static cl::opt<std::string> program(cl::Positional,
                                    cl::desc("<program.tpuprog | program.s | module.hlo>"),
                                    cl::Required, cl::cat(category));
static cl::opt<std::string> chip("chip",
                                 cl::desc("Chip preset name (v5e, v4, ...) or a .json file"),
                                 cl::value_desc("name|file.json"), cl::init("v5e"),
                                 cl::cat(category));
static cl::list<std::string> sets("set",
                                  cl::desc("Override a preset field, e.g. --set mxu.count=2"),
                                  cl::value_desc("key=value"), cl::cat(category));
static cl::opt<std::string> mode("mode",
                                 cl::desc("functional (real data, bit-exact) or timing (no data; "
                                          "same cycles)"),
                                 cl::value_desc("functional|timing"), cl::init("functional"),
                                 cl::cat(category));
static cl::list<std::string> inputs("input",
                                    cl::desc("Input buffer from a .npy file (others get seeded "
                                             "random data)"),
                                    cl::value_desc("NAME=file.npy"), cl::cat(category));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Write every output buffer as NAME.npy here "
                                               "(refuses a non-empty directory without --force)"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> force("force", cl::desc("Allow --output-dir to be a non-empty directory"),
                           cl::cat(category));
static cl::opt<std::string> trace("trace",
                                  cl::desc("Write a Chrome trace-event JSON (Perfetto UI)"),
                                  cl::value_desc("trace.json"), cl::cat(category));
static cl::opt<int64_t> maxCycles(
    "max-cycles", cl::desc("Stop with a fault after this many cycles (0: no limit)"), cl::init(0),
    cl::cat(category));
static cl::opt<bool> strict("strict",
                            cl::desc("A stall the schedule should have avoided (operand, MXU, XLU, "
                                     "VPU busy, bank conflict) is an error"),
                            cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random input data"), cl::init(1),
                              cl::cat(category));
static cl::opt<std::string> randomInputs(
    "random-inputs",
    cl::desc("Data of inputs without a file: uniform (floats in [-1, 1)) or fan-in (float inputs "
             "of rank >= 2 scaled by sqrt(3 / fan_in), like initialised weights)"),
    cl::value_desc("uniform|fan-in"), cl::init("uniform"), cl::cat(category));
static cl::opt<std::string> mxuModel("mxu-model",
                                     cl::desc("MXU implementation: fast (C++ model) or rtl "
                                              "(Verilated RTL, small sizes only)"),
                                     cl::value_desc("fast|rtl"), cl::init("fast"),
                                     cl::cat(category));
static cl::opt<int> topOps("top-ops",
                           cl::desc("Rows of the per-op table: the ops with the most cycles "
                                    "first (0: every op, in program order)"),
                           cl::init(20), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress on stderr"), cl::cat(category));
static cl::opt<bool> referenceStepping(
    "reference-stepping",
    cl::desc("Step the core one cycle at a time, waking SystemC every cycle (slow; the reference "
             "the fast loop must match)"),
    cl::cat(category));
static cl::opt<int64_t> quantum("quantum", cl::desc("Cycles a core may run ahead of SystemC time"),
                                cl::init(10000), cl::cat(category));
static cl::opt<int> hostThreads(
    "host-threads",
    cl::desc("Host threads that simulate the cores (and in timing mode the DMA/HBM) of the chips "
             "between synchronisations; the cycles are the same for any count (default: 1; "
             "a trace, --reference-stepping or the RTL MXU run on 1)"),
    cl::init(1), cl::value_desc("N"), cl::cat(category));
static cl::opt<int64_t> traceEvents("trace-events-per-track",
                                    cl::desc("Event budget per trace track before intervals are "
                                             "merged more coarsely"),
                                    cl::init(200000), cl::cat(category));

static cl::opt<bool> check("check",
                           cl::desc("For an .hlo module in functional mode: evaluate it with the "
                                    "reference evaluator (tpu-opt) on the same inputs, compare "
                                    "every output, exit 1 on a mismatch"),
                           cl::cat(category));
static cl::opt<bool> siblingDots(
    "sibling-dots",
    cl::desc("For an .hlo module: compile sibling dots (one LHS, results combined element-wise) "
             "as one kernel, as tpuc --sibling-dots (default on)"),
    cl::init(true), cl::cat(category),
    cl::cb<void, bool>([](bool on) { tpusim::passes::passOptions().fusionSiblingDots = on; }));
static cl::opt<bool> dotEpilogueOutputs(
    "dot-epilogue-outputs",
    cl::desc("For an .hlo module: a dot kernel and its element-wise consumer as one kernel with "
             "several outputs, as tpuc --dot-epilogue-outputs (default on)"),
    cl::init(true), cl::cat(category), cl::cb<void, bool>([](bool on) {
      tpusim::passes::passOptions().fusionDotEpilogueOutputs = on;
    }));
static cl::opt<bool> headEpilogues(
    "head-epilogues",
    cl::desc("For an .hlo module: fuse element-wise work and lane shuffles on a dot's result "
             "split into 128-lane heads into the dot's kernel, as tpuc --head-epilogues "
             "(default on)"),
    cl::init(true), cl::cat(category),
    cl::cb<void, bool>([](bool on) { tpusim::passes::passOptions().fusionHeadEpilogues = on; }));
static cl::opt<bool> transposeWeightsOnce(
    "transpose-weights-once",
    cl::desc("For an .hlo module: transpose a dot's [N, K] weights once through HBM where its M "
             "rows would load them transposed often enough, as tpuc --transpose-weights-once "
             "(default off)"),
    cl::init(false), cl::cat(category),
    cl::cb<void, bool>([](bool on) { tpusim::passes::passOptions().transposeWeightsOnce = on; }));
static cl::opt<bool> reassociateDequantScales(
    "reassociate-dequant-scales",
    cl::desc("For an .hlo module: as tpuc --reassociate-dequant-scales (the int8 dots' "
             "scale applied to the result: one rounding, not bit-identical to the HLO)"),
    cl::cat(category), cl::cb<void, bool>([](bool on) {
      tpusim::passes::passOptions().reassociateDequantScales = on;
    }));
static cl::opt<double> checkRtol("check-rtol",
                                 cl::desc("Relative tolerance of --check for f32/bf16 outputs "
                                          "(default 2e-2 for f32, 3e-2 for bf16; 0: exact)"),
                                 cl::init(-1), cl::cat(category));

static cl::opt<int64_t> steps(
    "steps",
    cl::desc("Run the program N times, each run's outputs that alias a donated input "
             "(input_output_alias: parameters, optimizer state, step count) becoming that input "
             "of the next; with --check the reference evaluator steps the same way and every "
             "step is compared"),
    cl::init(1), cl::value_desc("N"), cl::cat(category));

static cl::opt<std::string> profile(
    "profile",
    cl::desc("Write the XProf-style profile here: profile.json, report.html (open it in a "
             "browser), trace.json; prints the overview (tpu-prof DIR shows the op profile)"),
    cl::value_desc("dir"), cl::cat(category));

static cl::opt<int> profileDevice(
    "profile-device",
    cl::desc("With --profile on several chips: profile this device's ops (default: the slowest "
             "chip's)"),
    cl::init(-1), cl::value_desc("N"), cl::cat(category));

static cl::opt<std::string> topology(
    "topology",
    cl::desc("Run a system of chips joined by ICI, every chip the same program (SPMD): chips per "
             "torus dimension, 2x4 on a 2D preset, 2x2x2 on a 3D one (default: one chip)"),
    cl::value_desc("AxB|AxBxC"), cl::cat(category));

int main(int argc, char** argv) {
  // LLVM's Support library registers its own -stats (LLVM statistics), which
  // tpusim does not use: take the name over.
  auto& registered = cl::getRegisteredOptions();
  if (auto it = registered.find("stats"); it != registered.end()) it->second->removeArgument();
  cl::opt<std::string> stats("stats", cl::desc("Write statistics as JSON"),
                             cl::value_desc("stats.json"), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpusim: cycle-accurate simulation of a TPU-like chip\n\n"
      "  tpusim kernel.tpuprog --chip v5e --stats stats.json\n"
      "  tpusim kernel.s --chip v4 --mode timing --set mxu.count=2\n"
      "  tpusim model.hlo --chip v5e --check   (compiled by tpuc)\n");
  tpusim::sim::TpusimArgs a;
  a.program = program;
  a.chip = chip;
  a.sets.assign(sets.begin(), sets.end());
  a.mode = mode;
  a.inputs.assign(inputs.begin(), inputs.end());
  a.outputDir = outputDir;
  a.force = force;
  a.statsPath = stats;
  a.tracePath = trace;
  a.maxCycles = maxCycles;
  a.strict = strict;
  a.seed = seed;
  a.randomInputs = randomInputs;
  a.mxuModel = mxuModel;
  a.quiet = quiet;
  a.referenceStepping = referenceStepping;
  a.quantum = quantum;
  a.hostThreads = hostThreads;
  a.traceEventsPerTrack = traceEvents;
  a.check = check;
  if (topOps < 0) {
    fmt::print(stderr, "tpusim: error: --top-ops must be >= 0 (0 lists every op), got {}\n",
               int(topOps));
    return 1;
  }
  a.topOps = topOps;
  a.checkRtol = checkRtol;
  a.checkRtolGiven = checkRtol.getNumOccurrences() > 0;
  a.steps = steps;
  a.profileDir = profile;
  a.profileDevice = profileDevice;
  a.topology = topology;
  return tpusim::sim::runTpusim(a);
}
