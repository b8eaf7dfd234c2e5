// Every way a chip description can be wrong gives a target::ConfigError naming the
// file (with line:col) and the full field path.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "TestUtil.h"

using namespace tpusim;
using namespace tpusim::target;
using namespace tpusim::target::test;
using json = nlohmann::json;

namespace {

const char* kFile = "mutated.json";

// Parses v5e.json after `mutate` changed it; returns the error message.
template <class F>
std::string errorAfter(F&& mutate) {
  json doc = json::parse(presetText("v5e"));
  mutate(doc);
  std::string text = doc.dump(2);
  return configError([&] { target::parseChip({text, kFile}); });
}

}  // namespace

TEST_CASE("the unmodified preset parses from text", "[config][errors]") {
  CHECK(errorAfter([](json&) {}) == "");
}

TEST_CASE("an unknown key names the field and suggests the right one", "[config][errors]") {
  std::string e = errorAfter([](json& d) { d["hbm"]["tRDC"] = 14; });
  CHECK_THAT(e, Catch::Contains("mutated.json:"));
  CHECK_THAT(e, Catch::Contains("hbm.tRDC: unknown field (did you mean 'hbm.tRCD'?)"));
  e = errorAfter([](json& d) { d["cache"] = json::object(); });
  CHECK_THAT(e, Catch::Contains("cache: unknown field"));
}

TEST_CASE("an error points at the key's line and column", "[config][errors]") {
  std::string text = "{\n  \"name\": \"x\",\n  \"core\": {\n    \"cores\": \"two\"\n  }\n}\n";
  std::string e = configError([&] { target::parseChip({text, "pos.json"}); });
  CHECK_THAT(e, Catch::Contains("pos.json:4:5: error: core.cores: expected an integer"));
}

TEST_CASE("a wrong type names the field and the type found", "[config][errors]") {
  CHECK_THAT(errorAfter([](json& d) { d["hbm"]["tRCD"] = "14"; }),
             Catch::Contains("hbm.tRCD: expected an integer (cycles), got string \"14\""));
  CHECK_THAT(errorAfter([](json& d) { d["mxu"]["size"] = 128.5; }),
             Catch::Contains("mxu.size: expected an integer"));
  CHECK_THAT(errorAfter([](json& d) { d["core"]["clock_hz"] = true; }),
             Catch::Contains("core.clock_hz: expected a number (Hz), got boolean"));
  CHECK_THAT(errorAfter([](json& d) { d["ici"]["topology"] = 2; }),
             Catch::Contains("ici.topology: expected a string"));
  CHECK_THAT(errorAfter([](json& d) { d["hbm"] = 5; }), Catch::Contains("hbm: expected an object"));
  CHECK_THAT(errorAfter([](json& d) { d["test_preset"] = "no"; }),
             Catch::Contains("test_preset: expected true or false"));
}

TEST_CASE("a value out of range names the field and the limits", "[config][errors]") {
  CHECK_THAT(errorAfter([](json& d) { d["core"]["cores"] = 3; }),
             Catch::Contains("core.cores: 3 is out of range [1, 2] (count)"));
  CHECK_THAT(errorAfter([](json& d) { d["vmem"]["banks"] = 0; }),
             Catch::Contains("vmem.banks: 0 is out of range"));
  CHECK_THAT(errorAfter([](json& d) { d["mxu"]["count"] = 5; }),
             Catch::Contains("mxu.count: 5 is out of range [1, 4]"));
  CHECK_THAT(errorAfter([](json& d) { d["hbm"]["tRCD"] = uint64_t(1) << 63; }),
             Catch::Contains("hbm.tRCD: 9223372036854775808 is out of range"));
}

TEST_CASE("an impossible combination names the field", "[config][errors]") {
  CHECK_THAT(errorAfter([](json& d) { d["mxu"]["size"] = 96; }),
             Catch::Contains("mxu.size: must be a power of two"));
  CHECK_THAT(errorAfter([](json& d) { d["hbm"]["capacity_bytes"] = int64_t(64) << 30; }),
             Catch::Contains("hbm.capacity_bytes: larger than the geometry holds"));
  CHECK_THAT(errorAfter([](json& d) { d["hbm"]["address_mapping"] = "ro-ba-co-bg-ch"; }),
             Catch::Contains("hbm.address_mapping: must name ro, ba, bg, ch, pc, co once each"));
  CHECK_THAT(errorAfter([](json& d) { d["hbm"]["tCCD_S"] = 1; }),
             Catch::Contains("hbm.tCCD_S: shorter than one burst"));
  CHECK_THAT(errorAfter([](json& d) { d["vmem"]["bytes"] = 1000; }),
             Catch::Contains("vmem.bytes: must be a whole number of 512-byte rows"));
  CHECK_THAT(errorAfter([](json& d) { d["ici"]["links"] = 6; }),
             Catch::Contains("ici.links: a 2d_torus needs 4 links"));
  CHECK_THAT(errorAfter([](json& d) { d["dma"]["request_bytes"] = 384; }),
             Catch::Contains("dma.request_bytes: must be a power of two"));
}

TEST_CASE("a preset without extends must give every field and every source", "[config][errors]") {
  CHECK_THAT(errorAfter([](json& d) { d["hbm"].erase("tFAW"); }),
             Catch::Contains("hbm.tFAW: missing field"));
  CHECK_THAT(errorAfter([](json& d) { d.erase("vpu"); }), Catch::Contains("vpu: missing section"));
  CHECK_THAT(errorAfter([](json& d) { d.erase("name"); }), Catch::Contains("name: missing"));
  CHECK_THAT(errorAfter([](json& d) { d["sources"].erase("hbm.tRP"); }),
             Catch::Contains("hbm.tRP: has no \"sources\" entry"));
  CHECK_THAT(errorAfter([](json& d) { d["sources"]["hbm.tRP"] = "my guess"; }),
             Catch::Contains("sources.hbm.tRP: \"my guess\" is not a source"));
  CHECK_THAT(errorAfter([](json& d) { d["sources"]["hbm.tRP"] = "assumption:"; }),
             Catch::Contains("needs a reason"));
  CHECK_THAT(errorAfter([](json& d) { d["sources"]["hbm.tXYZ"] = "GC"; }),
             Catch::Contains("sources.hbm.tXYZ: names no field"));
  CHECK_THAT(errorAfter([](json& d) { d["sources"]["hbm.tRP"] = "test preset: small"; }),
             Catch::Contains("only allowed in presets with \"test_preset\": true"));
}

TEST_CASE("every problem of a file is reported at once", "[config][errors]") {
  std::string e = errorAfter([](json& d) {
    d["hbm"]["tRCD"] = "x";
    d["core"]["cores"] = 7;
    d["mxu"]["sizee"] = 1;
  });
  CHECK_THAT(e, Catch::Contains("hbm.tRCD"));
  CHECK_THAT(e, Catch::Contains("core.cores"));
  CHECK_THAT(e, Catch::Contains("mxu.sizee"));
}

TEST_CASE("a key given twice is an error, not silently the last one", "[config][errors]") {
  std::string text = presetText("v5e");
  size_t at = text.find("\"tRCD\"");
  REQUIRE(at != std::string::npos);
  text.insert(at, "\"tRCD\": 99,\n    ");
  CHECK_THAT(configError([&] {
               target::parseChip({text, "dup.json"});
             }),
             Catch::Matches(".*dup.json:\\d+:\\d+: error: hbm.tRCD: given twice \\(first at line "
                            "\\d+\\).*",
                            Catch::CaseSensitive::Yes));
}

TEST_CASE("invalid JSON names file:line:col", "[config][errors]") {
  std::string e = configError([] {
    target::parseChip({"{\n  \"name\": \"x\",\n  \"core\": { ,\n}", "bad.json"});
  });
  CHECK_THAT(e, Catch::StartsWith("bad.json:3:"));
  CHECK_THAT(e, Catch::Contains("invalid JSON"));
  CHECK_THAT(configError([] {
               target::parseChip({"[1, 2]", "arr.json"});
             }),
             Catch::Contains("arr.json: error: a chip description is a JSON object"));
}

TEST_CASE("set overrides: errors name the field", "[config][errors][set]") {
  target::ChipConfig chip = target::loadChip("v5e");
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.tRDC=14"); }),
             Catch::Contains("hbm.tRDC: unknown field (did you mean 'hbm.tRCD'?)"));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.tRCD=fast"); }),
             Catch::Contains("hbm.tRCD: expected an integer (cycles), got \"fast\""));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.tRCD=14.5"); }),
             Catch::Contains("hbm.tRCD: expected an integer"));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "core.clock_hz=1.5GHz"); }),
             Catch::Contains("core.clock_hz: expected a number (Hz)"));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "core.cores=3"); }),
             Catch::Contains("core.cores: 3 is out of range [1, 2]"));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm.tRCD"); }),
             Catch::Contains("expected section.field=value"));
  CHECK_THAT(configError([&] { target::applyOverride(chip, "hbm=3"); }),
             Catch::Contains("hbm: names a section, not a field (e.g. hbm.capacity_bytes)"));
  CHECK_THAT(configError([&] {
               target::applyOverrides(chip, {"mxu.size=64", "mxu.size=96"});
             }),
             Catch::Contains("mxu.size: must be a power of two"));
}

TEST_CASE("mutated preset text gives a target::ConfigError or a chip, never a crash",
          "[config][fuzz]") {
  const std::string original = presetText("v5e");
  std::mt19937 rng(12345);
  const char kBytes[] = "{}[]:,\"0123456789.eE+-tfn \n\\xA";
  int errors = 0, parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = original;
    int kind = i % 3;
    if (kind == 0) {
      text.resize(rng() % text.size());  // truncation
    } else {
      int edits = 1 + rng() % 4;
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % text.size();
        char c = kind == 1 ? kBytes[rng() % (sizeof(kBytes) - 1)] : char(rng() % 256);
        text[at] = c;
      }
    }
    try {
      target::parseChip({text, "fuzz.json"});
      ++parsed;
    } catch (const target::ConfigError& e) {
      ++errors;
      CHECK_THAT(e.what(), Catch::StartsWith("fuzz.json"));
    }
  }
  CHECK(errors > 0);
  INFO("parsed " << parsed << ", rejected " << errors);
}
