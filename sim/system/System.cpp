#include "sim/system/System.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <stdexcept>

#include "sim/dma/DescriptorWalker.h"
#include "sim/ici/IciFabric.h"
#include "sim/systemc/StartSystemC.h"

namespace tpusim::sim {
namespace {

// What travels over the fabric: a remote DMA's bytes or a flag signal.
struct Message {
  bool transfer = false;
  int src = 0, dst = 0, core = 0;
  int queue = 0, sendFlag = 0, recvFlag = 0;
  uint32_t amount = 0;
  isa::DmaDescriptor desc;
  std::vector<uint8_t> data;  // functional mode: the source bytes, read at issue
  int64_t issueCycle = 0;
};

// Calls f(srcAddress, dstAddress, bytes) for every innermost run of `d`.
template <class F>
void forEachRun(const isa::DmaDescriptor& d, F f) {
  for (uint32_t i3 = 0; i3 < d.counts[2]; ++i3)
    for (uint32_t i2 = 0; i2 < d.counts[1]; ++i2)
      for (uint32_t i1 = 0; i1 < d.counts[0]; ++i1)
        f(d.srcAddr + uint64_t(i1) * d.srcStrides[0] + uint64_t(i2) * d.srcStrides[1] +
              uint64_t(i3) * d.srcStrides[2],
          d.dstAddr + uint64_t(i1) * d.dstStrides[0] + uint64_t(i2) * d.dstStrides[1] +
              uint64_t(i3) * d.dstStrides[2],
          uint64_t(d.innerBytes));
}

class Router;

// One chip's view of the system (what its cores call).
class ChipIciPort : public RemotePort {
 public:
  ChipIciPort(Router& router, int device) : router_(router), device_(device) {}
  int deviceId() const override { return device_; }
  int numDevices() const override;
  std::string sendRemote(int core, int queue, int sendFlag, int recvFlag, int device,
                         const isa::DmaDescriptor& desc, int64_t cycle,
                         int64_t* faultAddress) override;
  std::string signalRemote(int core, int device, int flag, uint32_t amount, int64_t cycle) override;

 private:
  Router& router_;
  int device_;
};

// Owns the fabric's messages and delivers them to the chips.
class Router {
 public:
  Router(ici::IciFabric& fabric, const target::ChipConfig& config, bool functional)
      : fabric_(fabric), config_(config), functional_(functional) {
    fabric_.onDrained = [this](int64_t id, int64_t cycle) { drained(id, cycle); };
    fabric_.onArrived = [this](int64_t id, int64_t) { arrived(id); };
  }
  void setChips(std::vector<Chip*> chips) { chips_ = std::move(chips); }
  int numChips() const { return fabric_.torus().numChips(); }

  std::string checkDevice(int self, int device, const char* op) const {
    if (device < 0 || device >= numChips())
      return fmt::format("{} to device {}: the system has devices 0..{} (--topology {})", op,
                         device, numChips() - 1, fabric_.torus().shapeText());
    if (device == self)
      return fmt::format("{} to device {}, which is this chip: use a local dma / sync.signal", op,
                         device);
    return "";
  }

  std::string send(int self, int core, int queue, int sendFlag, int recvFlag, int device,
                   const isa::DmaDescriptor& d, int64_t cycle, int64_t* faultAddress) {
    *faultAddress = -1;
    std::string problem = checkDevice(self, device, "dma.remote");
    if (!problem.empty()) return problem;
    if (d.dstChip != isa::kDmaLocalChip)
      return fmt::format(
          "dma.remote: the descriptor's chip field is {}; it must be 0xFFFF (the destination "
          "device comes from the register operand)",
          d.dstChip);
    if (d.widening()) return "dma.remote: widening copies (elem=) are local only";
    for (isa::MemorySpace s : {d.src, d.dst})
      if (s != isa::MemorySpace::Hbm && s != isa::MemorySpace::Vmem)
        return fmt::format("dma.remote: {} to {}: only HBM and VMEM go over ICI",
                           isa::memorySpaceName(d.src), isa::memorySpaceName(d.dst));
    if (d.innerBytes == 0 || d.counts[0] == 0 || d.counts[1] == 0 || d.counts[2] == 0)
      return "dma.remote: a size or count of 0";
    for (bool source : {true, false}) {
      isa::MemorySpace space = source ? d.src : d.dst;
      uint64_t base = source ? d.srcAddr : d.dstAddr;
      uint64_t cap = uint64_t(space == isa::MemorySpace::Hbm ? config_.hbm.capacity_bytes
                                                             : config_.vmem.bytes);
      unsigned __int128 end = (unsigned __int128)base + dma::descriptorExtent(d, source);
      if (end > cap) {
        *faultAddress = int64_t(base);
        return fmt::format(
            "dma.remote to device {}: the {} range [{:#x}, ...) runs past the end of {} ({} "
            "bytes){}",
            device, source ? "source" : "destination", base, isa::memorySpaceName(space), cap,
            source ? "" : " on the destination chip");
      }
    }
    Message m;
    m.transfer = true;
    m.src = self;
    m.dst = device;
    m.core = core;
    m.queue = queue;
    m.sendFlag = sendFlag;
    m.recvFlag = recvFlag;
    m.desc = d;
    m.issueCycle = cycle;
    if (functional_) {
      // The source is read at issue: it may be reused once the send flag says
      // the last byte has left, and a program that writes it earlier races.
      m.data.resize(d.totalBytes());
      uint8_t* out = m.data.data();
      mem::SparseMemory& src = chips_[size_t(self)]->memory().space(d.src, core);
      forEachRun(d, [&](uint64_t s, uint64_t, uint64_t n) {
        (void)src.read(s, out, n);
        out += n;
      });
    }
    int64_t id = fabric_.send(self, device, d.totalBytes(), cycle);
    messages_.emplace(id, std::move(m));
    return "";
  }

  std::string signal(int self, int core, int device, int flag, uint32_t amount, int64_t cycle) {
    std::string problem = checkDevice(self, device, "sync.remote");
    if (!problem.empty()) return problem;
    Message m;
    m.src = self;
    m.dst = device;
    m.core = core;
    m.recvFlag = flag;
    m.amount = amount;
    m.issueCycle = cycle;
    messages_.emplace(fabric_.signal(self, device, cycle), std::move(m));
    return "";
  }

 private:
  void drained(int64_t id, int64_t cycle) {
    const Message& m = messages_.at(id);
    DmaCompletion c;
    c.queue = m.queue;
    c.flag = m.sendFlag;
    c.bytes = m.desc.totalBytes();
    c.issueCycle = m.issueCycle;
    c.completeCycle = cycle;
    chips_[size_t(m.src)]->core(m.core).deliverCompletion(c);
  }
  void arrived(int64_t id) {
    auto it = messages_.find(id);
    Message& m = it->second;
    Chip& dst = *chips_[size_t(m.dst)];
    if (m.transfer) {
      if (functional_) {
        mem::SparseMemory& out = dst.memory().space(m.desc.dst, m.core);
        const uint8_t* in = m.data.data();
        forEachRun(m.desc, [&](uint64_t, uint64_t d, uint64_t n) {
          (void)out.write(d, in, n);
          in += n;
        });
      }
      dst.core(m.core).deliverSignal(m.recvFlag, 1);
    } else {
      dst.core(m.core).deliverSignal(m.recvFlag, m.amount);
    }
    messages_.erase(it);
  }

  ici::IciFabric& fabric_;
  const target::ChipConfig& config_;
  bool functional_;
  std::vector<Chip*> chips_;
  std::map<int64_t, Message> messages_;
};

int ChipIciPort::numDevices() const { return router_.numChips(); }
std::string ChipIciPort::sendRemote(int core, int queue, int sendFlag, int recvFlag, int device,
                                    const isa::DmaDescriptor& desc, int64_t cycle,
                                    int64_t* faultAddress) {
  return router_.send(device_, core, queue, sendFlag, recvFlag, device, desc, cycle, faultAddress);
}
std::string ChipIciPort::signalRemote(int core, int device, int flag, uint32_t amount,
                                      int64_t cycle) {
  return router_.signal(device_, core, device, flag, amount, cycle);
}

// Stops SystemC when every chip is done or one has faulted.
struct SystemStopper : sc_core::sc_module {
  SC_HAS_PROCESS(SystemStopper);
  SystemStopper(sc_core::sc_module_name n, std::vector<Chip*> chips)
      : sc_core::sc_module(n), chips_(std::move(chips)) {
    SC_THREAD(run);
  }
  void run() {
    while (true) {
      bool all = true;
      sc_core::sc_event_or_list any;
      for (Chip* chip : chips_) {
        for (int c = 0; c < chip->numCores(); ++c)
          if (chip->core(c).fault()) {
            sc_core::sc_stop();
            return;
          }
        if (!chip->allFinished()) {
          all = false;
          for (int c = 0; c < chip->numCores(); ++c) any |= chip->core(c).finishedEvent();
        }
      }
      if (all) {
        sc_core::sc_stop();
        return;
      }
      wait(any);
    }
  }
  std::vector<Chip*> chips_;
};

}  // namespace

uint64_t deviceSeed(uint64_t seed, int device) {
  if (device == 0) return seed;
  uint64_t z = seed ^ (uint64_t(device) * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SystemSimulation::SystemSimulation(target::ChipConfig chip, isa::Program program,
                                   SimOptions options, ici::Torus torus)
    : chip_(std::move(chip)),
      program_(std::move(program)),
      options_(std::move(options)),
      torus_(std::move(torus)),
      inputs_(size_t(torus_.numChips()) + 1) {}

SystemSimulation::~SystemSimulation() = default;

void SystemSimulation::setInput(const std::string& name, const npy::Array& array,
                                const std::string& source, int device) {
  if (device >= torus_.numChips())
    throw std::runtime_error(fmt::format("{}: device {} does not exist (the system has {} chips)",
                                         source, device, torus_.numChips()));
  // Simulation::setInput holds the checks and the conversion.
  Simulation check(chip_, program_, options_);
  check.setInput(name, array, source);
  for (const isa::BufferDesc& b : program_.buffers)
    if (b.name == name)
      inputs_[device < 0 ? size_t(torus_.numChips()) : size_t(device)][name] =
          inputBytes(b, array, source);
}

SystemResult SystemSimulation::run() {
  resetSystemC();
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
  trace_.reset();
  if (options_.trace)
    trace_ = std::make_unique<TraceRecorder>(chip_.core.clock_hz, options_.traceEventsPerTrack);
  const int n = torus_.numChips();

  std::unique_ptr<HostThreads> host;
  if (int threads = hostThreadsOf(options_)) host = std::make_unique<HostThreads>("host", threads);
  ici::IciFabric fabric("ici", torus_, chip_.ici, chip_.core.clock_hz);
  fabric.setTrace(trace_.get());
  Router router(fabric, chip_, options_.functional);
  std::vector<std::unique_ptr<ChipIciPort>> ports;
  std::vector<std::unique_ptr<Chip>> chips;
  std::vector<Chip*> chipPtrs;
  for (int d = 0; d < n; ++d) {
    ports.push_back(std::make_unique<ChipIciPort>(router, d));
    ChipOptions o = chipOptionsOf(options_);
    o.core.remote = ports.back().get();
    o.core.host = host.get();
    chips.push_back(std::make_unique<Chip>(fmt::format("chip{}", d).c_str(), d, chip_, program_, o,
                                           trace_.get(), options_.dmaFactory));
    chipPtrs.push_back(chips.back().get());
  }
  router.setChips(chipPtrs);
  SystemStopper stopper("stopper", chipPtrs);
  for (int d = 0; d < n; ++d) {
    std::map<std::string, std::vector<uint8_t>> in = inputs_[size_t(n)];
    for (const auto& [name, bytes] : inputs_[size_t(d)]) in[name] = bytes;
    loadChipImage(*chips[size_t(d)], program_, in, options_, deviceSeed(options_.seed, d));
  }

  auto start = std::chrono::steady_clock::now();
  std::clock_t cpuStart = std::clock();
  const double mainStart = threadCpuSeconds();
  startSystemC();
  SystemResult r;
  r.hostThreads = host ? host->threads() : 1;
  r.hostJobs = host ? int64_t(host->jobs()) : 0;
  r.hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.hostCpuSeconds = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  r.hostMainCpuSeconds = threadCpuSeconds() - mainStart;
  r.topology = torus_.shapeText();

  r.halted = true;
  std::string waiting;
  int64_t waitCycle = -1;
  for (int d = 0; d < n; ++d) {
    Chip& chip = *chips[size_t(d)];
    SimResult cr;
    collectChipResult(chip, program_, options_.functional, &cr);
    r.cycles = std::max(r.cycles, cr.cycles);
    r.halted = r.halted && cr.halted;
    // A fault of its own (not the deadlock every stuck chip reports) is the run's fault.
    if (cr.fault && cr.fault->kind != "deadlock" && !r.fault) {
      r.fault = cr.fault;
      r.fault->message = fmt::format("chip {}: {}", d, r.fault->message);
      r.faultChip = d;
    }
    for (int c = 0; c < chip.numCores(); ++c) {
      TensorCore& core = chip.core(c);
      if (core.finished()) continue;
      if (waitCycle < 0 || core.cycle() < waitCycle) waitCycle = core.cycle();
      waiting += fmt::format(
          "\n  chip {}: {}", d,
          core.waitingFor().empty() ? fmt::format("core {} did not halt", c) : core.waitingFor());
      if (r.faultChip < 0) r.faultChip = d;
    }
    r.chips.push_back(std::move(cr));
  }
  if (!r.halted && !r.fault) {
    FaultInfo f;
    f.kind = "deadlock";
    f.message = fmt::format(
        "every chip still running waits for a flag that no chip, DMA or ICI transfer in flight "
        "will signal ({} ICI message(s) in flight):{}",
        fabric.inFlight(), waiting);
    f.cycle = waitCycle;
    f.unit = "ici";
    f.core = r.chips[size_t(r.faultChip)].fault ? r.chips[size_t(r.faultChip)].fault->core : -1;
    f.bundle = r.chips[size_t(r.faultChip)].fault ? r.chips[size_t(r.faultChip)].fault->bundle : -1;
    r.fault = f;
  }
  r.linkBytesPerCycle = fabric.bytesPerCycle();
  double step = double(std::max<int64_t>(r.cycles, 1));
  for (int l = 0; l < torus_.numLinkSlots(); ++l) {
    if (!torus_.linkExists(l)) continue;
    ici::LinkId id = torus_.link(l);
    LinkReport lr;
    lr.name = torus_.linkName(l);
    lr.chip = id.chip;
    lr.dim = id.dim;
    lr.dir = id.dir;
    lr.to = torus_.neighbour(id.chip, id.dim, id.dir);
    lr.bytes = fabric.network().linkStats(l).bytes;
    lr.flows = fabric.network().linkStats(l).flows;
    lr.utilization = lr.bytes / (fabric.bytesPerCycle() * step);
    r.links.push_back(lr);
  }
  r.iciTransfers = fabric.transfers();
  r.iciSignals = fabric.signals();
  r.iciRateUpdates = fabric.network().rateUpdates();
  if (trace_) r.traceEvents = int64_t(trace_->eventCount());
  return r;
}

}  // namespace tpusim::sim
