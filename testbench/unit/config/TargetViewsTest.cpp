// The chip is read once (isa/target); the graph compiler (lower::TargetDescription)
// and the code generator (codegen::TargetInfo) only look at it. These tests change
// every numeric field of a preset, one at a time, and check that each view sees
// the change in exactly the members that come from that field, and nowhere else:
// a view that read a field under the wrong key, kept a stale copy or parsed the
// preset on its own would fail here.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "compiler/lower/TargetDescription.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/FieldList.h"
#include "kernels/codegen/TargetInfo.h"

using namespace tpusim;
using kernels::codegen::TargetInfo;
using lower::TargetDescription;

namespace {

// One member of a view and the preset fields it is computed from.
struct Projection {
  std::string name;
  std::set<std::string> fields;
  std::function<double(const TargetInfo&, const TargetDescription&)> value;
};

std::vector<Projection> projections() {
  using I = const TargetInfo&;
  using D = const TargetDescription&;
  std::vector<Projection> p = {
      {"codegen.cores", {"core.cores"}, [](I i, D) { return i.cores; }},
      {"codegen.vectorRegs", {"core.vector_regs"}, [](I i, D) { return i.vectorRegs; }},
      {"codegen.syncFlags", {"core.sync_flags"}, [](I i, D) { return i.syncFlags; }},
      {"codegen.scalarSlots", {"core.scalar_slots"}, [](I i, D) { return i.scalarSlots; }},
      {"codegen.valuSlots", {"core.valu_slots"}, [](I i, D) { return i.valuSlots; }},
      {"codegen.vldSlots", {"core.vld_slots"}, [](I i, D) { return i.vldSlots; }},
      {"codegen.vstSlots", {"core.vst_slots"}, [](I i, D) { return i.vstSlots; }},
      {"codegen.branchPenalty", {"core.branch_penalty"}, [](I i, D) { return i.branchPenalty; }},
      {"codegen.smemBytes", {"core.smem_bytes"}, [](I i, D) { return double(i.smemBytes); }},
      {"codegen.vmemBytes", {"vmem.bytes"}, [](I i, D) { return double(i.vmemBytes); }},
      {"codegen.vmemBanks", {"vmem.banks"}, [](I i, D) { return i.vmemBanks; }},
      {"codegen.mxuCount", {"mxu.count"}, [](I i, D) { return i.mxuCount; }},
      {"codegen.mxuSize", {"mxu.size"}, [](I i, D) { return i.mxuSize; }},
      {"codegen.accSlots", {"mxu.acc_slots"}, [](I i, D) { return i.accSlots; }},
      {"codegen.int8Rate", {"mxu.int8_rate"}, [](I i, D) { return i.int8Rate; }},
      {"codegen.transcendentalInterval",
       {"vpu.transcendental_interval"},
       [](I i, D) { return i.transcendentalInterval; }},
      {"codegen.xluCount", {"xlu.count"}, [](I i, D) { return i.xluCount; }},
      {"codegen.xluPermuteInterval",
       {"xlu.permute_interval"},
       [](I i, D) { return i.xluPermuteInterval; }},
      {"codegen.xluReduceInterval",
       {"xlu.reduce_interval"},
       [](I i, D) { return i.xluReduceInterval; }},
      {"codegen.dmaQueues", {"dma.queues"}, [](I i, D) { return i.dmaQueues; }},
      {"codegen.dmaQueueDepth", {"dma.queue_depth"}, [](I i, D) { return i.dmaQueueDepth; }},
      {"codegen.hbmBytes", {"hbm.capacity_bytes"}, [](I i, D) { return double(i.hbmBytes); }},
      {"codegen.hbmBytesPerCycle",
       {"hbm.clock_hz", "hbm.channels", "hbm.pseudo_channels", "hbm.bus_bytes_per_clock",
        "core.clock_hz"},
       [](I i, D) { return i.hbmBytesPerCycle; }},
      // Every preset maps "ro-ba-co-bg-pc-ch": a burst times bg x pc x ch.
      {"codegen.hbmInterleaveBytes",
       {"hbm.burst_bytes", "hbm.channels", "hbm.pseudo_channels", "hbm.bank_groups"},
       [](I i, D) { return double(i.hbmInterleaveBytes); }},
      {"compiler.cores", {"core.cores"}, [](I, D d) { return double(d.cores); }},
      {"compiler.clockHz", {"core.clock_hz"}, [](I, D d) { return d.clockHz; }},
      {"compiler.vectorRegs", {"core.vector_regs"}, [](I, D d) { return double(d.vectorRegs); }},
      {"compiler.smemBytes", {"core.smem_bytes"}, [](I, D d) { return double(d.smemBytes); }},
      {"compiler.vmemBytes", {"vmem.bytes"}, [](I, D d) { return double(d.vmemBytes); }},
      {"compiler.mxuCount", {"mxu.count"}, [](I, D d) { return double(d.mxuCount); }},
      {"compiler.mxuSize", {"mxu.size"}, [](I, D d) { return double(d.mxuSize); }},
      {"compiler.int8Rate", {"mxu.int8_rate"}, [](I, D d) { return double(d.int8Rate); }},
      {"compiler.transcendentalInterval",
       {"vpu.transcendental_interval"},
       [](I, D d) { return double(d.transcendentalInterval); }},
      {"compiler.hbmBytes", {"hbm.capacity_bytes"}, [](I, D d) { return double(d.hbmBytes); }},
      {"compiler.hbmBytesPerSecond",
       {"hbm.clock_hz", "hbm.channels", "hbm.pseudo_channels", "hbm.bus_bytes_per_clock"},
       [](I, D d) { return d.hbmBytesPerSecond; }},
  };
  for (int k = 0; k < isa::kNumLatencyClasses; ++k) {
    auto c = static_cast<isa::LatencyClass>(k);
    std::string key = fmt::format("latency.{}", isa::latencyInfo(c).presetKey);
    p.push_back({"codegen." + key, {key}, [c](I i, D) { return i.latencyOf(c); }});
  }
  return p;
}

// A value for `f` different from its current one and within its limits ("" if
// the limits allow only one value).
std::string changedValue(const target::FieldInfo& f) {
  double v = std::stod(f.value);
  bool limited = f.range.min <= f.range.max;
  if (limited && f.range.min == f.range.max) return "";
  if (f.type == target::FieldType::Int) {
    // Doubling keeps powers of two (sizes, counts) powers of two.
    int64_t x = int64_t(v), next = x > 0 ? 2 * x : 1;
    if (limited && double(next) > f.range.max) next = double(x / 2) >= f.range.min ? x / 2 : x - 1;
    if (limited && double(next) < f.range.min) next = x + 1;
    return std::to_string(next);
  }
  double next = v > 0 ? 2 * v : 1;
  if (limited && next > f.range.max) next = v / 2;
  return target::formatDouble(next);
}

}  // namespace

TEST_CASE(
    "every preset field reaches the compiler and code generator views, and only where it "
    "belongs",
    "[target]") {
  const std::vector<Projection> views = projections();
  for (const std::string& preset : target::listPresets()) {
    CAPTURE(preset);
    const target::ChipConfig base = target::loadChip(preset);
    const TargetInfo baseInfo = TargetInfo::fromChip(base);
    const TargetDescription baseDesc = lower::describeTarget(base);
    std::set<std::string> covered;
    for (const target::FieldInfo& f : target::listFields(base)) {
      if (f.type != target::FieldType::Int && f.type != target::FieldType::Double) continue;
      CAPTURE(f.path);
      std::string value = changedValue(f);
      if (value.empty()) {
        // A field its limits fix (core.vst_slots): its views hold that value.
        for (const Projection& p : views)
          if (p.fields == std::set<std::string>{f.path}) {
            CHECK(p.value(baseInfo, baseDesc) == std::stod(f.value));
            covered.insert(p.name);
          }
        continue;
      }
      target::ChipConfig chip = base;
      // One field changed; no validation: a view must not depend on the others' consistency.
      target::applyOverride(chip, f.path + "=" + value);
      const TargetInfo info = TargetInfo::fromChip(chip);
      const TargetDescription desc = lower::describeTarget(chip);
      // The compiler carries the whole chip: every field, overrides included.
      std::string difference;
      CHECK(target::sameConfig(desc.chip, chip, &difference));
      INFO(difference);
      for (const Projection& p : views) {
        CAPTURE(p.name);
        bool fromThisField = p.fields.count(f.path) > 0;
        double before = p.value(baseInfo, baseDesc), after = p.value(info, desc);
        CHECK((before != after) == fromThisField);
        if (fromThisField) covered.insert(p.name);
      }
    }
    // Every member of both views comes from some field.
    for (const Projection& p : views) {
      CAPTURE(p.name);
      CHECK(covered.count(p.name) == 1);
    }
  }
}

TEST_CASE(
    "the compiler and code generator load the same chip the simulator does, overrides "
    "included",
    "[target]") {
  std::vector<std::string> sets = {"mxu.count=2", "vmem.bytes=32Mi", "latency.vmem_load=5"};
  target::ChipConfig sim = target::loadChip("v5e", sets);
  TargetDescription desc = lower::loadTarget("v5e", sets);
  CHECK(target::sameConfig(desc.chip, sim));
  CHECK(desc.mxuCount == 2);
  TargetInfo info = TargetInfo::fromChip(desc.chip);
  CHECK(info.vmemBytes == int64_t(32) << 20);
  CHECK(info.latencyOf(isa::LatencyClass::VectorLoad) == 5);
  // A bad override is the loader's error, naming the field.
  CHECK_THROWS_WITH(lower::loadTarget("v5e", {"mxu.cuont=2"}), Catch::Contains("mxu.cuont"));
}

TEST_CASE("the HBM interleave line follows the preset's address mapping", "[target]") {
  // v5e: 32-byte bursts over 16 channels x 2 pseudo-channels x 4 bank groups.
  CHECK(TargetInfo::fromChip(target::loadChip("v5e")).hbmInterleaveBytes == 4096);
  CHECK(TargetInfo::fromChip(target::loadChip("tiny8")).hbmInterleaveBytes == 32 * 2 * 2 * 2);
  // Columns below the bank group: a whole row per channel before the next.
  target::ChipConfig chip = target::loadChip("v5e", {"hbm.address_mapping=ro-ba-bg-ch-pc-co"});
  CHECK(TargetInfo::fromChip(chip).hbmInterleaveBytes == 1024 * 2 * 16 * 4);
}
