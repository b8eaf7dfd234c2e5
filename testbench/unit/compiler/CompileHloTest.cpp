// The compiler driver (compiler/driver): compiling a file in process gives the
// program with its entry signature, which survives the .tpuprog round trip;
// errors are the text tpuc prints; the reference evaluation in process names
// its results as the program names its outputs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/driver/CompileHlo.h"
#include "compiler/driver/EvaluateHlo.h"
#include "isa/ProgramFile.h"
#include "isa/target/ChipLoader.h"

using namespace tpusim;

namespace {

// An .hlo file in $TMPDIR, removed at the end of the test.
class HloFile {
 public:
  explicit HloFile(const std::string& text) {
    char pattern[] = "/tmp/compile_hlo_testXXXXXX.hlo";
    int fd = mkstemps(pattern, 4);
    REQUIRE(fd >= 0);
    close(fd);
    path_ = pattern;
    std::ofstream(path_) << text;
  }
  ~HloFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const char* kTupleModule = R"(HloModule sig, input_output_alias={ {0}: (1, {}, may-alias) }

ENTRY main {
  x = f32[8,128]{1,0} parameter(0), metadata={op_name="params['x']"}
  acc = f32[8,128]{1,0} parameter(1)
  t = (f32[8]{0}, s32[4]{0}) parameter(2)
  n = f32[8,128]{1,0} negate(x)
  s = f32[8,128]{1,0} add(acc, n)
  i = s32[4]{0} get-tuple-element(t), index=1
  inner = (f32[8,128]{1,0}, s32[4]{0}) tuple(n, i)
  ROOT r = (f32[8,128]{1,0}, (f32[8,128]{1,0}, s32[4]{0})) tuple(s, inner)
}
)";

}  // namespace

TEST_CASE("a compiled program carries its entry signature through the file", "[driver]") {
  HloFile file(kTupleModule);
  driver::CompileResult r = driver::compileHloFile(file.path(), target::loadChip("v5e"));
  INFO(r.error);
  REQUIRE(r.ok());
  const isa::Program& p = r.lowered.program;
  REQUIRE(p.hasSignature);
  const isa::ProgramSignature& s = p.signature;
  CHECK(s.module == "sig");
  REQUIRE(s.parameters.size() == 3);
  CHECK(s.parameters[0].name == "x");
  CHECK(s.parameters[0].type == "f32[8,128]");
  REQUIRE(s.parameters[0].leaves.size() == 1);
  CHECK(s.parameters[0].leaves[0].buffer == "params['x']");
  CHECK(s.parameters[0].leaves[0].index.empty());
  CHECK(s.parameters[2].type == "(f32[8], s32[4])");
  REQUIRE(s.parameters[2].leaves.size() == 2);
  CHECK(s.parameters[2].leaves[0].buffer == "t.0");
  CHECK(s.parameters[2].leaves[1].buffer == "t.1");
  CHECK(s.parameters[2].leaves[1].index == std::vector<int64_t>{1});
  CHECK(s.parameters[2].leaves[1].dtype == isa::DType::S32);
  CHECK(s.resultType == "(f32[8,128], (f32[8,128], s32[4]))");
  REQUIRE(s.results.size() == 3);
  CHECK(s.results[0].buffer == "out.0");
  CHECK(s.results[2].buffer == "out.1.1");
  CHECK(s.results[2].index == std::vector<int64_t>{1, 1});
  CHECK(s.results[2].shape == std::vector<int64_t>{4});
  REQUIRE(s.aliases.size() == 1);
  CHECK(s.aliases[0].outputIndex == std::vector<int64_t>{0});
  CHECK(s.aliases[0].parameter == 1);
  std::vector<uint8_t> bytes;
  std::string error;
  REQUIRE(isa::serializeProgram(p, &bytes, &error));
  isa::Program back;
  REQUIRE(isa::parseProgram(bytes.data(), bytes.size(), "sig.tpuprog", &back, &error));
  REQUIRE(back.hasSignature);
  CHECK(back.signature.parameters[2].leaves[1].buffer == "t.1");
  CHECK(back.signature.results[2].index == std::vector<int64_t>{1, 1});
  CHECK(back.signature.aliases[0].parameter == 1);
}

TEST_CASE("compile errors are the text tpuc prints", "[driver]") {
  target::ChipConfig chip = target::loadChip("v5e");
  HloFile malformed("HloModule m\n\nENTRY main {\n  ROOT x = f32[2] bogus()\n}\n");
  driver::CompileResult r = driver::compileHloFile(malformed.path(), chip);
  CHECK(r.exitStatus() == 1);
  CHECK_THAT(r.error, Catch::StartsWith(malformed.path() + ":4:"));
  CHECK_THAT(r.error, Catch::Contains(": error: "));

  // An SPMD all-reduce whose to_apply is no element-wise op the chip combines with.
  HloFile collective(R"(HloModule m, num_partitions=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] subtract(a, b)
}

ENTRY main {
  x = f32[8,128]{1,0} parameter(0)
  ROOT r = f32[8,128]{1,0} all-reduce(x), to_apply=add
}
)");
  r = driver::compileHloFile(collective.path(), chip);
  CHECK_THAT(r.error,
             Catch::StartsWith(collective.path() + ":11: error: cannot lower %r (all-reduce)"));
  CHECK_THAT(r.error, Catch::Contains("to_apply is not one element-wise op"));

  HloFile two(
      "HloModule a\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n\n// -----\n\n"
      "HloModule b\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n");
  r = driver::compileHloFile(two.path(), chip);
  CHECK(r.error == "tpuc: error: " + two.path() +
                       " holds 2 module(s) (a, b); choose one with --module N|NAME");
  driver::CompileOptions second;
  second.module = "b";
  r = driver::compileHloFile(two.path(), chip, second);
  INFO(r.error);
  CHECK(r.ok());
  CHECK(r.lowered.program.signature.module == "b");
}

TEST_CASE("the reference evaluation in process names results as the program names outputs",
          "[driver]") {
  HloFile malformed("HloModule m\n\nENTRY main {\n  ROOT x = f32[4] parameter(\n}\n");
  HloFile nested(R"(HloModule m

ENTRY main {
  x = f32[4]{0} parameter(0)
  n = f32[4]{0} negate(x)
  inner = (f32[4]{0}) tuple(x)
  ROOT r = (f32[4]{0}, (f32[4]{0})) tuple(n, inner)
}
)");
  npy::Array x = npy::makeArray(npy::DType::F32, {4});
  for (int i = 0; i < 4; ++i) x.as<float>()[i] = float(i) + 0.5f;
  driver::EvaluateFileResult r = driver::evaluateHloFile(nested.path(), {{0, {x, "x.npy"}}});
  INFO(r.error);
  REQUIRE(r.ok());
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].first == "out.0");
  CHECK(r.outputs[1].first == "out.1.0");
  CHECK(r.outputs[0].second.as<float>()[3] == -3.5f);
  CHECK(r.outputs[1].second.as<float>()[1] == 1.5f);

  driver::EvaluateFileResult bad = driver::evaluateHloFile(malformed.path(), {});
  CHECK_THAT(bad.error, Catch::StartsWith(malformed.path() + ":"));
  CHECK_THAT(bad.error, Catch::Contains("error:"));

  driver::EvaluateFileResult missing = driver::evaluateHloFile(nested.path(), {{3, {x, "x.npy"}}});
  CHECK_THAT(missing.error, Catch::Contains("the entry computation has no parameter 3"));
  npy::Array wrong = npy::makeArray(npy::DType::F32, {5});
  driver::EvaluateFileResult shape =
      driver::evaluateHloFile(nested.path(), {{0, {wrong, "w.npy"}}});
  CHECK_THAT(shape.error, Catch::StartsWith("tpu-opt: error: "));
  CHECK_THAT(shape.error, Catch::Contains("w.npy"));
}
