// Fuzzers for every input kind (issue 19): mutated HLO, corrupted .tpuprog,
// broken presets, bad --set values, command-line misuse and faulting guest
// programs. Seeds are fixed, so each run sees the same cases; the case
// counts keep each fuzzer to about a second (a few under ASan/UBSan, where
// these run too: the "sanitize" label). The property is the same everywhere:
// a clear error or a valid result, never a crash, a hang or a lost file.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "compiler/driver/CompileHlo.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "isa/Assembler.h"
#include "isa/ProgramFile.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "isa/target/FieldList.h"
#include "sim/chip/Simulation.h"
#include "sim/tools/tpusim/TpusimDriver.h"
#include "testbench/unit/fuzz/FuzzUtil.h"
#include "testbench/unit/isa/RandomBundle.h"

using namespace tpusim;
using namespace tpusim::fuzz;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("tpusim-fuzz-{}-{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

isa::Program assembleSample(const std::string& name) {
  std::string path = sourceDir() + "/isa/samples/" + name;
  isa::Program p;
  std::vector<isa::Diagnostic> diags;
  REQUIRE(isa::assemble(readText(path), path, &p, &diags));
  return p;
}

// Runs a program with a cycle bound: it halts or faults, nothing else.
void runBounded(const target::ChipConfig& chip, const isa::Program& p, int64_t maxCycles,
                bool functional) {
  sim::SimOptions o;
  o.functional = functional;
  o.maxCycles = maxCycles;
  o.dmaFactory = sim::makeChipDma;
  try {
    sim::Simulation s(chip, p, o);
    sim::SimResult r = s.run();
    CHECK((r.halted || r.fault));
    if (r.fault) CHECK(!r.fault->kind.empty());
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).size() >
          0);  // a clear error (e.g. a data segment that does not fit)
  }
}

}  // namespace

TEST_CASE("fuzz: mutated HLO gives a parse, verify or compile error, or a program", "[fuzz]") {
  const std::vector<std::string> seeds = {
      "testbench/lit/lowering/op-elementwise.hlo", "testbench/lit/lowering/op-reduce.hlo",
      "testbench/lit/lowering/op-dot-f32.hlo",     "testbench/lit/lowering/op-data-movement.hlo",
      "testbench/lit/lowering/control-while.hlo",  "testbench/lit/hardening/Inputs/negate.hlo"};
  target::ChipConfig chip = target::loadChip("tiny8");
  fs::path dir = scratch("hlo");
  std::mt19937_64 rng(19);
  int parsed = 0, compiled = 0;
  for (int i = 0; i < 240; ++i) {
    std::string text = readText(sourceDir() + "/" + seeds[size_t(i) % seeds.size()]);
    for (int m = int(rng() % 3); m >= 0; --m) text = mutateText(text, rng);
    hlo::ParseResult r = hlo::parseHloText(text, "fuzz.hlo");
    if (!r.ok()) {
      CHECK(r.error.find("error") != std::string::npos);
      continue;
    }
    ++parsed;
    if (!hlo::verifyModule(*r.modules[0]).ok()) continue;
    std::string path = (dir / fmt::format("case{}.hlo", i)).string();
    writeText(path, text);
    driver::CompileResult c = driver::compileHloFile(path, chip, {});
    if (c.ok())
      ++compiled;
    else
      CHECK(c.error.find("error") != std::string::npos);
  }
  CHECK(parsed > 20);
  CHECK(compiled > 5);
  fs::remove_all(dir);
}

TEST_CASE("fuzz: corrupted .tpuprog files are refused or run to a halt or a fault",
          "[fuzz][throws-in-systemc]") {
  target::ChipConfig chip = target::loadChip("tiny8");
  std::mt19937_64 rng(1919);
  int accepted = 0;
  for (const char* sample : {"elementwise.s", "softmax_row.s", "matmul_tile.s"}) {
    isa::Program p = assembleSample(sample);
    p.chip.clear();
    std::vector<uint8_t> bytes;
    std::string error;
    REQUIRE(isa::serializeProgram(p, &bytes, &error));
    for (int i = 0; i < 120; ++i) {
      std::vector<uint8_t> b = bytes;
      switch (rng() % 4) {
        case 0:  // a few random bytes
          for (int k = 1 + int(rng() % 4); k > 0; --k) b[rng() % b.size()] = uint8_t(rng());
          break;
        case 1:
          b.resize(rng() % b.size());
          break;
        case 2:
          b.insert(b.end(), 1 + rng() % 16, uint8_t(rng()));
          break;
        default:  // one 64-bit field set to a hostile value
          if (b.size() > 8) {
            uint64_t v = rng() % 2 ? ~uint64_t(0) : uint64_t(1) << (rng() % 64);
            std::memcpy(&b[(rng() % (b.size() - 8)) & ~size_t(7)], &v, 8);
          }
      }
      isa::Program q;
      isa::ProgramReadOptions options;
      options.verifyChecksum = false;
      if (!isa::parseProgram(b.data(), b.size(), "fuzz.tpuprog", &q, &error, nullptr, options)) {
        CHECK(error.rfind("fuzz.tpuprog: ", 0) == 0);
        continue;
      }
      ++accepted;
      if (accepted % 4 == 0) runBounded(chip, q, 20000, rng() % 2);
    }
  }
  CHECK(accepted > 0);
}

TEST_CASE("fuzz: broken presets are a ConfigError naming the file, or a valid chip", "[fuzz]") {
  std::string base = readText(sourceDir() + "/sim/chips/v5e.json");
  std::mt19937_64 rng(5);
  int valid = 0;
  for (int i = 0; i < 400; ++i) {
    std::string text = base;
    for (int m = int(rng() % 3); m >= 0; --m) text = mutateText(text, rng);
    try {
      target::ChipConfig c = target::parseChipText(text, "fuzz.json");
      ++valid;
    } catch (const target::ConfigError& e) {
      CHECK(std::string(e.what()).find("fuzz.json") != std::string::npos);
    }
  }
  CHECK(valid > 0);
}

TEST_CASE("fuzz: bad --set values are refused naming the field; accepted ones run bounded",
          "[fuzz][throws-in-systemc]") {
  target::ChipConfig tiny = target::loadChip("tiny8");
  std::vector<target::FieldInfo> fields = target::listFields(tiny);
  isa::Program program = assembleSample("elementwise.s");
  program.chip.clear();
  std::mt19937_64 rng(77);
  int accepted = 0, ran = 0;
  for (int i = 0; i < 600; ++i) {
    const target::FieldInfo& f = fields[rng() % fields.size()];
    const auto& n = hostileNumbers();
    std::string value = n[rng() % n.size()];
    if (rng() % 4 == 0) value = rng() % 2 ? "all_bank" : "true";
    target::ChipConfig chip = tiny;
    try {
      target::applyOverrides(chip, {f.path + "=" + value});
      ++accepted;
    } catch (const target::ConfigError& e) {
      CHECK(std::string(e.what()).find(f.path) != std::string::npos);
      continue;
    }
    if (ran < 40 && rng() % 3 == 0) {
      ++ran;
      runBounded(chip, program, 200000, rng() % 2);
    }
  }
  CHECK(accepted > 0);
  CHECK(ran > 0);
}

TEST_CASE("fuzz: command-line misuse of tpusim is an error, and no input file changes",
          "[fuzz][throws-in-systemc]") {
  fs::path dir = scratch("cli");
  std::string prog = (dir / "prog.s").string(), chipFile = (dir / "chip.json").string();
  fs::copy_file(sourceDir() + "/isa/samples/softmax_row.s", prog);
  fs::copy_file(sourceDir() + "/sim/chips/tiny8.json", chipFile);
  fs::create_directories(dir / "adir");
  writeText((dir / "bad.json").string(), "{\"extends\": \"v5e\", \"hbm\": {\"tRCD\": 1e999}}");
  {
    sim::TpusimArgs make;
    make.program = prog;
    make.outputDir = (dir / "out").string();
    make.quiet = true;
    Quiet q;
    REQUIRE(sim::runTpusim(make) == 0);
  }
  std::string npy = (dir / "out" / "y.npy").string();
  std::vector<std::string> inputsBefore;
  for (const std::string& f : {prog, chipFile, npy}) inputsBefore.push_back(readText(f));

  const std::vector<std::string> programs = {prog, (dir / "adir").string(), "/dev/zero",
                                             (dir / "missing.s").string(),
                                             (dir / "adir.hlo").string()};
  const std::vector<std::string> chips = {
      "tiny8",     chipFile, "/dev/zero", (dir / "adir").string(), (dir / "bad.json").string(),
      "nosuchchip"};
  const std::vector<std::string> paths = {
      "", prog, chipFile, npy, (dir / "s.json").string(), (dir / "adir").string(), "/dev/null"};
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 60; ++i) {
    sim::TpusimArgs a;
    a.program = programs[rng() % programs.size()];
    a.chip = chips[rng() % chips.size()];
    a.mode = rng() % 5 ? "functional" : (rng() % 2 ? "timing" : "fast");
    a.quiet = true;
    if (rng() % 2) a.inputs.push_back("x=" + paths[rng() % paths.size()]);
    if (rng() % 4 == 0) a.inputs.push_back(rng() % 2 ? "x" : "=y");
    a.statsPath = paths[rng() % paths.size()];
    a.tracePath = rng() % 2 ? paths[rng() % paths.size()] : "";
    if (rng() % 3 == 0) a.outputDir = rng() % 2 ? (dir / "o2").string() : (dir / "out").string();
    a.force = rng() % 2;
    a.maxCycles = std::vector<int64_t>{0, -5, 1, 1000}[rng() % 4];
    a.quantum = std::vector<int64_t>{10000, 0, 1, INT64_MAX}[rng() % 4];
    a.traceEventsPerTrack = std::vector<int64_t>{200000, -1, 0, 16}[rng() % 4];
    if (rng() % 3 == 0) {
      a.checkRtol = std::vector<double>{0, -1, NAN, 1e300}[rng() % 4];
      a.checkRtolGiven = true;
    }
    a.check = rng() % 4 == 0;
    if (rng() % 3 == 0) {
      const auto& n = hostileNumbers();
      a.sets.push_back(std::string(rng() % 2 ? "hbm.tRCD=" : "mxu.count=") + n[rng() % n.size()]);
    }
    int rc;
    {
      Quiet q;
      rc = sim::runTpusim(a);
    }
    CHECK((rc == 0 || rc == 1));
    std::vector<std::string> inputsAfter;
    for (const std::string& f : {prog, chipFile, npy}) inputsAfter.push_back(readText(f));
    INFO("case " << i << ": " << a.program << " --chip " << a.chip << " --stats " << a.statsPath
                 << " --trace " << a.tracePath);
    REQUIRE(inputsAfter == inputsBefore);
  }
  fs::remove_all(dir);
}

TEST_CASE("fuzz: random guest programs halt or fault within --max-cycles",
          "[fuzz][throws-in-systemc]") {
  target::ChipConfig chip = target::loadChip("tiny8");
  std::mt19937_64 rng(99);
  for (int i = 0; i < 60; ++i) {
    isa::Program p;
    int n = 1 + int(rng() % 24);
    for (int k = 0; k < n; ++k) p.code.push_back(isa::testing::randomBundle(rng, 0.4));
    isa::BufferDesc b;
    b.name = "x";
    b.shape = {8, 128};
    b.dtype = isa::DType::F32;
    b.space = isa::MemorySpace::Hbm;
    b.role = isa::BufferRole::Input;
    b.address = 0;
    b.sizeBytes = 8 * 128 * 4;
    p.buffers.push_back(b);
    runBounded(chip, p, 5000, rng() % 2);
  }
}
