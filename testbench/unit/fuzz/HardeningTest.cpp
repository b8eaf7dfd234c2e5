// Regression tests of issue 19 below the command line: the shared helpers
// (RunFiles, JsonText, InputFile), the .tpuprog reader's overlap and
// trailing-byte checks, and the HBM model's progress check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "isa/Assembler.h"
#include "isa/ProgramFile.h"
#include "isa/ProgramFileFormat.h"
#include "isa/support/InputFile.h"
#include "isa/support/JsonText.h"
#include "isa/support/RunFiles.h"
#include "isa/target/HbmConfig.h"
#include "sim/hbm/HbmModel.h"
#include "testbench/unit/fuzz/FuzzUtil.h"

using namespace tpusim;
namespace fs = std::filesystem;

TEST_CASE("RunFiles: an output may not be an input or another output", "[hardening]") {
  fs::path dir = fs::temp_directory_path() / ("tpusim-runfiles-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "sub");
  std::string in = (dir / "in.s").string();
  std::ofstream(in) << "x";
  fs::create_symlink(in, dir / "link.s");

  support::RunFiles f;
  f.input("the input program", in);
  f.output("--stats", (dir / "sub" / ".." / "in.s").string());
  CHECK(f.clash().find("--stats") != std::string::npos);

  support::RunFiles g;
  g.input("the input program", (dir / "link.s").string());
  g.output("--trace", in);
  CHECK(g.clash().find("is the input program") != std::string::npos);

  support::RunFiles h;
  h.input("the input program", in);
  h.output("--stats", (dir / "new.json").string());
  h.output("--trace", (dir / "sub" / ".." / "new.json").string());
  CHECK(h.clash().find("is also the --stats output") != std::string::npos);

  support::RunFiles ok;
  ok.input("the input program", in);
  ok.output("--stats", (dir / "a.json").string());
  ok.output("--trace", (dir / "b.json").string());
  ok.output("-o", "-");
  ok.outputsIn("--output-dir", (dir / "out").string(), {"x.npy", "y.npy"});
  CHECK(ok.clash().empty());

  support::RunFiles inDir;
  inDir.input("--input x", (dir / "out" / "x.npy").string());
  inDir.outputsIn("--output-dir", (dir / "out").string(), {"x.npy"});
  CHECK(inDir.clash().find("--output-dir") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("JsonText: depth and double overflow, with line and column", "[hardening]") {
  CHECK(!support::checkJsonText("{\"a\": [1, 2.5e300, -3], \"b\": \"[[[[1e999\"}"));
  auto deep = support::checkJsonText(std::string(100000, '[') + std::string(100000, ']'));
  REQUIRE(deep);
  CHECK(deep->offset == size_t(support::kMaxJsonDepth));
  CHECK(deep->message.find("nested deeper than") != std::string::npos);
  auto big = support::checkJsonText("{\n  \"x\": 1e999\n}");
  REQUIRE(big);
  CHECK(big->line == 2);
  CHECK(big->col == 8);
  CHECK(big->message == "the number 1e999 does not fit in a double");
}

TEST_CASE("InputFile: directories and devices are refused before reading", "[hardening]") {
  std::string text;
  CHECK(*support::readInputFile("/dev/zero", &text) ==
        "is not a regular file (a device, FIFO or socket); give a file");
  CHECK(*support::readInputFile("/", &text) == "is a directory, not a file");
  CHECK(*support::readInputFile("/no/such/file", &text) == "no such file");
}

namespace {
// A valid two-buffer program, serialized.
std::vector<uint8_t> twoBufferProgram() {
  isa::Program p;
  std::vector<isa::Diagnostic> diags;
  REQUIRE(
      isa::assemble(".buffer a, shape=[8], dtype=f32, space=hbm, addr=0x0, role=input\n"
                    ".buffer b, shape=[8], dtype=f32, space=hbm, addr=0x12345600, role=input\n"
                    "main:\n    halt\n",
                    "two.s", &p, &diags));
  std::vector<uint8_t> bytes;
  std::string error;
  REQUIRE(isa::serializeProgram(p, &bytes, &error));
  return bytes;
}

void fixHeader(std::vector<uint8_t>& b) {
  uint64_t size = b.size();
  std::memcpy(&b[16], &size, 8);
  uint64_t sum = isa::tpuprog::imageChecksum(b.data(), b.size());
  std::memcpy(&b[isa::tpuprog::kChecksumOffset], &sum, 8);
}
}  // namespace

TEST_CASE(".tpuprog reader: overlapping buffers and trailing bytes are refused", "[hardening]") {
  std::vector<uint8_t> bytes = twoBufferProgram();
  isa::Program p;
  std::string error;
  REQUIRE(isa::parseProgram(bytes.data(), bytes.size(), "two.tpuprog", &p, &error));

  // Move b onto a (the address field 0x12345600 is unique in the file).
  std::vector<uint8_t> overlap = bytes;
  const uint8_t addr[8] = {0x00, 0x56, 0x34, 0x12, 0, 0, 0, 0};
  auto at = std::search(overlap.begin(), overlap.end(), addr, addr + 8);
  REQUIRE(at != overlap.end());
  std::fill(at, at + 8, 0);
  fixHeader(overlap);
  CHECK_FALSE(isa::parseProgram(overlap.data(), overlap.size(), "o.tpuprog", &p, &error));
  INFO(error);
  CHECK(error.find("overlaps buffer") != std::string::npos);

  std::vector<uint8_t> trailing = bytes;
  trailing.insert(trailing.end(), 16, 0);
  fixHeader(trailing);
  CHECK_FALSE(isa::parseProgram(trailing.data(), trailing.size(), "t.tpuprog", &p, &error));
  CHECK(error.find("16 bytes after the last section") != std::string::npos);
}

TEST_CASE("HBM: refresh that leaves no time for an access is refused by validation",
          "[hardening]") {
  target::HbmConfig c;
  c.refresh = "all_bank";
  c.tREFI = 600;
  c.tRFC = 560;
  target::ConfigProblems problems;
  c.check(problems);
  REQUIRE(problems.list.size() == 1);
  CHECK(problems.list[0].first == "tREFI");
  CHECK(problems.list[0].second.find("leaves 40 cycles") != std::string::npos);

  // The model itself still completes work under such timing (slowly): its
  // progress check (HbmModel::checkProgress) must not fire on a slow memory.
  sim::hbm::HbmModel m(c, 1.5e9);
  m.submit({1, 0, 65536, false, 0});
  std::vector<sim::hbm::HbmCompletion> done;
  for (uint64_t t = 1 << 16; done.empty() && t < (uint64_t(1) << 26); t *= 2)
    REQUIRE_NOTHROW(m.advanceTo(t, done));
  CHECK(done.size() == 1);
}
