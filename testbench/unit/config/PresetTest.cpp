// The chip presets against the published figures (sources as docs/presets.md names them).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "TestUtil.h"
#include "isa/target/FieldList.h"

using namespace tpusim;
using namespace tpusim::target;
using namespace tpusim::target::test;

namespace {

// Public figures, from tpu-facts.md ("Per chip" table; source GC for peaks and
// HBM, JI for VMEM per core).
struct PublicFigures {
  const char* chip;
  double bf16Flops, int8Ops, hbmBytesPerSecond;
  int64_t cores, mxuSize, vmemBytes;
};
const PublicFigures kPublic[] = {
    {"v4", 275e12, 275e12, 1200e9, 2, 128, int64_t(16) << 20},
    {"v5e", 197e12, 394e12, 819e9, 1, 128, int64_t(128) << 20},
    {"v5p", 459e12, 918e12, 2765e9, 2, 128, int64_t(64) << 20},
    {"v6e", 918e12, 1836e12, 1640e9, 1, 256, int64_t(128) << 20},
};

}  // namespace

TEST_CASE("every preset in sim/chips loads", "[config][presets]") {
  std::vector<std::string> names = target::listPresets();
  for (const char* expected : {"v4", "v5e", "v5p", "v6e", "tiny8", "tiny16"})
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  for (const std::string& name : names) {
    INFO(name);
    target::ChipConfig chip;
    REQUIRE_NOTHROW(chip = target::loadChip(name));
    CHECK(chip.name == name);
    CHECK(!chip.description.empty());
  }
}

TEST_CASE("production presets reproduce the public peak figures within 1%", "[config][presets]") {
  for (const PublicFigures& f : kPublic) {
    INFO(f.chip);
    target::ChipConfig chip = target::loadChip(f.chip);
    CHECK(!chip.test_preset);
    CHECK(chip.peakFlopsBf16() == Approx(f.bf16Flops).epsilon(0.01));
    CHECK(chip.peakOpsInt8() == Approx(f.int8Ops).epsilon(0.01));
    CHECK(chip.hbmPeakBytesPerSecond() == Approx(f.hbmBytesPerSecond).epsilon(0.01));
    CHECK(chip.core.cores == f.cores);
    CHECK(chip.mxu.size == f.mxuSize);
    CHECK(chip.vmem.bytes == f.vmemBytes);
    // The geometry must address the whole capacity (also enforced by the loader).
    CHECK(chip.hbm.geometryBytes() >= double(chip.hbm.capacity_bytes));
  }
}

TEST_CASE("test presets are small and marked", "[config][presets]") {
  for (auto [name, size] : {std::pair{"tiny8", 8}, std::pair{"tiny16", 16}}) {
    INFO(name);
    target::ChipConfig chip = target::loadChip(name);
    CHECK(chip.test_preset);
    CHECK(chip.mxu.size == size);
    CHECK(chip.mxu.count <= 2);
    CHECK(chip.vmem.bytes <= (int64_t(1) << 20));
    CHECK(chip.hbm.capacity_bytes <= (int64_t(256) << 20));
  }
}

TEST_CASE("a preset file lists every field and a valid source for each", "[config][presets]") {
  for (const std::string& name : target::listPresets()) {
    INFO(name);
    nlohmann::json doc = nlohmann::json::parse(presetText(name));
    CHECK(!doc.contains("extends"));
    target::ChipConfig chip = target::loadChip(name);
    for (const FieldInfo& f : listFields(chip)) {
      INFO(f.path);
      // Present in the file itself (not a default).
      nlohmann::json::json_pointer ptr("/" + f.path.substr(0, f.path.find('.')) + "/" +
                                       f.path.substr(f.path.find('.') + 1));
      CHECK(doc.contains(ptr));
      REQUIRE(doc["sources"].contains(f.path));
      std::string why;
      CHECK(isValidSourceEntry(doc["sources"][f.path].get<std::string>(), chip.test_preset, &why));
      CHECK(chip.sources.at(f.path) == doc["sources"][f.path].get<std::string>());
    }
  }
}

TEST_CASE("every latency class of the ISA is a preset field", "[config][latency]") {
  std::vector<FieldInfo> fields = listFields(target::ChipConfig{});
  for (int i = 0; i < tpusim::isa::kNumLatencyClasses; ++i) {
    auto c = static_cast<tpusim::isa::LatencyClass>(i);
    std::string path = "latency." + std::string(tpusim::isa::latencyInfo(c).presetKey);
    INFO(path);
    CHECK(std::any_of(fields.begin(), fields.end(),
                      [&](const FieldInfo& f) { return f.path == path; }));
    // of() reads the field the preset sets.
    target::ChipConfig chip = target::loadChip("v5e");
    target::applyOverride(chip, path + "=" + std::to_string(100 + i));
    CHECK(chip.latency.of(c) == 100 + i);
  }
}
