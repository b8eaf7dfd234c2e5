// The .tpuprog container: round trip of every section, header checks, and
// the corrupt-file tests (truncation at every byte, random byte flips with and
// without the checksum) that must always reject or read safely. Run under
// ASan + UBSan in CI (label "sanitize").
#include <unistd.h>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "isa/Assembler.h"
#include "isa/Disassembler.h"
#include "isa/ProgramFile.h"
#include "isa/SharedCode.h"
#include "testbench/unit/isa/RandomProgram.h"

using namespace tpusim::isa;

namespace {
const char* kSource = R"(
  .chip v5e
  .buffer a, shape=[8, 128], dtype=f32, space=hbm, addr=0x0, role=input
  .buffer c, shape=[8, 128], dtype=bf16, space=hbm, addr=0x1000, role=output, size=4096
  .data smem, 0x100, words 1, 2, 3, 0x3f800000
  .data vmem, 0x200, bytes 1, 2, 3
  .dma_descriptor 0, src=hbm:0x0, dst=vmem:0x0, inner=4096, counts=[], src_strides=[], dst_strides=[]
  .cost kernel, flops=2048, hbm_read=4096, hbm_write=2048, vmem_read=1, vmem_write=2
  .symbol main
  .op kernel hlo=%fusion.1 file="model.py" line=7
  main: sli s0, 0 ;; sli s1, 0 ;; mark 0
        dma s1, f0, q0
        sync.wait f0, 1
  top:  vld v0, s0, 0, 1, 255 ;; vimm v1, 2.5
        vmul.f32 v2, v0, v1 ;; saddi s0, s0, 8 ;; loop s2, top
        vst v2, s0, 64, 1, 255
  .endop
        halt
)";

Program sampleProgram() {
  Program p;
  std::vector<Diagnostic> diags;
  REQUIRE(assemble(kSource, "sample.s", &p, &diags));
  return p;
}

// The sample with the signature tpuc would give it: parameter 0 a tuple whose
// leaf {1} is buffer a, the result buffer c, and one donation.
Program signedProgram() {
  Program p = sampleProgram();
  p.hasSignature = true;
  ProgramSignature& s = p.signature;
  s.module = "sample";
  s.parameters.push_back({"Arg_0.1", "(token[], f32[8,128])", {{{1}, "a", {8, 128}, DType::F32}}});
  s.resultType = "bf16[8,128]";
  s.results.push_back({{}, "c", {8, 128}, DType::Bf16});
  s.aliases.push_back({{}, 0, {1}});
  return p;
}

bool leavesEqual(const std::vector<SignatureLeaf>& a, const std::vector<SignatureLeaf>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].index != b[i].index || a[i].buffer != b[i].buffer || a[i].shape != b[i].shape ||
        a[i].dtype != b[i].dtype)
      return false;
  return true;
}

bool signaturesEqual(const Program& a, const Program& b) {
  if (a.hasSignature != b.hasSignature) return false;
  const ProgramSignature &x = a.signature, &y = b.signature;
  if (x.module != y.module || x.resultType != y.resultType || !leavesEqual(x.results, y.results) ||
      x.parameters.size() != y.parameters.size() || x.aliases.size() != y.aliases.size())
    return false;
  for (size_t i = 0; i < x.parameters.size(); ++i)
    if (x.parameters[i].name != y.parameters[i].name ||
        x.parameters[i].type != y.parameters[i].type ||
        !leavesEqual(x.parameters[i].leaves, y.parameters[i].leaves))
      return false;
  for (size_t i = 0; i < x.aliases.size(); ++i)
    if (x.aliases[i].outputIndex != y.aliases[i].outputIndex ||
        x.aliases[i].parameter != y.aliases[i].parameter ||
        x.aliases[i].parameterIndex != y.aliases[i].parameterIndex)
      return false;
  return true;
}

std::vector<uint8_t> serialize(const Program& p) {
  std::vector<uint8_t> bytes;
  std::string error;
  INFO(error);
  REQUIRE(serializeProgram(p, &bytes, &error));
  return bytes;
}

bool programsEqual(const Program& a, const Program& b) {
  if (a.chip != b.chip || a.code != b.code || a.data.size() != b.data.size() ||
      a.buffers.size() != b.buffers.size() || a.symbols.size() != b.symbols.size() ||
      a.debugMap.size() != b.debugMap.size() || a.costs.size() != b.costs.size())
    return false;
  for (size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i].space != b.data[i].space || a.data[i].address != b.data[i].address ||
        a.data[i].bytes != b.data[i].bytes)
      return false;
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const BufferDesc &x = a.buffers[i], &y = b.buffers[i];
    if (x.name != y.name || x.shape != y.shape || x.dtype != y.dtype || x.space != y.space ||
        x.address != y.address || x.sizeBytes != y.sizeBytes || x.role != y.role)
      return false;
  }
  for (size_t i = 0; i < a.symbols.size(); ++i)
    if (a.symbols[i].name != b.symbols[i].name || a.symbols[i].bundle != b.symbols[i].bundle)
      return false;
  for (size_t i = 0; i < a.debugMap.size(); ++i) {
    const DebugEntry &x = a.debugMap[i], &y = b.debugMap[i];
    if (x.begin != y.begin || x.end != y.end || x.opName != y.opName ||
        x.hloInstruction != y.hloInstruction || x.sourceFile != y.sourceFile ||
        x.sourceLine != y.sourceLine)
      return false;
  }
  for (size_t i = 0; i < a.costs.size(); ++i) {
    const CostEntry &x = a.costs[i], &y = b.costs[i];
    if (x.opName != y.opName || x.flops != y.flops || x.hbmBytesRead != y.hbmBytesRead ||
        x.hbmBytesWritten != y.hbmBytesWritten || x.vmemBytesRead != y.vmemBytesRead ||
        x.vmemBytesWritten != y.vmemBytesWritten)
      return false;
  }
  if (a.bodies.size() != b.bodies.size() || a.instances.size() != b.instances.size()) return false;
  for (size_t i = 0; i < a.bodies.size(); ++i)
    if (a.bodies[i].code != b.bodies[i].code) return false;
  for (size_t i = 0; i < a.instances.size(); ++i)
    if (a.instances[i].at != b.instances[i].at || a.instances[i].body != b.instances[i].body ||
        a.instances[i].patches != b.instances[i].patches)
      return false;
  return signaturesEqual(a, b);
}

std::string parseError(const std::vector<uint8_t>& bytes, bool verifyChecksum = true) {
  Program p;
  std::string error;
  ProgramReadOptions options;
  options.verifyChecksum = verifyChecksum;
  if (parseProgram(bytes.data(), bytes.size(), "x.tpuprog", &p, &error, nullptr, options))
    return "";
  return error;
}

void put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
// A corrupted file read without its checksum must be either a clear error
// ("x: ...") or a program that is itself valid (serializes again); true when
// it was accepted.
bool acceptedWithoutChecksum(const std::vector<uint8_t>& bytes) {
  Program q;
  std::string error;
  ProgramReadOptions options;
  options.verifyChecksum = false;
  if (parseProgram(bytes.data(), bytes.size(), "x", &q, &error, nullptr, options)) {
    std::vector<uint8_t> again;
    REQUIRE(serializeProgram(q, &again, &error));
    return true;
  }
  REQUIRE(error.rfind("x: ", 0) == 0);
  return false;
}

}  // namespace

TEST_CASE("a program with every section survives write and read", "[isa][tpuprog]") {
  Program p = sampleProgram();
  std::vector<uint8_t> bytes = serialize(p);
  Program back;
  std::string error;
  ProgramFileInfo info;
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error, &info));
  CHECK(programsEqual(p, back));
  CHECK(info.versionMajor == kProgramVersionMajor);
  CHECK(info.fileSize == bytes.size());
  REQUIRE(info.sections.size() == 7);
  CHECK(info.sections[1].name == "code");
  CHECK(info.sections[1].count == p.code.size());
  // Serialization is deterministic.
  CHECK(serialize(back) == bytes);

  char path[] = "/tmp/tpuprog_testXXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  REQUIRE(writeProgramFile(p, path, &error));
  REQUIRE(readProgramFile(path, &back, &error));
  CHECK(programsEqual(p, back));
  std::remove(path);
  CHECK(!readProgramFile("/nonexistent/dir/x.tpuprog", &back, &error));
  CHECK_THAT(error, Catch::Contains("/nonexistent/dir/x.tpuprog: no such file"));
}

TEST_CASE("a read without the code checks it all but keeps no bundles", "[isa][tpuprog]") {
  Program p = sampleProgram();
  std::vector<uint8_t> bytes = serialize(p);
  ProgramReadOptions options;
  options.keepCode = false;
  Program back;
  std::string error;
  ProgramFileInfo info;
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error, &info, options));
  CHECK(back.code.empty());
  CHECK(info.sections[1].count == p.code.size());
  CHECK(back.symbols.size() == p.symbols.size());
  CHECK(back.debugMap.size() == p.debugMap.size());
  back.code = p.code;
  CHECK(programsEqual(p, back));
  // A bundle that does not decode is still found.
  const size_t code = size_t(info.sections[1].offset) + 4;
  std::fill(bytes.begin() + long(code), bytes.begin() + long(code + kBundleBytes), 0xff);
  options.verifyChecksum = false;
  CHECK(!parseProgram(bytes.data(), bytes.size(), "x", &back, &error, nullptr, options));
  CHECK_THAT(error, Catch::Contains("bundle 0"));
}

TEST_CASE("the writer refuses programs the reader would reject", "[isa][tpuprog]") {
  Program p = sampleProgram();
  std::vector<uint8_t> bytes;
  std::string error;
  Program bad = p;
  bad.symbols.push_back({"late", 1000});
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("symbol 'late' names bundle 1000"));
  bad = p;
  bad.code[0].slot(SlotKind::Scalar, 0).operands[0] = 99;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("bundle 0: slot scalar0"));
  bad = p;
  bad.buffers[0].sizeBytes = 10;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("size 10 is smaller than the 4096 bytes"));
}

TEST_CASE("a write without the read-back gives the same bytes, and the reader still checks",
          "[isa][tpuprog]") {
  Program p = sampleProgram();
  std::vector<uint8_t> checked, unchecked;
  std::string error;
  REQUIRE(serializeProgram(p, &checked, &error));
  REQUIRE(serializeProgram(p, &unchecked, &error, /*readBack=*/false));
  CHECK(checked == unchecked);
  // What the read-back would have refused, the caller's own parse refuses.
  Program bad = p;
  bad.symbols.push_back({"late", 1000});
  REQUIRE(serializeProgram(bad, &unchecked, &error, /*readBack=*/false));
  Program back;
  CHECK(!parseProgram(unchecked.data(), unchecked.size(), "x", &back, &error));
  CHECK_THAT(error, Catch::Contains("symbol 'late' names bundle 1000"));
}

TEST_CASE("header problems are named", "[isa][tpuprog]") {
  std::vector<uint8_t> good = serialize(sampleProgram());
  auto b = good;
  b[0] = 'X';
  CHECK_THAT(parseError(b), Catch::Contains("bad magic"));
  b = good;
  b[8] = 2;
  CHECK_THAT(parseError(b), Catch::Contains("format version 2.0 is not supported"));
  b = good;
  b[good.size() / 2] ^= 1;
  CHECK_THAT(parseError(b), Catch::Contains("checksum mismatch"));
  b = good;
  b[32] ^= 1;  // ISA fingerprint
  CHECK_THAT(parseError(b, false), Catch::Contains("different instruction set"));
  b.assign(good.begin(), good.begin() + 10);
  CHECK_THAT(parseError(b), Catch::Contains("shorter than the 64-byte header"));
  b.assign(good.begin(), good.end() - 1);
  CHECK_THAT(parseError(b), Catch::Contains("the header says the file is"));
}

TEST_CASE("structural errors behind the checksum name section and offset", "[isa][tpuprog]") {
  Program p = sampleProgram();
  std::vector<uint8_t> good = serialize(p);
  ProgramFileInfo info;
  Program back;
  std::string error;
  REQUIRE(parseProgram(good.data(), good.size(), "x", &back, &error, &info));
  auto b = good;
  // A huge bundle count must be caught before any allocation.
  uint64_t code = info.sections[1].offset;
  b[code + 3] = 0x7f;
  CHECK_THAT(parseError(b, false), Catch::Contains("section 'code'"));
  CHECK_THAT(parseError(b, false), Catch::Contains("cannot hold that many"));
  b = good;
  b[code + 4] = 0xff;  // first bundle's scalar0 opcode
  CHECK_THAT(parseError(b, false), Catch::Contains("bundle 0 (file offset 0x"));
  CHECK_THAT(parseError(b, false), Catch::Contains("unknown opcode 255"));
  b = good;
  put64(b, 64 + 24 + 8, good.size());  // code section offset past the end
  CHECK_THAT(parseError(b, false), Catch::Contains("section 'code' at offset"));
}

TEST_CASE("truncation at every byte offset is rejected", "[isa][tpuprog][sanitize]") {
  std::vector<uint8_t> good = serialize(sampleProgram());
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> b(good.begin(), good.begin() + long(len));
    REQUIRE(!parseError(b).empty());
    // Also with the size field patched and the checksum off, so the section
    // checks (not just the size check) see the short file.
    if (len >= 64) {
      put64(b, 16, len);
      REQUIRE(!parseError(b, false).empty());
    }
  }
}

TEST_CASE("random byte flips are rejected or read safely", "[isa][tpuprog][sanitize]") {
  Program p = sampleProgram();
  std::vector<uint8_t> good = serialize(p);
  std::mt19937_64 rng(99);
  int accepted = 0;
  for (int n = 0; n < 30000; ++n) {
    auto b = good;
    int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % b.size();
      uint8_t x = uint8_t(rng());
      b[at] ^= x ? x : 1;
    }
    // With the checksum every change is caught.
    REQUIRE(!parseError(b).empty());
    // Without it, the structural checks must hold.
    if (acceptedWithoutChecksum(b)) ++accepted;
  }
  // Flips inside data bytes, strings and immediates are structurally fine.
  CHECK(accepted > 0);
}

TEST_CASE("random programs: file round trip and text round trip are byte-identical",
          "[isa][tpuprog][property]") {
  std::mt19937_64 rng(5);
  for (int n = 0; n < 500; ++n) {
    Program p = tpusim::isa::testing::randomProgram(rng);
    std::vector<uint8_t> bytes;
    std::string error;
    INFO("program " << n);
    REQUIRE(serializeProgram(p, &bytes, &error));
    Program back;
    REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error));
    REQUIRE(programsEqual(p, back));

    std::string text = disassembleProgram(p);
    INFO(text);
    Program reassembled;
    std::vector<Diagnostic> diags;
    bool ok = assemble(text, "listing.s", &reassembled, &diags);
    std::string all;
    for (const Diagnostic& d : diags) all += formatDiagnostic(d);
    INFO(all);
    REQUIRE(ok);
    std::vector<uint8_t> again;
    REQUIRE(serializeProgram(reassembled, &again, &error));
    REQUIRE(again == bytes);
  }
}

TEST_CASE("the matmul sample survives truncation at every byte and random flips",
          "[isa][tpuprog][sanitize]") {
  const char* root = std::getenv("TPUSIM_SOURCE_DIR");
  std::string path =
      std::string(root ? root : TPUSIM_SOURCE_DIR_DEFAULT) + "/isa/samples/matmul_tile.s";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  Program p;
  std::vector<Diagnostic> diags;
  REQUIRE(assemble(text.str(), path, &p, &diags));
  std::vector<uint8_t> good = serialize(p);
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> b(good.begin(), good.begin() + long(len));
    REQUIRE(!parseError(b).empty());
    if (len >= 64) {
      put64(b, 16, len);
      REQUIRE(!parseError(b, false).empty());
    }
  }
  std::mt19937_64 rng(11);
  for (int n = 0; n < 10000; ++n) {
    auto b = good;
    size_t at = rng() % b.size();
    uint8_t x = uint8_t(rng());
    b[at] ^= x ? x : 1;
    REQUIRE(!parseError(b).empty());
    Program q;
    std::string error;
    ProgramReadOptions options;
    options.verifyChecksum = false;
    if (!parseProgram(b.data(), b.size(), "x", &q, &error, nullptr, options))
      REQUIRE(!error.empty());
  }
}

TEST_CASE("the signature survives write and read; without one the file is format 1.0",
          "[isa][tpuprog][signature]") {
  Program plain = sampleProgram();
  std::vector<uint8_t> plainBytes = serialize(plain);
  ProgramFileInfo info;
  Program back;
  std::string error;
  REQUIRE(parseProgram(plainBytes.data(), plainBytes.size(), "x", &back, &error, &info));
  CHECK(info.versionMinor == 0);
  CHECK(info.sections.size() == 7);
  CHECK(!back.hasSignature);

  Program p = signedProgram();
  std::vector<uint8_t> bytes = serialize(p);
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error, &info));
  CHECK(info.versionMinor == 1);
  REQUIRE(info.sections.size() == 8);
  CHECK(info.sections[7].name == "signature");
  CHECK(info.sections[7].count == 2);
  CHECK(back.hasSignature);
  CHECK(programsEqual(p, back));
  CHECK(serialize(back) == bytes);
  // The other sections are the bytes a program without a signature has.
  CHECK(std::equal(bytes.begin() + long(info.sections[0].offset),
                   bytes.begin() + long(info.sections[6].offset + info.sections[6].size),
                   plainBytes.begin() + long(info.sections[0].offset - 24)));

  std::string text = disassembleProgram(back);
  CHECK_THAT(text, Catch::Contains("// ---- signature of module sample (1 parameters, 1 outputs"));
  CHECK_THAT(text, Catch::Contains("// param 0 %Arg_0.1: (token[], f32[8,128])\n"
                                   "//   {1} input a: f32[8,128]\n"
                                   "// result: bf16[8,128]\n"
                                   "//   {} output c: bf16[8,128]\n"
                                   "// alias: output {} may live in param 0 {1} (donated)\n"));
  DisassemblyOptions noSignature;
  noSignature.signature = false;
  CHECK_THAT(disassembleProgram(back, noSignature), !Catch::Contains("signature"));
}

TEST_CASE("a signature that contradicts the buffer table is refused", "[isa][tpuprog][signature]") {
  std::vector<uint8_t> bytes;
  std::string error;
  Program bad = signedProgram();
  bad.signature.parameters[0].leaves[0].buffer = "nope";
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("section 'signature'"));
  CHECK_THAT(error, Catch::Contains(
                        "parameter 0 ('Arg_0.1') leaf 0 names buffer 'nope', but the buffer table "
                        "has no input of that name"));
  bad = signedProgram();
  bad.signature.results[0].buffer = "a";  // an input
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("has no output of that name"));
  bad = signedProgram();
  bad.signature.results[0].shape = {8, 64};
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("buffer 'c' has another shape or dtype"));
  bad = signedProgram();
  bad.signature.results.push_back(bad.signature.results[0]);
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("buffer 'c' is named by two leaves"));
  bad = signedProgram();
  bad.signature.aliases[0].parameter = 3;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("alias 0 names parameter 3, but the signature has 1"));
  bad = signedProgram();
  bad.signature.results[0].index.assign(40, 0);
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("40 levels deep, the limit is 32"));
}

TEST_CASE("signature section: corrupt counts, versions and section counts are named",
          "[isa][tpuprog][signature]") {
  std::vector<uint8_t> good = serialize(signedProgram());
  ProgramFileInfo info;
  Program back;
  std::string error;
  REQUIRE(parseProgram(good.data(), good.size(), "x", &back, &error, &info));
  uint64_t sig = info.sections[7].offset;
  auto b = good;
  b[sig] = 9;  // signature version
  CHECK_THAT(parseError(b, false), Catch::Contains("signature version 9 is not supported"));
  b = good;
  // The parameter count follows the version, reserved and module name "sample".
  size_t count = sig + 4 + 4 + 6;
  b[count + 3] = 0x7f;
  CHECK_THAT(parseError(b, false), Catch::Contains("section 'signature'"));
  CHECK_THAT(parseError(b, false), Catch::Contains("the parameter count is"));
  CHECK_THAT(parseError(b, false), Catch::Contains("cannot hold that many"));
  // A 1.0 file may not have the eighth section.
  b = good;
  b[10] = 0;
  CHECK_THAT(parseError(b, false),
             Catch::Contains("the file has 8 sections, expected 7 (format 1.0)"));
  // A string length past the section's end.
  b = good;
  b[sig + 4 + 3] = 0x7f;
  CHECK_THAT(parseError(b, false), Catch::Contains("the module name needs"));
}

TEST_CASE("a program with a signature survives truncation at every byte and random flips",
          "[isa][tpuprog][signature][sanitize]") {
  std::vector<uint8_t> good = serialize(signedProgram());
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> b(good.begin(), good.begin() + long(len));
    REQUIRE(!parseError(b).empty());
    if (len >= 64) {
      put64(b, 16, len);
      REQUIRE(!parseError(b, false).empty());
    }
  }
  ProgramFileInfo info;
  Program back;
  std::string error;
  REQUIRE(parseProgram(good.data(), good.size(), "x", &back, &error, &info));
  // Flips aimed at the signature section, then anywhere.
  std::mt19937_64 rng(23);
  int accepted = 0;
  for (int n = 0; n < 20000; ++n) {
    auto b = good;
    size_t at = n % 2 ? info.sections[7].offset + rng() % info.sections[7].size : rng() % b.size();
    uint8_t x = uint8_t(rng());
    b[at] ^= x ? x : 1;
    REQUIRE(!parseError(b).empty());
    if (acceptedWithoutChecksum(b)) ++accepted;
  }
  CHECK(accepted > 0);
}

namespace {

// Two copies of one kernel (the second with another address, debug-map
// number and branch target), a bundle between them and the halt after.
const char* kTwoKernels = R"(
  .chip v5e
  .symbol k0
  .op k0
  k0: sli s0, 100 ;; sli s2, 4
  t0: vld v0, s0, 0, 1, 255 ;; mark 0
      saddi s0, s0, 8 ;; loop s2, t0
  .endop
      nop
  .symbol k1
  .op k1
  k1: sli s0, 200 ;; sli s2, 4
  t1: vld v0, s0, 0, 1, 255 ;; mark 1
      saddi s0, s0, 8 ;; loop s2, t1
  .endop
      halt
)";

Program flatTwoKernels() {
  Program p;
  std::vector<Diagnostic> diags;
  REQUIRE(assemble(kTwoKernels, "two.s", &p, &diags));
  REQUIRE(p.code.size() == 8);
  return p;
}

// The same program with the kernel's code shared: one body, two instances.
Program sharedTwoKernels() {
  Program flat = flatTwoKernels();
  Program p = flat;
  p.bodies.push_back({{flat.code.begin(), flat.code.begin() + 3}});
  p.instances.push_back({0, 0, {}});
  BodyInstance second{4, 0, {}};
  REQUIRE(patchesFor(p.bodies[0].code, flat.code.data() + 4, 3, &second.patches));
  p.instances.push_back(second);
  p.code = {flat.code[3], flat.code[7]};
  return p;
}

}  // namespace

TEST_CASE("shared kernel bodies: write, read and flatten give the flat program",
          "[isa][tpuprog][shared-code]") {
  Program flat = flatTwoKernels(), shared = sharedTwoKernels();
  // sli's immediate, mark's number, loop's target.
  REQUIRE(shared.instances[1].patches.size() == 3);
  CHECK(checkSharedCode(shared).empty());
  CHECK(codeSize(shared) == 8);
  CHECK(flatCode(shared) == flat.code);
  CHECK(ownCodeIndex(shared, 3) == 0);
  CHECK(ownCodeIndex(shared, 7) == 1);
  CHECK(ownCodeIndex(shared, 5) == -1);
  CHECK(ownCodeIndex(shared, 8) == -1);

  std::vector<uint8_t> bytes = serialize(shared);
  Program back;
  std::string error;
  ProgramFileInfo info;
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error, &info));
  CHECK(programsEqual(shared, back));
  CHECK(info.versionMinor == 2);
  CHECK(info.sections[1].count == 8);
  CHECK(info.bundles == 8);
  CHECK(info.ownBundles == 2);
  CHECK(info.bodies == 1);
  CHECK(info.bodyBundles == 3);
  CHECK(info.instances == 2);
  CHECK(info.patches == 3);
  CHECK(serialize(back) == bytes);
  flattenCode(&back);
  CHECK(programsEqual(flat, back));
  // A program without shared code is still written as format 1.0.
  std::vector<uint8_t> flatBytes = serialize(flat);
  REQUIRE(parseProgram(flatBytes.data(), flatBytes.size(), "x", &back, &error, &info));
  CHECK(info.versionMinor == 0);

  // The listing shows the instances as comments and the bundles flat: it
  // assembles to the flat program.
  std::string text = disassembleProgram(shared);
  CHECK_THAT(text,
             Catch::Contains("// instance 1 of shared body 0 (3 bundles, 3 patched operands)"));
  Program reassembled;
  std::vector<Diagnostic> diags;
  REQUIRE(assemble(text, "listing.s", &reassembled, &diags));
  CHECK(serialize(reassembled) == flatBytes);

  // A read without the code keeps no bodies either, but checks them.
  ProgramReadOptions noCode;
  noCode.keepCode = false;
  REQUIRE(parseProgram(bytes.data(), bytes.size(), "x", &back, &error, &info, noCode));
  CHECK(back.code.empty());
  CHECK(back.bodies.empty());
  CHECK(back.instances.empty());
  CHECK(info.sections[1].count == 8);
}

TEST_CASE("the writer refuses shared code the reader would reject", "[isa][tpuprog][shared-code]") {
  std::vector<uint8_t> bytes;
  std::string error;
  Program bad = sharedTwoKernels();
  bad.instances[1].body = 3;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("instance 1 (at bundle 4): names body 3, but there are 1"));
  bad = sharedTwoKernels();
  bad.instances[1].at = 2;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("starts before the previous instance ends (bundle 3)"));
  bad = sharedTwoKernels();
  bad.instances[1].patches[0].value = int64_t(1) << 40;
  CHECK(!serializeProgram(bad, &bytes, &error));
  CHECK_THAT(error, Catch::Contains("patched bundle 0 does not encode"));
}

TEST_CASE("corrupt shared code is a clear error naming instance and patch",
          "[isa][tpuprog][shared-code]") {
  Program shared = sharedTwoKernels();
  std::vector<uint8_t> good = serialize(shared);
  ProgramFileInfo info;
  Program back;
  std::string error;
  REQUIRE(parseProgram(good.data(), good.size(), "x", &back, &error, &info));
  // The code section: own bundles (2), the body (3 bundles), two instance
  // records of 16 bytes, the second's three patches of 16.
  const size_t code = size_t(info.sections[1].offset);
  const size_t bodies = code + 4 + 2 * kBundleBytes;
  const size_t inst0 = bodies + 4 + 4 + 3 * kBundleBytes + 4;
  const size_t inst1 = inst0 + 16, patch0 = inst1 + 16;
  auto put32 = [](std::vector<uint8_t>& b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  auto corrupt = [&](size_t at, uint32_t v) {
    auto b = good;
    put32(b, at, v);
    return parseError(b, false);
  };
  REQUIRE(good[inst1] == 4);  // the layout is what this test thinks
  CHECK_THAT(corrupt(bodies, 0x7fffffff), Catch::Contains("the shared body count is"));
  CHECK_THAT(corrupt(bodies + 4, 0), Catch::Contains("shared body 0 (file offset 0x"));
  CHECK_THAT(corrupt(bodies + 4, 0), Catch::Contains("has no bundles"));
  CHECK_THAT(corrupt(inst1 + 4, 7), Catch::Contains("instance 1 (at bundle 4): names body 7"));
  CHECK_THAT(corrupt(inst1, 1), Catch::Contains("starts before the previous instance ends"));
  CHECK_THAT(corrupt(inst1, 9),
             Catch::Contains("6 bundles before it, but only 2 code bundles are left"));
  CHECK_THAT(corrupt(inst1 + 8, 1000), Catch::Contains("an instance's patch count is 1000"));
  CHECK_THAT(corrupt(inst1 + 12, 1), Catch::Contains("instance 1: reserved field is not zero"));
  // Patches: out of the body, an empty slot, an operand the op lacks, out of order.
  CHECK_THAT(corrupt(patch0, 3), Catch::Contains("patch 0: bundle 3 is outside the body's 3"));
  CHECK_THAT(corrupt(patch0 + 4, 0x00000005), Catch::Contains("of the body bundle is empty"));
  CHECK_THAT(corrupt(patch0 + 4, 0x00000900), Catch::Contains("operand 9 of sli"));
  CHECK_THAT(corrupt(patch0 + 4, 0x000000ff), Catch::Contains("slot 255 does not exist"));
  CHECK_THAT(corrupt(patch0 + 32, 0), Catch::Contains("patches are not in order"));
  // Values that do not fit their field.
  CHECK_THAT(corrupt(patch0 + 12, 1), Catch::Contains("patched bundle 0 does not encode"));
  {
    auto b = good;
    put64(b, patch0 + 8, uint64_t(-1));
    CHECK_THAT(parseError(b, false),
               Catch::Contains("'sli' operand 2 is -1, outside the range of a 32-bit immediate"));
  }
  // A symbol or debug-map range is checked against every bundle the program runs.
  CHECK(shared.symbols.at(1).bundle == 4);
}

TEST_CASE("shared code survives truncation at every byte and random flips",
          "[isa][tpuprog][shared-code][sanitize]") {
  std::vector<uint8_t> good = serialize(sharedTwoKernels());
  for (size_t len = 0; len < good.size(); ++len) {
    std::vector<uint8_t> b(good.begin(), good.begin() + long(len));
    REQUIRE(!parseError(b).empty());
    if (len >= 64) {
      put64(b, 16, len);
      REQUIRE(!parseError(b, false).empty());
    }
  }
  std::mt19937_64 rng(13);
  int accepted = 0;
  for (int n = 0; n < 20000; ++n) {
    auto b = good;
    int flips = 1 + int(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      size_t at = rng() % b.size();
      uint8_t x = uint8_t(rng());
      b[at] ^= x ? x : 1;
    }
    REQUIRE(!parseError(b).empty());
    if (acceptedWithoutChecksum(b)) ++accepted;
  }
  CHECK(accepted > 0);
}
