// dma.model = "fast" against "detailed" (sim/dma/DmaEngine.h): the same random
// descriptor streams (every direction, widening copies, misaligned and
// overlapping strided blocks, several queues and cores) issued at the same
// cycles must give the same completions (every field, in the same order), the
// same per-queue and per-space stats, the same HBM stats and, in functional
// mode, the same memory contents, also where copies overlap. Narrow ports and
// small outstanding limits make ports and slots bind.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "isa/target/ChipLoader.h"
#include "sim/dma/DmaEngine.h"

using namespace tpusim;
using namespace tpusim::sim;
using namespace tpusim::sim::dma;
using isa::MemorySpace;

namespace {

constexpr uint64_t kRegion = 1 << 20;  // addresses used in each space

mem::ChipMemory memoryFor(const target::ChipConfig& c) {
  return mem::ChipMemory({uint64_t(c.hbm.capacity_bytes), uint64_t(c.vmem.bytes),
                          uint64_t(c.core.smem_bytes) / 4, int(c.core.cores)});
}

uint64_t regionOf(const target::ChipConfig& c, MemorySpace s) {
  uint64_t cap = s == MemorySpace::Hbm    ? uint64_t(c.hbm.capacity_bytes)
                 : s == MemorySpace::Vmem ? uint64_t(c.vmem.bytes)
                                          : uint64_t(c.core.smem_bytes);
  return std::min(cap, kRegion);
}

// A random descriptor that fits the first kRegion bytes of both spaces.
isa::DmaDescriptor randomDescriptor(const target::ChipConfig& c, std::mt19937_64& rng) {
  static const MemorySpace kDirections[][2] = {
      {MemorySpace::Hbm, MemorySpace::Vmem},  {MemorySpace::Hbm, MemorySpace::Vmem},
      {MemorySpace::Hbm, MemorySpace::Vmem},  {MemorySpace::Vmem, MemorySpace::Hbm},
      {MemorySpace::Hbm, MemorySpace::Hbm},   {MemorySpace::Vmem, MemorySpace::Vmem},
      {MemorySpace::Smem, MemorySpace::Hbm},  {MemorySpace::Hbm, MemorySpace::Smem},
      {MemorySpace::Vmem, MemorySpace::Smem},
  };
  auto pick = [&](uint64_t n) { return uint64_t(rng() % n); };
  const auto& dir = kDirections[pick(std::size(kDirections))];
  isa::DmaDescriptor d;
  d.src = dir[0];
  d.dst = dir[1];
  const bool oneHbm = (d.src == MemorySpace::Hbm) != (d.dst == MemorySpace::Hbm);
  if (oneHbm && pick(4) == 0) d.elemBytes = uint8_t(1 + pick(2));
  const uint32_t e = d.widening() ? d.elemBytes : 1;
  // Half the widening copies into VMEM/SMEM pair two runs per word (pair mode).
  if (d.widening() && d.src == MemorySpace::Hbm && pick(2) == 0)
    d.pairOffset = uint32_t(pick(2) == 0 ? (1 + pick(64)) * 512 : (1 + pick(4096)) * e);
  static const uint32_t kInner[] = {256, 256, 512, 128, 32, 1024, 2048, 4};
  d.innerBytes = pick(3) == 0 ? uint32_t(1 + pick(1500)) : kInner[pick(std::size(kInner))];
  d.innerBytes = std::max(e, d.innerBytes / e * e);
  const int dims = int(pick(4));
  for (int i = 0; i < 3; ++i) {
    d.counts[size_t(i)] = i < dims ? uint32_t(1 + pick(i == 0 ? 24 : 3)) : 1;
    // Strides from overlapping (0, a fraction of a row) to sparse.
    auto stride = [&](bool wide) {
      uint64_t row = wide ? d.innerBytes / e * 4 : d.innerBytes;
      uint64_t s = pick(5) == 0 ? pick(row + 1) : row * (1 + pick(3)) + pick(2) * 512;
      return uint32_t(wide ? s / 4 * 4 : s / e * e);
    };
    d.srcStrides[size_t(i)] = stride(d.wideSource());
    d.dstStrides[size_t(i)] = stride(d.widening() && !d.wideSource());
  }
  d.numDims = dims + 1;
  for (bool source : {true, false})
    if (uint64_t(descriptorExtent(d, source)) > regionOf(c, source ? d.src : d.dst))
      return randomDescriptor(c, rng);  // too large for that space: another one
  for (bool source : {true, false}) {
    MemorySpace s = source ? d.src : d.dst;
    uint64_t extent = uint64_t(descriptorExtent(d, source));
    uint64_t room = regionOf(c, s) - extent;
    uint64_t align = d.widening() ? (s == MemorySpace::Hbm ? e : 4) : 1;
    uint64_t base = pick(3) == 0 ? pick(room + 1) : pick(room / 512 + 1) * 512;
    base = base / align * align;
    (source ? d.srcAddr : d.dstAddr) = base;
  }
  return d;
}

struct Outcome {
  std::vector<DmaCompletion> done;
  std::vector<DmaCoreStats> stats;
  hbm::HbmChannelStats hbm;
  std::vector<std::vector<uint8_t>> memory;  // functional: each space's region, per core
  uint64_t issued = 0;
};

// One engine driven by a seeded script: the same seed and config give the
// same issues at the same cycles whatever the model (a refused issue is
// retried later, and both models must refuse alike: compared by the caller
// through the completions' issue cycles).
Outcome drive(target::ChipConfig c, const char* model, bool functional, uint64_t seed,
              int descriptors) {
  c.dma.model = model;
  mem::ChipMemory memory = memoryFor(c);
  std::mt19937_64 fill(seed ^ 0x5eed);
  if (functional) {
    std::vector<uint8_t> bytes(kRegion);
    for (uint8_t& b : bytes) b = uint8_t(fill());
    for (int core = 0; core < int(c.core.cores); ++core)
      for (MemorySpace s : {MemorySpace::Hbm, MemorySpace::Vmem, MemorySpace::Smem})
        REQUIRE_FALSE(memory.space(s, core).write(0, bytes.data(), regionOf(c, s)));
  }
  DmaEngine e(c, functional ? &memory : nullptr);
  std::mt19937_64 rng(seed);
  Outcome out;
  uint64_t t = 0;
  for (int i = 0; i < descriptors; ++i) {
    isa::DmaDescriptor d = randomDescriptor(c, rng);
    const int core = int(rng() % uint64_t(c.core.cores)), q = int(rng() % uint64_t(c.dma.queues));
    const int flag = int(rng() % 8);
    const uint64_t gap = rng() % 16 == 0 ? 300 + rng() % 3000 : rng() % 40;
    while (!e.canIssue(core, q, t)) e.advanceTo(++t, out.done);
    DmaStatus s = e.issue(core, q, d, flag, t);
    INFO(s.message);
    REQUIRE(s.ok());
    ++out.issued;
    t += gap;
    e.advanceTo(t, out.done);
  }
  while (!e.idle()) e.advanceTo(e.nextEventCycle() + 1, out.done);
  for (int core = 0; core < e.cores(); ++core) out.stats.push_back(e.stats(core));
  out.hbm = e.hbm().totalStats();
  if (functional)
    for (int core = 0; core < int(c.core.cores); ++core)
      for (MemorySpace s : {MemorySpace::Hbm, MemorySpace::Vmem, MemorySpace::Smem}) {
        std::vector<uint8_t> bytes(regionOf(c, s));
        REQUIRE_FALSE(memory.space(s, core).read(0, bytes.data(), bytes.size()));
        out.memory.push_back(std::move(bytes));
      }
  return out;
}

void requireSame(const Outcome& a, const Outcome& b) {
  REQUIRE(a.done.size() == b.done.size());
  CHECK(a.done.size() == a.issued);
  for (size_t i = 0; i < a.done.size(); ++i) {
    INFO("completion " << i);
    const DmaCompletion &x = a.done[i], &y = b.done[i];
    REQUIRE(x.core == y.core);
    REQUIRE(x.queue == y.queue);
    REQUIRE(x.descriptor == y.descriptor);
    REQUIRE(x.flag == y.flag);
    REQUIRE(x.issueCycle == y.issueCycle);
    REQUIRE(x.cycle == y.cycle);
    REQUIRE(x.bytes == y.bytes);
  }
  REQUIRE(a.stats.size() == b.stats.size());
  for (size_t core = 0; core < a.stats.size(); ++core) {
    for (size_t q = 0; q < a.stats[core].queues.size(); ++q) {
      const DmaQueueStats &x = a.stats[core].queues[q], &y = b.stats[core].queues[q];
      CHECK(x.descriptors == y.descriptors);
      CHECK(x.requests == y.requests);
      CHECK(x.bytes == y.bytes);
      CHECK(x.busyCycles == y.busyCycles);
    }
    for (size_t s = 0; s < a.stats[core].spaces.size(); ++s) {
      CHECK(a.stats[core].spaces[s].read == b.stats[core].spaces[s].read);
      CHECK(a.stats[core].spaces[s].written == b.stats[core].spaces[s].written);
    }
  }
  CHECK(a.hbm.readBursts == b.hbm.readBursts);
  CHECK(a.hbm.writeBursts == b.hbm.writeBursts);
  CHECK(a.hbm.busyCycles == b.hbm.busyCycles);
  CHECK(a.hbm.rowHits == b.hbm.rowHits);
  CHECK(a.hbm.activates == b.hbm.activates);
  CHECK(a.hbm.refreshes == b.hbm.refreshes);
  REQUIRE(a.memory.size() == b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i) CHECK(a.memory[i] == b.memory[i]);
}

struct Variant {
  const char* preset;
  int64_t cores, queues, outstanding, portBytes, requestBytes;
};

}  // namespace

TEST_CASE("fast and detailed DMA models agree on random descriptor streams", "[dma]") {
  const Variant variants[] = {
      {"v5e", 1, 4, 512, 2048, 512},  // the preset: HBM binds
      {"v5e", 2, 4, 48, 64, 512},     // narrow ports: writes queue behind each other
      {"v4", 2, 3, 7, 512, 256},      // few slots: every finish frees a request at once
      {"tiny16", 1, 2, 1, 32, 64},    // one request at a time, tiny port
      {"v5e", 1, 4, 96, 300, 128},    // port rate not a power of two: shared cycles
  };
  for (const Variant& v : variants) {
    target::ChipConfig c = target::loadChip(v.preset);
    c.core.cores = v.cores;
    c.dma.queues = v.queues;
    c.dma.max_outstanding_requests = v.outstanding;
    c.dma.vmem_bytes_per_cycle = v.portBytes;
    c.dma.request_bytes = v.requestBytes;
    for (uint64_t seed = 1; seed <= 3; ++seed)
      for (bool functional : {false, true}) {
        INFO(v.preset << " cores " << v.cores << " queues " << v.queues << " outstanding "
                      << v.outstanding << " port " << v.portBytes << " request " << v.requestBytes
                      << " seed " << seed << (functional ? " functional" : " timing"));
        Outcome detailed = drive(c, "detailed", functional, seed, 60);
        Outcome fast = drive(c, "fast", functional, seed, 60);
        requireSame(detailed, fast);
      }
  }
}

TEST_CASE("dma.model must name a model", "[dma]") {
  target::ChipConfig c = target::loadChip("v5e");
  c.dma.model = "quick";
  REQUIRE_THROWS_WITH(DmaEngine(c, nullptr), Catch::Contains("dma.model"));
}
