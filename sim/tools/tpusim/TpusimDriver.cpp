#include "sim/tools/tpusim/TpusimDriver.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "compiler/lower/collectives/SpmdPlan.h"
#include "isa/Assembler.h"
#include "isa/ProgramFile.h"
#include "isa/support/InputFile.h"
#include "isa/support/Npy.h"
#include "isa/support/RunFiles.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "sim/chip/BufferIo.h"
#include "sim/chip/RunReport.h"
#include "sim/chip/Simulation.h"
#include "sim/ici/Torus.h"
#include "sim/tools/tpusim/HloProgram.h"
#include "sim/tools/tpusim/ProfileOutput.h"
#include "sim/tools/tpusim/ReferenceCheck.h"
#include "sim/tools/tpusim/SystemRun.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

RandomInputs randomInputsOf(const TpusimArgs& a) {
  RandomInputs kind;
  if (!parseRandomInputs(a.randomInputs, &kind))
    throw UserError(fmt::format("--random-inputs={}: expected uniform or fan-in", a.randomInputs));
  return kind;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

isa::Program loadProgram(const std::string& path) {
  isa::Program p;
  if (endsWith(path, ".s")) {
    std::string text;
    if (auto problem = support::readInputFile(path, &text))
      throw UserError(fmt::format("{}: {}", path, *problem));
    std::vector<isa::Diagnostic> diags;
    if (!isa::assemble(text, path, &p, &diags)) {
      std::string all;
      for (const isa::Diagnostic& d : diags) all += isa::formatDiagnostic(d);
      if (!all.empty() && all.back() == '\n') all.pop_back();
      throw UserError(all.rfind(path, 0) == 0 ? all.substr(0) : all);
    }
    return p;
  }
  std::string error;
  if (!isa::readProgramFile(path, &p, &error)) throw UserError(error);
  return p;
}

// The buffer `--input NAME=...` fills: a buffer name, or for a program with
// a signature also an entry parameter of one array, by number (0) or HLO name
// (Arg_0.1 or %Arg_0.1), as `tpu-opt --evaluate --input` names them.
std::string inputBufferName(const isa::Program& program, const std::string& name) {
  for (const isa::BufferDesc& b : program.buffers)
    if (b.name == name) return name;
  if (!program.hasSignature) return name;
  const std::vector<isa::SignatureParameter>& params = program.signature.parameters;
  std::string bare = name[0] == '%' ? name.substr(1) : name;
  for (size_t n = 0; n < params.size(); ++n)
    if (params[n].name == bare || std::to_string(n) == bare) {
      if (params[n].leaves.size() != 1 || !params[n].leaves[0].index.empty())
        throw UserError(
            fmt::format("--input {}: entry parameter {} (%{}) is {}; give its buffers by name ({})",
                        name, n, params[n].name, params[n].type, [&] {
                          std::string names;
                          for (const isa::SignatureLeaf& l : params[n].leaves)
                            names += (names.empty() ? "" : ", ") + l.buffer;
                          return names.empty() ? std::string("none") : names;
                        }()));
      return params[n].leaves[0].buffer;
    }
  return name;
}

// Refuses to mix outputs of two runs: the directory must be new or empty.
void prepareOutputDir(const std::string& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      throw UserError(fmt::format("--output-dir {}: exists and is not a directory", dir));
    if (!force && fs::directory_iterator(dir, ec) != fs::directory_iterator())
      throw UserError(fmt::format(
          "--output-dir {}: the directory is not empty (files of another run?); use --force to "
          "write into it anyway",
          dir));
    return;
  }
  if (!fs::create_directories(dir, ec))
    throw UserError(fmt::format("--output-dir {}: cannot create it: {}", dir, ec.message()));
}

// A buffer name as a file name: anything but [A-Za-z0-9_.-] becomes '_'.
std::string fileNameFor(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

void writeText(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot open the {} file for writing", path, what));
  f << text;
  if (!f) throw UserError(fmt::format("{}: error while writing the {}", path, what));
}

// A progress line on stderr, at most every half second.
class Progress {
 public:
  explicit Progress(double clockHz) : clockHz_(clockHz), start_(Clock::now()), last_(start_) {}
  void update(int64_t cycle) {
    auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_).count() < 0.5) return;
    last_ = now;
    double elapsed = std::chrono::duration<double>(now - start_).count();
    fmt::print(stderr, "\r  {} cycles ({:.3f} ms simulated)  {:.2f} M cycles/s  {:.1f} s elapsed  ",
               cycle, double(cycle) / clockHz_ * 1e3, double(cycle) / elapsed / 1e6, elapsed);
    shown_ = true;
  }
  void done() {
    if (shown_) fmt::print(stderr, "\n");
  }

 private:
  using Clock = std::chrono::steady_clock;
  double clockHz_;
  Clock::time_point start_, last_;
  bool shown_ = false;
};

// The value of every entry parameter of an .hlo program, for the reference
// evaluator: the user's file, or the simulator's seeded random data (then
// given to the simulation too, so both compute on the same values). The
// program's signature says which input buffer holds which parameter.
std::map<int64_t, driver::ParameterArray> checkInputs(
    const TpusimArgs& a, const isa::Program& program,
    const std::map<std::string, std::string>& given, Simulation& sim) {
  std::map<int64_t, driver::ParameterArray> parameters;
  const std::vector<isa::SignatureParameter>& params = program.signature.parameters;
  for (size_t n = 0; n < params.size(); ++n) {
    if (params[n].leaves.empty()) continue;
    if (params[n].leaves.size() != 1 || !params[n].leaves[0].index.empty())
      throw UserError(fmt::format(
          "--check: entry parameter {} is a tuple; the reference evaluator takes arrays only", n));
    const std::string& name = params[n].leaves[0].buffer;
    if (auto it = given.find(name); it != given.end()) {
      parameters[int64_t(n)] = {npy::read(it->second), it->second};
      continue;
    }
    const isa::BufferDesc* buffer = nullptr;
    for (const isa::BufferDesc& b : program.buffers)
      if (b.name == name && b.role == isa::BufferRole::Input) buffer = &b;
    if (!buffer) throw UserError(fmt::format("--check: the program has no input '{}'", name));
    npy::Array array = bytesToNpy(*buffer, randomBytes(*buffer, a.seed, randomInputsOf(a)));
    std::string source = fmt::format("the random data of input '{}' (--seed {})", name, a.seed);
    sim.setInput(name, array, source);
    parameters[int64_t(n)] = {std::move(array), source};
  }
  return parameters;
}

// Evaluates the module with the reference evaluator and compares every output.
// `reference` (when given) receives the evaluator's outputs by buffer name.
int checkOutputs(const TpusimArgs& a, const isa::Program& program, const SimResult& r,
                 const std::map<int64_t, driver::ParameterArray>& parameters,
                 std::map<std::string, npy::Array>* reference = nullptr) {
  std::vector<std::string> names;
  for (const isa::SignatureLeaf& leaf : program.signature.results) names.push_back(leaf.buffer);
  std::map<std::string, npy::Array> ref;
  try {
    ref = evaluateReference(a.program, parameters, names);
  } catch (const std::runtime_error& e) {
    throw UserError(fmt::format("--check: {}", e.what()));
  }
  fmt::print("\ncheck against the reference evaluator (tpu-opt --evaluate):\n");
  std::vector<OutputCheck> checks;
  std::vector<const isa::BufferDesc*> buffers;
  bool judgeRounding = false;
  for (const std::string& name : names) {
    const isa::BufferDesc* buffer = nullptr;
    for (const isa::BufferDesc& b : program.buffers)
      if (b.name == name && b.role == isa::BufferRole::Output) buffer = &b;
    auto sim = r.outputs.find(name);
    if (!buffer || sim == r.outputs.end())
      throw UserError(fmt::format("--check: the program has no output '{}'", name));
    checks.push_back(compareOutput(*buffer, sim->second, ref.at(name), a.checkRtol));
    buffers.push_back(buffer);
    judgeRounding |= checks.back().wantsRoundingJudgement();
  }
  // Some float outputs fail per element: judge their bf16 rounding against
  // the module evaluated in f32 (ReferenceCheck.h). Not when the user gave
  // --check-rtol: that tolerance is theirs, with no second judgement.
  if (judgeRounding && !a.checkRtolGiven) {
    std::map<std::string, npy::Array> exact;
    try {
      exact = evaluateReference(a.program, parameters, names, "promote-to-f32",
                                /*mxuDots=*/false);
    } catch (const std::runtime_error& e) {
      throw UserError(fmt::format("--check: {}", e.what()));
    }
    for (size_t i = 0; i < names.size(); ++i)
      judgeBf16Rounding(checks[i], *buffers[i], r.outputs.at(names[i]), ref.at(names[i]),
                        exact.at(names[i]));
  }
  if (reference) *reference = ref;
  int failed = 0;
  for (const OutputCheck& c : checks) {
    fmt::print("  {}\n", c.line());
    failed += !c.ok();
  }
  if (failed) {
    fmt::print(stderr, "tpusim: error: --check: {} of {} outputs differ from the reference\n",
               failed, names.size());
    return 1;
  }
  fmt::print("  all {} outputs match\n", names.size());
  return 0;
}

// --input NAME=file.npy, split.
std::vector<std::pair<std::string, std::string>> parseInputs(const std::vector<std::string>& in) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& s : in) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
      throw UserError(fmt::format("--input {}: expected NAME=file.npy", s));
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

// Every file the run reads and writes: no output may be an input or another output.
void checkRunFiles(const TpusimArgs& a, const isa::Program& program,
                   const std::vector<std::pair<std::string, std::string>>& inputFiles) {
  support::RunFiles files;
  files.input("the input program", a.program);
  try {
    files.input("the --chip file", target::resolveChipPath(a.chip));
  } catch (const target::ConfigError&) {
    // loadChip already read it; a name that does not resolve is no file
  }
  for (const auto& [name, path] : inputFiles) files.input("--input " + name, path);
  files.output("--stats", a.statsPath);
  files.output("--trace", a.tracePath);
  if (!a.outputDir.empty()) {
    std::vector<std::string> names;
    for (const isa::BufferDesc& b : program.buffers)
      if (b.role == isa::BufferRole::Output) names.push_back(fileNameFor(b.name) + ".npy");
    files.outputsIn("--output-dir", a.outputDir, names);
  }
  if (std::string clash = files.clash(); !clash.empty()) throw UserError(clash);
}

// --steps: which output buffer is fed into which entry parameter (and its
// input buffer) for the next run: the program's input_output_alias pairs.
struct StepFeed {
  std::string output, input;
  int64_t parameter = 0;
};

std::vector<StepFeed> stepFeeds(const isa::Program& program) {
  std::vector<StepFeed> feeds;
  if (!program.hasSignature) return feeds;
  const isa::ProgramSignature& sig = program.signature;
  for (const isa::SignatureAlias& alias : sig.aliases) {
    StepFeed f;
    f.parameter = alias.parameter;
    for (const isa::SignatureLeaf& leaf : sig.results)
      if (leaf.index == alias.outputIndex) f.output = leaf.buffer;
    if (alias.parameter >= 0 && alias.parameter < int64_t(sig.parameters.size()))
      for (const isa::SignatureLeaf& leaf : sig.parameters[size_t(alias.parameter)].leaves)
        if (leaf.index == alias.parameterIndex) f.input = leaf.buffer;
    if (f.output.empty() || f.input.empty())
      throw UserError(fmt::format(
          "--steps: an input_output_alias of the program names no array output and parameter "
          "(output {{{}}}, parameter {})",
          fmt::join(alias.outputIndex, ","), alias.parameter));
    feeds.push_back(f);
  }
  return feeds;
}

int run(const TpusimArgs& a) {
  if (a.mode != "functional" && a.mode != "timing")
    throw UserError(fmt::format("--mode={}: expected functional or timing", a.mode));
  MxuModelKind mxuKind;
  if (a.mxuModel == "fast")
    mxuKind = MxuModelKind::Model;
  else if (!parseMxuModelKind(a.mxuModel, &mxuKind))
    throw UserError(fmt::format("--mxu-model={}: expected fast or rtl", a.mxuModel));
  if (a.maxCycles < 0) throw UserError("--max-cycles must be >= 0");
  if (a.quantum < 1) throw UserError("--quantum must be >= 1");
  if (a.hostThreads < 1 || a.hostThreads > 256)
    throw UserError(fmt::format("--host-threads={}: expected 1 to 256", a.hostThreads));
  if (!a.outputDir.empty() && a.mode == "timing")
    throw UserError("--output-dir needs --mode=functional (timing mode computes no data)");
  const bool fromHlo = isHloPath(a.program);
  if (a.check && !fromHlo)
    throw UserError(fmt::format(
        "--check needs an .hlo module (it evaluates the module with the reference evaluator); "
        "{} is not one",
        a.program));
  if (a.check && a.mode != "functional")
    throw UserError("--check needs --mode=functional (timing mode computes no data)");
  if (a.checkRtolGiven && !(a.checkRtol >= 0 && std::isfinite(a.checkRtol)))
    throw UserError(
        fmt::format("--check-rtol={}: expected a finite number >= 0 (0: exact)", a.checkRtol));
  if (a.checkRtolGiven && !a.check)
    throw UserError("--check-rtol needs --check (it is the tolerance of the comparison)");
  if (a.traceEventsPerTrack < 16)
    throw UserError(
        fmt::format("--trace-events-per-track={}: expected at least 16", a.traceEventsPerTrack));
  if (a.profileDevice >= 0 && a.profileDir.empty())
    throw UserError("--profile-device needs --profile (it chooses whose ops the profile shows)");
  if (a.steps < 1) throw UserError(fmt::format("--steps={}: expected at least 1", a.steps));
  std::vector<std::pair<std::string, std::string>> inputFiles = parseInputs(a.inputs);

  target::ChipConfig chip = target::loadChip(a.chip);
  target::applyOverrides(chip, a.sets);
  // An .hlo module is compiled in process for exactly this chip.
  isa::Program program;
  prof::ProfileInputs profileInputs;
  if (!a.profileDir.empty()) {
    std::vector<std::string> inputFiles = {a.program};
    for (const std::string& in : a.inputs) inputFiles.push_back(in.substr(in.find('=') + 1));
    prepareProfileDir(a.profileDir, a.force, inputFiles);
  }
  if (fromHlo) {
    if (auto problem = support::inputFileProblem(a.program))
      throw UserError(fmt::format("{}: {}", a.program, *problem));
    try {
      program = compileHlo(a.program, chip, a.profileDir.empty() ? nullptr : &profileInputs);
    } catch (const std::runtime_error& e) {
      throw UserError(e.what());
    }
  } else {
    program = loadProgram(a.program);
  }
  checkRunFiles(a, program, inputFiles);
  if (!program.chip.empty() && program.chip != chip.name)
    fmt::print(stderr, "tpusim: warning: {} was built for chip '{}', running it on '{}'\n",
               a.program, program.chip, chip.name);

  SimOptions o;
  o.functional = a.mode == "functional";
  o.strict = a.strict;
  o.referenceStepping = a.referenceStepping;
  if (a.maxCycles > 0) o.maxCycles = a.maxCycles;
  o.quantum = a.quantum;
  o.hostThreads = a.hostThreads;
  o.seed = a.seed;
  o.randomInputs = randomInputsOf(a);
  o.mxuKind = mxuKind;
  o.trace = !a.tracePath.empty() || !a.profileDir.empty();
  o.traceEventsPerTrack = size_t(a.traceEventsPerTrack);
  o.dmaFactory = makeChipDma;
  std::unique_ptr<Progress> progress;
  if (!a.quiet && isatty(STDERR_FILENO)) {
    progress = std::make_unique<Progress>(chip.core.clock_hz);
    o.progress = [&](int64_t cycle) { progress->update(cycle); };
  }
  // An SPMD program runs on the slice it was compiled for.
  TpusimArgs system = a;
  if (program.hasSignature && program.signature.devices > 1) {
    const int64_t devices = program.signature.devices;
    if (system.topology.empty()) {
      try {
        system.topology = lower::sliceText(lower::spmdSlice(devices, chip.ici));
      } catch (const std::invalid_argument& e) {
        throw UserError(fmt::format("{}: {}", a.program, e.what()));
      }
    } else if (int64_t n = ici::Torus::parse(system.topology, chip.ici).numChips(); n != devices) {
      throw UserError(fmt::format(
          "--topology {} has {} chips, but {} was compiled for {} devices (an SPMD module's "
          "num_partitions, replica_count or collective device ids; a multi-chip library "
          "kernel's devices); give a topology of {} chips or leave --topology out",
          system.topology, n, a.program, devices, devices));
    }
  }
  if (!system.topology.empty() && a.steps > 1)
    throw UserError("--steps of a multi-chip run (SPMD): stepping a system is not built yet");
  if (!system.topology.empty())
    return runSystem(
        system, chip, program, o,
        [&](const std::string& name) { return inputBufferName(program, name); }, profileInputs);
  if (a.profileDevice > 0)
    throw UserError(fmt::format(
        "--profile-device {}: {} runs on one chip (device 0); the option picks a device of a "
        "multi-chip run (--topology or an SPMD module)",
        a.profileDevice, a.program));
  std::vector<StepFeed> feeds = stepFeeds(program);
  if (a.steps > 1 && feeds.empty())
    throw UserError(fmt::format(
        "--steps={}: {} donates no input to an output (no input_output_alias), so a run's outputs "
        "cannot be the next run's inputs",
        a.steps, a.program));
  std::map<std::string, npy::Array> fileInputs;  // input buffer -> the --input array
  std::map<std::string, std::string> given;      // input buffer -> .npy file
  for (auto [name, path] : inputFiles) {
    npy::Array array;
    try {
      array = npy::read(path);
    } catch (const npy::NpyError& e) {
      throw UserError(e.what());
    }
    std::string given0 = name;
    name = inputBufferName(program, name);
    if (auto it = given.find(name); it != given.end())
      throw UserError(fmt::format("--input {}={}: buffer '{}' is already given by --input ({})",
                                  given0, path, name, it->second));
    fileInputs[name] = std::move(array);
    given[name] = path;
  }
  if (!a.outputDir.empty()) prepareOutputDir(a.outputDir, a.force);

  // Every step is a fresh simulation (Simulation.h: one SystemC context per
  // run); the fed inputs carry the chip's own outputs from step to step, and
  // --check's reference its own, so the two chains are independent.
  std::map<std::string, std::pair<npy::Array, std::string>> carried;  // input buffer -> array
  std::map<int64_t, driver::ParameterArray> parameters;               // --check's inputs
  int status = 0;
  for (int64_t step = 1; step <= a.steps; ++step) {
    const bool last = step == a.steps;
    if (a.steps > 1) fmt::print("{}step {} of {}\n", step > 1 ? "\n" : "", step, a.steps);
    SimOptions so = o;
    so.trace = last && o.trace;  // the trace and profile describe the last step
    // The last step takes the program itself (a copy of every bundle, then
    // freed, was a third of a decode layer's page faults); `prog` is
    // whichever copy this step reads.
    Simulation sim(chip, last ? std::move(program) : program, so);
    const isa::Program& prog = sim.program();
    for (const auto& [name, array] : fileInputs)
      if (!carried.count(name)) sim.setInput(name, array, given.at(name));
    for (const auto& [name, input] : carried) sim.setInput(name, input.first, input.second);
    // --check: every input as an array both the simulator and the evaluator read.
    if (a.check && step == 1) parameters = checkInputs(a, prog, given, sim);
    if (a.check && step > 1)
      for (const auto& [n, p] : parameters)
        if (const std::string& name = prog.signature.parameters[size_t(n)].leaves[0].buffer;
            !carried.count(name))
          sim.setInput(name, p.array, p.source);

    SimResult r = sim.run();
    if (progress) progress->done();

    RunInfo info;
    info.program = fs::path(a.program).filename().string();
    info.mode = a.mode;
    info.topOps = a.topOps;
    // Stats and trace are written even after a fault: they show how far it got.
    if (!a.statsPath.empty() && (last || r.fault))
      writeText(a.statsPath, statsJson(r, chip, info).dump(2) + "\n", "stats");
    if (!a.tracePath.empty() && sim.trace()) sim.trace()->write(a.tracePath);
    fmt::print("{}", summaryText(r, chip, info));
    if (!a.profileDir.empty() && last)
      writeProfile(a.profileDir, r, prog, chip, sim.trace(), info.program, profileInputs);
    for (const CoreStats& cs : r.cores)
      if (cs.unmovedSmemDmas > 0) {
        fmt::print(stderr,
                   "tpusim: warning: timing mode moves no DMA data, but {} DMA descriptor(s) "
                   "were built from SMEM that a DMA fills (first: {}; e.g. gather indices): "
                   "their addresses, and so the cycles, may differ from a functional run (--mode "
                   "functional)\n",
                   cs.unmovedSmemDmas, cs.firstUnmovedSmemDma);
        break;
      }
    for (const CoreStats& cs : r.cores)
      if (cs.unmovedSmemBranches > 0) {
        fmt::print(stderr,
                   "tpusim: warning: timing mode moves no DMA data, but {} branch(es) depended "
                   "on SMEM that a DMA fills (first: {}): the control flow, and so the cycles, "
                   "may differ from a functional run (--mode functional)\n",
                   cs.unmovedSmemBranches, cs.firstUnmovedSmemBranch);
        break;
      }
    if (r.fault) {
      fmt::print(stderr, "tpusim: error: {}{}", a.steps > 1 ? fmt::format("step {}: ", step) : "",
                 r.fault->report());
      return 1;
    }
    if (!a.outputDir.empty() && last)
      for (const auto& [name, array] : r.outputs)
        npy::write((fs::path(a.outputDir) / (fileNameFor(name) + ".npy")).string(), array);
    std::map<std::string, npy::Array> reference;
    if (a.check) status |= checkOutputs(a, prog, r, parameters, &reference);
    if (last) break;
    for (const StepFeed& f : feeds) {
      auto out = r.outputs.find(f.output);
      if (out == r.outputs.end())
        throw UserError(fmt::format("--steps: the run wrote no output '{}'", f.output));
      carried[f.input] = {out->second, fmt::format("output '{}' of step {}", f.output, step)};
      if (a.check)
        parameters[f.parameter] = {
            reference.at(f.output),
            fmt::format("the reference's output '{}' of step {}", f.output, step)};
    }
  }
  return status;
}

}  // namespace

int runTpusim(const TpusimArgs& a) {
  try {
    return run(a);
  } catch (const UserError& e) {
    fmt::print(stderr, "tpusim: error: {}\n", e.what());
  } catch (const target::ConfigError& e) {
    // Config messages may carry their own "error: " prefix per line.
    std::string m = e.what();
    fmt::print(stderr, "tpusim: {}{}\n", m.rfind("error: ", 0) == 0 ? "" : "error: ", m);
  } catch (const npy::NpyError& e) {
    fmt::print(stderr, "tpusim: error: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpusim: error: {}\n", e.what());
  }
  return 1;
}

}  // namespace tpusim::sim
