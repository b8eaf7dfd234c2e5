// Finding presets by name or path, $TPUSIM_CHIPS_DIR, and "extends".
#include <unistd.h>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "TestUtil.h"
#include "isa/target/FieldList.h"
#include "isa/target/JsonLocator.h"

using namespace tpusim;
using namespace tpusim::target;
using namespace tpusim::target::test;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("tpusim-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

// Sets an environment variable for the scope of a test.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& value) : name(n) { ::setenv(n, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("a chip is found by name or by path", "[config][loader]") {
  target::ChipConfig byName = target::loadChip("v5e");
  target::ChipConfig byPath = target::loadChip(target::sourceChipsDir() + "/v5e.json");
  CHECK(target::sameConfig(byName, byPath));
  CHECK(target::resolveChipPath("v5e") == target::sourceChipsDir() + "/v5e.json");
}

TEST_CASE("an unknown chip lists the known presets and where it looked", "[config][loader]") {
  std::string e = configError([] { target::loadChip("v9z"); });
  CHECK_THAT(e, Catch::Contains("unknown chip 'v9z'"));
  CHECK_THAT(e, Catch::Contains("v5e"));
  CHECK_THAT(e, Catch::Contains(target::sourceChipsDir()));
  CHECK_THAT(configError([] { target::loadChip("/no/such/chip.json"); }),
             Catch::Contains("/no/such/chip.json: error: chip file does not exist"));
}

TEST_CASE("TPUSIM_CHIPS_DIR is searched before the source tree", "[config][loader]") {
  TempDir dir;
  std::string text = presetText("tiny8");
  // A chip of the same name in the env dir shadows the source tree's.
  nlohmann::json doc = nlohmann::json::parse(text);
  doc["mxu"]["count"] = 2;
  dir.write("tiny8.json", doc.dump(2));
  ScopedEnv env("TPUSIM_CHIPS_DIR", dir.path.string());
  CHECK(target::loadChip("tiny8").mxu.count == 2);
  CHECK(target::chipSearchDirs().front() == dir.path.string());
  // The source tree's presets are still found.
  CHECK(target::loadChip("v4").core.cores == 2);
}

TEST_CASE("extends starts from a preset and changes only what it lists", "[config][loader]") {
  TempDir dir;
  std::string path = dir.write("sweep.json", R"({
  "extends": "v5e",
  "description": "v5e with 2 MXUs",
  "mxu": { "count": 2 },
  "hbm": { "tRCD": 30 },
  "sources": { "hbm.tRCD": "assumption: slower HBM for a sweep" }
})");
  target::ChipConfig chip = target::loadChip(path);
  target::ChipConfig base = target::loadChip("v5e");
  CHECK(chip.name == "sweep");
  CHECK(chip.description == "v5e with 2 MXUs");
  CHECK(chip.mxu.count == 2);
  CHECK(chip.hbm.tRCD == 30);
  CHECK(chip.hbm.tRP == base.hbm.tRP);
  CHECK(chip.sources.at("mxu.count") == "override: " + path);
  CHECK(chip.sources.at("hbm.tRCD") == "assumption: slower HBM for a sweep");
  CHECK(chip.sources.at("hbm.tRP") == base.sources.at("hbm.tRP"));

  // An extending file is validated like any other: its errors name it.
  std::string bad =
      dir.write("bad.json", "{\n  \"extends\": \"v5e\",\n  \"mxu\": { \"size\": 96 }\n}");
  CHECK_THAT(configError([&] { target::loadChip(bad); }),
             Catch::Contains(bad + ":3:12: error: mxu.size: must be a power of two"));
}

TEST_CASE("extends chains resolve beside the file, and cycles are errors", "[config][loader]") {
  TempDir dir;
  dir.write("a.json", R"({"extends": "b", "mxu": {"count": 1}})");
  dir.write("b.json", R"({"extends": "v4", "mxu": {"count": 2}})");
  target::ChipConfig a = target::loadChip((dir.path / "a.json").string());
  CHECK(a.mxu.count == 1);
  CHECK(a.core.cores == 2);  // from v4 through b

  dir.write("c.json", R"({"extends": "d"})");
  dir.write("d.json", R"({"extends": "c"})");
  CHECK_THAT(configError([&] { target::loadChip((dir.path / "c.json").string()); }),
             Catch::Contains("levels of \"extends\" (a cycle?)"));
  dir.write("e.json", R"({"extends": "nonexistent"})");
  CHECK_THAT(configError([&] { target::loadChip((dir.path / "e.json").string()); }),
             Catch::Contains("unknown chip 'nonexistent'"));
}

TEST_CASE("the locator finds keys by path", "[config][loader]") {
  std::string text = "{\n  \"a\": {\n    \"b\": 1,\n    \"c\": [ {\"x\": 2} ]\n  },\n  \"d\": 3\n}";
  JsonLocator loc(text);
  CHECK(loc.find("a").line == 2);
  CHECK(loc.find("a.b").line == 3);
  CHECK(loc.find("a.b").col == 5);
  CHECK(loc.find("d").line == 6);
  CHECK(loc.find("a.zz").line == 2);  // falls back to the enclosing key
  CHECK(loc.find("nothing").line == 0);
  CHECK(loc.find("a.c[0].x").line == 4);
  CHECK(loc.duplicates().empty());
  JsonLocator dup("{\"a\": {\"b\": 1, \"b\": 2}, \"l\": [{\"k\": 1}, {\"k\": 2}]}");
  REQUIRE(dup.duplicates().size() == 1);
  CHECK(dup.duplicates()[0].path == "a.b");
  TextPos p = JsonLocator::posOfByte(text, 9);
  CHECK(p.line == 2);
  CHECK(p.col == 7);
}
