// tpusim-hbm-bench: bandwidth of the HBM model on a preset, and how fast the
// model simulates. Patterns:
//   stream-read, stream-write  sequential requests of --request-bytes, with
//                              --window requests in flight (HBM model alone)
//   conflict                   one bank of one pseudo-channel, a new row per burst
//   dma-stream                 HBM -> VMEM descriptors of --descriptor-bytes on queue 0
//                              of core 0, through the DMA engine (queue_depth in flight)
//   dma-stream-all-queues      the same spread round-robin over every queue: concurrent
//                              streams 1 descriptor apart, which meet in the same banks
//   dma-block                  a dot's weight blocks: HBM -> VMEM descriptors of
//                              --block-bytes in runs of --run-bytes, --stride apart,
//                              consecutive blocks --run-bytes apart (the next N block
//                              of the same rows), queue 0, bf16 widened as kernels do
// Prints one line per pattern (or a Markdown table row with --markdown):
// achieved bandwidth, % of the preset's peak, simulated HBM cycles per host CPU second.
//
//   tpusim-hbm-bench --chip v5e --pattern stream-read --pattern conflict
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <ctime>
#include <exception>
#include <vector>

#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "sim/dma/DmaEngine.h"
#include "sim/hbm/HbmModel.h"

namespace cl = llvm::cl;
using namespace tpusim;
using namespace tpusim::sim;

namespace {

cl::OptionCategory category("tpusim-hbm-bench options");
cl::opt<std::string> chipOpt("chip", cl::desc("chip preset name or path to a .json file"),
                             cl::value_desc("name|file.json"), cl::init("v5e"), cl::cat(category));
cl::list<std::string> setOpt("set", cl::desc("override one field, e.g. --set hbm.refresh=none"),
                             cl::value_desc("section.field=value"), cl::cat(category));
cl::list<std::string> patternOpt(
    "pattern",
    cl::desc("stream-read, stream-write, conflict, dma-stream, dma-stream-all-queues, dma-block "
             "(repeatable; default all but dma-block)"),
    cl::value_desc("name"), cl::cat(category));
cl::opt<uint64_t> bytesOpt("bytes", cl::desc("bytes each streaming pattern moves"),
                           cl::init(uint64_t(256) << 20), cl::cat(category));
cl::opt<uint64_t> conflictsOpt("conflicts", cl::desc("bursts of the conflict pattern"),
                               cl::init(20000), cl::cat(category));
cl::opt<uint32_t> requestOpt(
    "request-bytes", cl::desc("request size of the HBM-only patterns (0: dma.request_bytes)"),
    cl::init(0), cl::cat(category));
cl::opt<uint32_t> windowOpt("window",
                            cl::desc("requests in flight (0: dma.max_outstanding_requests)"),
                            cl::init(0), cl::cat(category));
cl::opt<uint64_t> descriptorOpt("descriptor-bytes", cl::desc("dma-stream descriptor size"),
                                cl::init(uint64_t(1) << 20), cl::cat(category));
cl::opt<uint64_t> runOpt("run-bytes", cl::desc("dma-block: contiguous bytes per row"),
                         cl::init(2048), cl::cat(category));
cl::opt<uint64_t> strideOpt("stride", cl::desc("dma-block: bytes from one row to the next"),
                            cl::init(8192), cl::cat(category));
cl::opt<uint64_t> blockOpt("block-bytes", cl::desc("dma-block: bytes per descriptor"),
                           cl::init(uint64_t(1) << 20), cl::cat(category));
cl::opt<uint32_t> inFlightOpt("in-flight",
                              cl::desc("dma-block: descriptors in flight (0: dma.queue_depth)"),
                              cl::init(0), cl::cat(category));
cl::opt<bool> markdownOpt("markdown", cl::desc("print Markdown table rows (no header)"),
                          cl::cat(category));

struct Result {
  std::string pattern;
  uint64_t bytes = 0, coreCycles = 0, hbmCycles = 0;
  double hostSeconds = 0;
  hbm::HbmChannelStats stats;
};

// Host CPU time of this process: robust against other jobs sharing the machine.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// The DMA patterns' event loop: runs the engine to its next event and counts
// the descriptors that completed (last: the latest completion's cycle).
void advanceToNextEvent(dma::DmaEngine& engine, std::vector<dma::DmaCompletion>& done,
                        uint64_t& now, uint64_t& completed, uint64_t& last) {
  done.clear();
  uint64_t t = std::max(engine.nextEventCycle(), now);
  engine.advanceTo(t + 1, done);
  now = t + 1;
  completed += done.size();
  if (!done.empty()) last = done.back().cycle;
}

// A DMA pattern's cycles and HBM stats once its last descriptor completed.
void finishTiming(Result& r, dma::DmaEngine& engine, uint64_t last) {
  r.coreCycles = last + 1;
  r.hbmCycles = engine.hbm().clocks().hbmAtOrAfterCore(r.coreCycles);
  r.stats = engine.hbm().totalStats();
}

Result runHbm(const target::ChipConfig& chip, const std::string& pattern) {
  hbm::HbmModel model(chip.hbm, chip.core.clock_hz);
  hbm::AddressMap map(chip.hbm);
  uint32_t request = requestOpt ? requestOpt : uint32_t(chip.dma.request_bytes);
  size_t window = windowOpt ? windowOpt : size_t(chip.dma.max_outstanding_requests);
  bool write = pattern == "stream-write", conflict = pattern == "conflict";
  if (conflict) request = uint32_t(chip.hbm.burst_bytes);
  uint64_t count = conflict ? conflictsOpt : bytesOpt / request;
  auto address = [&](uint64_t i) {
    if (!conflict) return i * request;
    hbm::BurstLocation loc;
    loc.row = uint32_t(i % uint64_t(chip.hbm.rows));
    return map.compose(loc);
  };
  Result r;
  r.pattern = pattern;
  double start = cpuSeconds();
  std::vector<hbm::HbmCompletion> done;
  uint64_t next = 0, inFlight = 0, now = 0, last = 0;
  while (next < count || inFlight > 0) {
    for (; next < count && inFlight < window; ++next, ++inFlight)
      model.submit(hbm::HbmRequest{next, address(next), request, write, now});
    done.clear();
    uint64_t t = model.nextEventCycle();
    model.advanceTo(t + 1, done);
    now = t + 1;
    inFlight -= done.size();
    if (!done.empty()) last = done.back().cycle;
  }
  r.hostSeconds = cpuSeconds() - start;
  r.bytes = count * request;
  r.coreCycles = last + 1;
  r.hbmCycles = model.clocks().hbmAtOrAfterCore(r.coreCycles);
  r.stats = model.totalStats();
  return r;
}

Result runDma(const target::ChipConfig& chip, bool allQueues) {
  dma::DmaEngine engine(chip, nullptr);
  isa::DmaDescriptor d;
  d.src = isa::MemorySpace::Hbm;
  d.dst = isa::MemorySpace::Vmem;
  d.innerBytes = uint32_t(descriptorOpt);
  uint64_t count = bytesOpt / descriptorOpt;
  uint64_t vmemSlots = uint64_t(chip.vmem.bytes) / descriptorOpt;
  if (vmemSlots == 0) throw std::runtime_error("--descriptor-bytes is larger than VMEM");
  Result r;
  r.pattern = allQueues ? "dma-stream-all-queues" : "dma-stream";
  int queues = allQueues ? engine.queues() : 1;
  double start = cpuSeconds();
  std::vector<dma::DmaCompletion> done;
  uint64_t issued = 0, completed = 0, now = 0, last = 0;
  while (completed < count) {
    for (int q = 0; q < queues && issued < count; ++q) {
      while (issued < count && engine.canIssue(0, q, now)) {
        d.srcAddr = issued * descriptorOpt % uint64_t(chip.hbm.capacity_bytes);
        d.dstAddr = (issued % vmemSlots) * descriptorOpt;
        dma::DmaStatus s = engine.issue(0, q, d, 0, now);
        if (!s.ok()) throw std::runtime_error(s.message);
        ++issued;
      }
    }
    advanceToNextEvent(engine, done, now, completed, last);
  }
  r.hostSeconds = cpuSeconds() - start;
  r.bytes = count * descriptorOpt;
  finishTiming(r, engine, last);
  return r;
}

// A dot's RHS blocks: each a descriptor of rows of runBytes, stride apart
// (widened from bf16 as the kernels' weight copies are); block j starts at
// column block j % (stride / runBytes) of row band j / (stride / runBytes).
Result runBlocks(const target::ChipConfig& chip) {
  dma::DmaEngine engine(chip, nullptr);
  const uint64_t run = runOpt, stride = strideOpt;
  if (run == 0 || stride < run || run % 2 != 0)
    throw std::runtime_error("dma-block needs an even --run-bytes <= --stride");
  const uint64_t rows = std::max<uint64_t>(blockOpt / run, 1);
  const uint64_t vmemBlock = rows * run * 2;  // widened
  uint64_t vmemSlots = uint64_t(chip.vmem.bytes) / vmemBlock;
  if (vmemSlots == 0) throw std::runtime_error("--block-bytes is larger than VMEM");
  const uint64_t perBand = stride / run;
  isa::DmaDescriptor d;
  d.src = isa::MemorySpace::Hbm;
  d.dst = isa::MemorySpace::Vmem;
  d.numDims = 2;
  d.innerBytes = uint32_t(run);
  d.counts = {uint32_t(rows), 1, 1};
  d.srcStrides = {uint32_t(stride), 0, 0};
  d.dstStrides = {uint32_t(run * 2), 0, 0};
  d.elemBytes = 2;
  uint64_t count = std::max<uint64_t>(bytesOpt / (rows * run), 1);
  Result r;
  r.pattern = fmt::format("dma-block {}/{}", run, stride);
  double start = cpuSeconds();
  std::vector<dma::DmaCompletion> done;
  uint64_t issued = 0, completed = 0, now = 0, last = 0;
  while (completed < count) {
    while (issued < count && engine.canIssue(0, 0, now) &&
           (inFlightOpt == 0 || issued - completed < inFlightOpt)) {
      uint64_t band = issued / perBand, col = issued % perBand;
      d.srcAddr = (band * rows * stride + col * run) % uint64_t(chip.hbm.capacity_bytes);
      d.dstAddr = (issued % vmemSlots) * vmemBlock;
      dma::DmaStatus s = engine.issue(0, 0, d, 0, now);
      if (!s.ok()) throw std::runtime_error(s.message);
      ++issued;
    }
    advanceToNextEvent(engine, done, now, completed, last);
  }
  r.hostSeconds = cpuSeconds() - start;
  r.bytes = count * rows * run;
  finishTiming(r, engine, last);
  return r;
}

void print(const target::ChipConfig& chip, const Result& r) {
  double peak = chip.hbm.peakBytesPerSecond();
  double seconds = double(r.coreCycles) / chip.core.clock_hz;
  double bw = double(r.bytes) / seconds;
  uint64_t bursts = r.stats.rowHits + r.stats.rowMisses + r.stats.rowConflicts;
  double hitRate = bursts ? double(r.stats.rowHits) / double(bursts) : 0.0;
  double rate = r.hostSeconds > 0 ? double(r.hbmCycles) / r.hostSeconds : 0.0;
  if (markdownOpt) {
    fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.1f}% | {:.1f}% | {} | {} | {:.2f} | {:.2f} M |\n",
               chip.name, r.pattern, double(r.bytes) / (1 << 20), bw / 1e9, 100.0 * bw / peak,
               100.0 * hitRate, r.stats.refreshes, r.hbmCycles, r.hostSeconds, rate / 1e6);
  } else {
    fmt::print(
        "{:5} {:12} {:8.1f} MiB in {:10} cycles: {:7.1f} GB/s = {:5.1f}% of {:.1f} GB/s peak; "
        "row hits {:5.1f}%, {} refreshes; {} HBM cycles in {:.2f} CPU s = {:.2f} M HBM cycles/s\n",
        chip.name, r.pattern, double(r.bytes) / (1 << 20), r.coreCycles, bw / 1e9,
        100.0 * bw / peak, peak / 1e9, 100.0 * hitRate, r.stats.refreshes, r.hbmCycles,
        r.hostSeconds, rate / 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "tpusim HBM model benchmark\n");
  try {
    target::ChipConfig chip = target::loadChip(chipOpt);
    target::applyOverrides(chip, setOpt);
    std::vector<std::string> patterns(patternOpt.begin(), patternOpt.end());
    if (patterns.empty())
      patterns = {"stream-read", "stream-write", "conflict", "dma-stream", "dma-stream-all-queues"};
    for (const std::string& p : patterns) {
      if (p == "dma-stream" || p == "dma-stream-all-queues")
        print(chip, runDma(chip, p == "dma-stream-all-queues"));
      else if (p == "dma-block")
        print(chip, runBlocks(chip));
      else if (p == "stream-read" || p == "stream-write" || p == "conflict")
        print(chip, runHbm(chip, p));
      else
        throw std::runtime_error("unknown --pattern '" + p +
                                 "' (stream-read, stream-write, conflict, dma-stream, "
                                 "dma-stream-all-queues, dma-block)");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpusim-hbm-bench: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
