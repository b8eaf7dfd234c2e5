// tpusim-batch manifests: grids expand into cases with stable names, defaults
// apply, and errors name the JSON path.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "sim/tools/tpusim-batch/Manifest.h"

using namespace tpusim::batch;

namespace {

std::string sourceDir() {
  const char* s = std::getenv("TPUSIM_SOURCE_DIR");
  return s ? s : ".";
}

}  // namespace

TEST_CASE("a grid expands programs x chips x override values in order", "[batch]") {
  std::string src = sourceDir();
  Manifest m = parseManifest(R"({
    "defaults": {"mode": "functional", "tolerance": {"cycles": "2%"}},
    "grids": [{"name": "g", "programs": ["isa/samples/softmax_row.s"],
               "kernels": [{"kernel": "softmax", "params": {"rows": 8}}],
               "chips": ["v5e", "v6e"], "set": {"mxu.count": [1, 2], "vmem.bytes": 1048576}}]})",
                             src + "/m.json");
  REQUIRE(m.cases.size() == 8);
  CHECK(m.cases[0].name == "g/softmax_row/v5e/mxu.count=1/vmem.bytes=1048576");
  CHECK(m.cases[1].name == "g/softmax_row/v5e/mxu.count=2/vmem.bytes=1048576");
  CHECK(m.cases[2].name == "g/softmax_row/v6e/mxu.count=1/vmem.bytes=1048576");
  CHECK(m.cases[4].name == "g/softmax(rows=8)/v5e/mxu.count=1/vmem.bytes=1048576");
  CHECK(m.cases[4].kernel == "softmax");
  CHECK(m.cases[0].mode == "functional");
  CHECK(m.cases[0].tolerance.of("cycles") == Approx(0.02));
  CHECK(m.cases[0].tolerance.of("ops") == 0);
  CHECK(m.goldenPath == src + "/m.golden.json");
  CHECK(m.cases[0].program == src + "/isa/samples/softmax_row.s");
}

TEST_CASE("manifest errors name the file and the JSON path", "[batch]") {
  std::string src = sourceDir();
  auto error = [&](const std::string& text) {
    try {
      parseManifest(text, src + "/m.json");
    } catch (const ManifestError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(R"({"grids": [{"name": "g", "chips": ["v5e"]}]})") ==
        src + "/m.json: /grids/0: a grid needs \"programs\" or \"kernels\"");
  CHECK(error(R"({"cases": [{"kernel": "nope", "chip": "v5e"}]})").find("/cases/0/kernel: ") !=
        std::string::npos);
  CHECK(error(R"({"cases": [{"kernel": "softmax", "chip": "v5e", "mode": "fast"}]})") ==
        src + "/m.json: /cases/0/mode: mode 'fast': expected timing or functional");
  CHECK(error(R"({"cases": [{"kernel": "softmax", "chip": "v5e", "tolerance": "x%"}]})") ==
        src + "/m.json: /cases/0/tolerance: 'x%' is not a percentage");
  CHECK(error(R"({"cases": []})") == src + "/m.json: /: no cases: give \"cases\" or \"grids\"");
  CHECK(error(R"({"golden": "m.json", "cases": []})").find("must not be the manifest") !=
        std::string::npos);
}
