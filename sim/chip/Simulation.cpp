#include "sim/chip/Simulation.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "sim/chip/BufferIo.h"
#include "sim/systemc/StartSystemC.h"

namespace tpusim::sim {

namespace {
bool g_contextUsed = false;

// Stops SystemC once the chip is done; otherwise a model with periodic events
// (HBM refresh) would keep the kernel busy forever.
struct Stopper : sc_core::sc_module {
  SC_HAS_PROCESS(Stopper);
  Stopper(sc_core::sc_module_name n, Chip& chip) : sc_core::sc_module(n), chip_(chip) {
    SC_THREAD(run);
  }
  void run() {
    if (!chip_.allFinished()) wait(chip_.doneEvent());
    sc_core::sc_stop();
  }
  Chip& chip_;
};
}  // namespace

void resetSystemC() {
  // Keeps the banner out of tool output (stdout is for results).
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  if (!g_contextUsed) {
    g_contextUsed = true;
    return;
  }
  // The previous context is left alive: SystemC's teardown of a finished
  // context is not reliable, and a few KB per run do not matter. It is kept
  // on a list so that it stays reachable, not a leak in LeakSanitizer's eyes
  // (a list never destroyed: LeakSanitizer looks after static destructors).
  static auto* finishedContexts = new std::vector<sc_core::sc_simcontext*>;
  finishedContexts->push_back(sc_core::sc_curr_simcontext);
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

Simulation::Simulation(target::ChipConfig chip, isa::Program program, SimOptions options)
    : chip_(std::move(chip)), program_(std::move(program)), options_(std::move(options)) {}

Simulation::~Simulation() = default;

void Simulation::setInput(const std::string& name, const npy::Array& array,
                          const std::string& source) {
  for (const isa::BufferDesc& b : program_.buffers) {
    if (b.name != name) continue;
    if (b.role != isa::BufferRole::Input && b.role != isa::BufferRole::Constant)
      throw std::runtime_error(fmt::format("{}: buffer '{}' is an {} buffer, not an input", source,
                                           name, isa::bufferRoleName(b.role)));
    inputs_[name] = inputBytes(b, array, source);
    return;
  }
  std::string known;
  for (const isa::BufferDesc& b : program_.buffers)
    if (b.role == isa::BufferRole::Input) known += (known.empty() ? "" : ", ") + b.name;
  throw std::runtime_error(fmt::format("{}: the program has no input buffer '{}' (inputs: {})",
                                       source, name, known.empty() ? "none" : known));
}

ChipOptions chipOptionsOf(const SimOptions& options) {
  ChipOptions chipOptions;
  chipOptions.core.functional = options.functional;
  chipOptions.core.strict = options.strict;
  chipOptions.core.referenceStepping = options.referenceStepping;
  chipOptions.core.maxCycles = options.maxCycles;
  chipOptions.core.quantum = options.quantum;
  chipOptions.mxuKind = options.mxuKind;
  return chipOptions;
}

int hostThreadsOf(const SimOptions& o) {
  // The trace recorder, the RTL MXU's Verilated model and the per-cycle
  // reference are not safe (or not worth it) off SystemC's thread.
  if (o.trace || o.referenceStepping || o.mxuKind != MxuModelKind::Model) return 0;
  if (o.hostThreads > 1) return o.hostThreads;
  return o.forceHostJobs ? 1 : 0;
}

void loadChipImage(Chip& chip, const isa::Program& program,
                   const std::map<std::string, std::vector<uint8_t>>& inputs,
                   const SimOptions& options, uint64_t seed) {
  // Memory image: data segments (into every core's SMEM/VMEM), then inputs.
  for (const isa::DataSegment& seg : program.data) {
    int copies = seg.space == isa::MemorySpace::Hbm ? 1 : chip.numCores();
    for (int c = 0; c < copies; ++c)
      if (auto f = chip.memory()
                       .space(seg.space, c)
                       .write(seg.address, seg.bytes.data(), seg.bytes.size()))
        throw std::runtime_error(
            fmt::format("a data segment of the program does not fit: {}", f->describe()));
  }
  for (const isa::BufferDesc& b : program.buffers) {
    if (b.role != isa::BufferRole::Input && b.role != isa::BufferRole::Constant) continue;
    auto it = inputs.find(b.name);
    if (it != inputs.end())
      storeBuffer(chip.memory(), b, it->second);
    else if (options.functional && b.role == isa::BufferRole::Input)
      storeBuffer(chip.memory(), b, randomBytes(b, seed, options.randomInputs));
  }
}

void collectChipResult(Chip& chip, const isa::Program& program, bool functional, SimResult* out) {
  SimResult& r = *out;
  r.halted = true;
  for (int c = 0; c < chip.numCores(); ++c) {
    TensorCore& core = chip.core(c);
    r.cores.push_back(core.stats());
    if (core.fault() && !r.fault) r.fault = core.fault();
    if (!core.halted()) r.halted = false;
    r.cycles = std::max(r.cycles, core.halted() ? core.stats().haltCycle + 1 : core.cycle());
  }
  if (!r.halted && !r.fault) {
    // SystemC ran out of events with a core still waiting: nothing can wake it.
    for (int c = 0; c < chip.numCores(); ++c) {
      TensorCore& core = chip.core(c);
      if (core.finished()) continue;
      FaultInfo f;
      f.kind = "deadlock";
      f.message = core.waitingFor().empty()
                      ? "the simulation ran out of events with the core not halted"
                      : core.waitingFor() + ", but nothing is left that could complete";
      f.cycle = core.cycle();
      f.core = c;
      f.bundle = core.pc();
      f.unit = "core";
      r.fault = f;
      break;
    }
  }
  // Per-op stats summed over cores.
  for (size_t i = 0; i <= program.debugMap.size(); ++i) {
    OpReport op;
    op.name = i < program.debugMap.size() ? program.debugMap[i].opName : "(no op)";
    if (i < program.debugMap.size()) {
      const isa::DebugEntry& e = program.debugMap[i];
      if (e.hloInstruction != e.opName) op.hloOpName = e.hloInstruction;
      op.sourceFile = e.sourceFile;
      op.sourceLine = e.sourceLine;
    }
    for (const CoreStats& cs : r.cores) {
      const OpStats& s = cs.ops[i];
      op.stats.cycles += s.cycles;
      op.stats.bundles += s.bundles;
      op.stats.flops += s.flops;
      op.stats.mxuFlops += s.mxuFlops;
      op.stats.valuOps += s.valuOps;
      op.stats.transcendentalBusy += s.transcendentalBusy;
      op.stats.vldOps += s.vldOps;
      op.stats.vstOps += s.vstOps;
      op.stats.hbmBytesRead += s.hbmBytesRead;
      op.stats.hbmBytesWritten += s.hbmBytesWritten;
      for (int k = 0; k < kNumStallCauses; ++k) op.stats.stalls[k] += s.stalls[k];
      op.stats.vmemBytes += s.vmemBytes;
      op.stats.dmaBytes += s.dmaBytes;
    }
    if (op.stats.bundles > 0 || i < program.debugMap.size()) r.ops.push_back(op);
  }
  r.dma = chip.dmaReport();
  if (functional)
    for (const isa::BufferDesc& b : program.buffers)
      if (b.role == isa::BufferRole::Output) r.outputs[b.name] = loadBuffer(chip.memory(), b);
}

SimResult Simulation::run() {
  resetSystemC();
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
  trace_.reset();
  if (options_.trace)
    trace_ = std::make_unique<TraceRecorder>(chip_.core.clock_hz, options_.traceEventsPerTrack);

  ChipOptions chipOptions = chipOptionsOf(options_);
  std::unique_ptr<HostThreads> host;
  if (int n = hostThreadsOf(options_)) host = std::make_unique<HostThreads>("host", n);
  chipOptions.core.host = host.get();
  auto chip = std::make_unique<Chip>("chip0", 0, chip_, program_, chipOptions, trace_.get(),
                                     options_.dmaFactory);
  Stopper stopper("stopper", *chip);

  loadChipImage(*chip, program_, inputs_, options_, options_.seed);

  auto start = std::chrono::steady_clock::now();
  std::clock_t cpuStart = std::clock();
  const double mainStart = threadCpuSeconds();
  if (options_.progress) {
    // Progress is sampled from the host side between bounded sc_start slices.
    sc_core::sc_time slice(50, sc_core::SC_US);
    while (!chip->allFinished() && sc_core::sc_get_status() != sc_core::SC_STOPPED) {
      startSystemC(slice);
      int64_t cycle = 0;
      for (int c = 0; c < chip->numCores(); ++c) cycle = std::max(cycle, chip->core(c).cycle());
      options_.progress(cycle);
      if (!sc_core::sc_pending_activity() && !chip->allFinished()) break;
    }
  } else {
    startSystemC();
  }
  SimResult r;
  r.hostThreads = host ? host->threads() : 1;
  r.hostJobs = host ? int64_t(host->jobs()) : 0;
  r.hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.hostCpuSeconds = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  r.hostMainCpuSeconds = threadCpuSeconds() - mainStart;

  collectChipResult(*chip, program_, options_.functional, &r);
  if (trace_) r.traceEvents = int64_t(trace_->eventCount());
  return r;
}

}  // namespace tpusim::sim
