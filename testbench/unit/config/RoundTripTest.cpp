// JSON write -> read gives the same chip; overrides change exactly one field.
#include <catch2/catch.hpp>

#include "TestUtil.h"
#include "isa/target/FieldList.h"

using namespace tpusim;
using namespace tpusim::target;
using namespace tpusim::target::test;

TEST_CASE("write then read gives the same chip, for every preset", "[config][json]") {
  for (const std::string& name : target::listPresets()) {
    INFO(name);
    target::ChipConfig chip = target::loadChip(name);
    std::string text = target::chipToJson(chip).dump(2);
    target::ChipConfig back = target::parseChip({text, name + "-written.json"});
    std::string diff;
    CHECK(target::sameConfig(chip, back, &diff));
    INFO(diff);
    // Writing is deterministic, and the derived block is ignored when read back.
    CHECK(target::chipToJson(back).dump(2) == text);
    target::WriteOptions withDerived;
    withDerived.derived = true;
    CHECK(target::sameConfig(
        chip, target::parseChip({target::chipToJson(chip, withDerived).dump(), "d.json"})));
  }
}

TEST_CASE("the written JSON follows the visit order", "[config][json]") {
  auto j = target::chipToJson(target::loadChip("v5e"));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"name", "description", "test_preset", "core", "vmem",
                                         "mxu", "vpu", "xlu", "latency", "dma", "hbm", "ici",
                                         "sources"});
  CHECK(j["core"].begin().key() == "cores");
}

TEST_CASE("an override changes exactly its field and records its source", "[config][set]") {
  target::ChipConfig base = target::loadChip("v5p");
  target::ChipConfig chip = base;
  target::applyOverrides(
      chip, {"hbm.tRCD=31", "core.clock_hz=2e9", "ici.topology=3d_torus", "mxu.count=2"});
  CHECK(chip.hbm.tRCD == 31);
  CHECK(chip.core.clock_hz == 2e9);
  CHECK(chip.mxu.count == 2);
  CHECK(chip.peakFlopsBf16() == Approx(2.0 * 2 * 2 * 128 * 128 * 2e9));
  CHECK(chip.sources.at("hbm.tRCD") == "override: --set hbm.tRCD=31");
  std::vector<FieldInfo> a = listFields(base), b = listFields(chip);
  int changed = 0;
  for (size_t i = 0; i < a.size(); ++i) changed += a[i].value != b[i].value;
  CHECK(changed == 3);  // ici.topology was already 3d_torus on v5p
  // The overridden chip still round-trips (its sources are valid entries).
  CHECK(target::sameConfig(chip, target::parseChip({target::chipToJson(chip).dump(), "o.json"})));
}

TEST_CASE("byte counts in --set may use binary suffixes", "[config][set]") {
  target::ChipConfig chip = target::loadChip("v5e");
  target::applyOverride(chip, "vmem.bytes=64Mi");
  CHECK(chip.vmem.bytes == (int64_t(64) << 20));
  target::applyOverride(chip, "hbm.capacity_bytes=8GiB");
  CHECK(chip.hbm.capacity_bytes == (int64_t(8) << 30));
  target::applyOverride(chip, "core.smem_bytes=4096");
  CHECK(chip.core.smem_bytes == 4096);
  CHECK_THAT(
      configError([&] { target::applyOverride(chip, "vmem.bytes=64MB"); }),
      Catch::Contains("vmem.bytes: expected an integer (bytes, optionally with Ki, Mi, Gi or "
                      "Ti), got \"64MB\""));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.capacity_bytes=99999999Ti"); }),
             Catch::Contains("does not fit in 64 bits"));
  // Suffixes are for byte counts only.
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.rows=4Ki"); }),
             Catch::Contains("hbm.rows: expected an integer (count)"));
}

TEST_CASE("default-constructed structs satisfy their own constraints", "[config]") {
  target::ConfigProblems problems;
  target::ChipConfig{}.check(problems);
  for (auto& [path, message] : problems.list) FAIL(path + ": " + message);
}
