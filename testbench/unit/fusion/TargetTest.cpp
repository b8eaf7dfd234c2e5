// TargetDescription: the chip as the compiler reads it from sim/chips presets.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "testbench/unit/fusion/FusionTestUtil.h"

using namespace tpusim;

namespace {

std::string writeTemp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "tpusim_target_test";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const lower::TargetError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("v5e preset: the published figures", "[fusion][target]") {
  lower::TargetDescription t = lower::loadTarget("v5e");
  CHECK(t.name == "v5e");
  CHECK(t.mxuCount == 4);
  CHECK(t.mxuSize == 128);
  CHECK(t.vmemBytes == 128 * 1024 * 1024);
  CHECK(t.hbmBytes == 16LL * 1024 * 1024 * 1024);
  CHECK(t.clockHz == 1.5e9);
  CHECK(t.vectorRegs == 64);
  // 819 GB/s (tpu-facts.md) from the HBM model's channels x bus width x clock.
  CHECK(t.hbmBytesPerSecond == Approx(819.2e9));
  // 197 TFLOP/s bf16 = 4 x 128^2 x 2 x 1.5 GHz.
  CHECK(t.peakFlopsPerSecond() == Approx(196.608e12));
  CHECK(t.criticalIntensity() == Approx(240).epsilon(0.01));
  CHECK(t.summary().find("4 MXU(s) of 128x128") != std::string::npos);
}

TEST_CASE("tiny8 preset by name and by path", "[fusion][target]") {
  lower::TargetDescription byName = lower::loadTarget("tiny8");
  CHECK(byName.mxuSize == 8);
  CHECK(byName.vmemBytes == 262144);
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  if (!src) return;
  lower::TargetDescription byPath = lower::loadTarget(std::string(src) + "/sim/chips/tiny8.json");
  CHECK(byPath.vmemBytes == byName.vmemBytes);
  CHECK(byPath.sourcePath.find("tiny8.json") != std::string::npos);
}

TEST_CASE("a preset that extends another changes only what it gives", "[fusion][target]") {
  std::string path = writeTemp(
      "small_vmem.json", R"({"name": "small", "extends": "v5e", "vmem": {"bytes": 1048576}})");
  lower::TargetDescription t = lower::loadTarget(path);
  CHECK(t.name == "small");
  CHECK(t.vmemBytes == 1048576);
  CHECK(t.mxuSize == 128);  // from v5e
  CHECK(t.hbmBytes == 16LL * 1024 * 1024 * 1024);
}

TEST_CASE("bad presets are errors that name the file and the field", "[fusion][target]") {
  CHECK(errorOf([] { lower::loadTarget("no_such_chip"); }).find("unknown chip 'no_such_chip'") !=
        std::string::npos);
  CHECK(errorOf([] { lower::loadTarget("/nonexistent/x.json"); }).find("does not exist") !=
        std::string::npos);
  std::string broken = writeTemp("broken.json", "{\"name\": \"b\", ");
  CHECK(errorOf([&] { lower::loadTarget(broken); }).find("invalid JSON") != std::string::npos);
  std::string typed =
      writeTemp("typed.json", R"({"name": "t", "extends": "v5e", "mxu": {"size": "big"}})");
  std::string e = errorOf([&] { lower::loadTarget(typed); });
  CHECK(e.find("typed.json") != std::string::npos);
  CHECK(e.find("mxu.size: expected an integer") != std::string::npos);
  std::string missing = writeTemp("missing.json", R"({"name": "m", "core": {}})");
  CHECK(errorOf([&] { lower::loadTarget(missing); }).find("core.cores: missing field") !=
        std::string::npos);
  std::string loop = writeTemp("loop.json", R"({"name": "l", "extends": "loop"})");
  CHECK(errorOf([&] { lower::loadTarget(loop); }).find("a cycle?") != std::string::npos);
}
