// Assembler and disassembler: the grammar, the round trip over random bundles
// (assemble(disassemble(b)) encodes byte-identical), whole-program round
// trips, and the error messages with their locations.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "isa/AsmSyntax.h"
#include "isa/Assembler.h"
#include "isa/Disassembler.h"
#include "isa/Encoder.h"
#include "isa/support/Numerics.h"
#include "testbench/unit/isa/RandomBundle.h"

using namespace tpusim::isa;

namespace {
Program assembleOk(const std::string& text) {
  Program p;
  std::vector<Diagnostic> diags;
  bool ok = assemble(text, "test.s", &p, &diags);
  std::string all;
  for (const Diagnostic& d : diags) all += formatDiagnostic(d);
  INFO(all);
  REQUIRE(ok);
  return p;
}

// All diagnostics, formatted.
std::string errorsOf(const std::string& text) {
  Program p;
  std::vector<Diagnostic> diags;
  bool ok = assemble(text, "test.s", &p, &diags);
  CHECK(!ok);
  std::string all;
  for (const Diagnostic& d : diags) all += formatDiagnostic(d);
  return all;
}
}  // namespace

TEST_CASE("syntax helpers: integers, floats and the Imm32 printing rule", "[isa][asm]") {
  using namespace tpusim::isa::syntax;
  int64_t v;
  CHECK((parseInteger("0x1F", &v) && v == 31));
  CHECK((parseInteger("-12", &v) && v == -12));
  CHECK((parseInteger("-9223372036854775808", &v) && v == INT64_MIN));
  CHECK(!parseInteger("9223372036854775808", &v));
  CHECK(!parseInteger("0x", &v));
  CHECK(!parseInteger("1.5", &v));
  uint32_t bits;
  CHECK((parseFloatLiteral("1.5", &bits) && bits == 0x3fc00000));
  CHECK((parseFloatLiteral("-2e-3", &bits) && bits == tpusim::bitsOf(-2e-3f)));
  CHECK((parseFloatLiteral("nan", &bits) && bits == 0x7fc00000));
  CHECK((parseFloatLiteral("-inf", &bits) && bits == 0xff800000));
  CHECK((parseFloatLiteral("-0.0", &bits) && bits == 0x80000000));
  CHECK(!parseFloatLiteral("1e39", &bits));
  CHECK(!isFloatLiteral("0x1e3"));
  CHECK(!isFloatLiteral("12"));
  CHECK(formatImm32(0xFFFFFFFF) == "-1");
  CHECK(formatImm32(0x3f800000) == "1.0");
  CHECK(formatImm32(0xbe000000) == "-0.125");
  CHECK(formatImm32(0x3f800001) == "0x3f800001");
  CHECK(formatImm32(0x80000000) == "0x80000000");
  CHECK(formatImm32(0x7fc00000) == "nan");
  // Every printed form reads back to the same bits.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = uint32_t(rng());
    if (i < 70000) b = tpusim::bitsOf(float(int32_t(rng() % 20001) - 10000) / 64.0f);
    std::string text = formatImm32(b);
    uint32_t back;
    if (parseInteger(text, &v))
      back = uint32_t(v);
    else
      REQUIRE(parseFloatLiteral(text, &back));
    REQUIRE(back == b);
  }
}

TEST_CASE("assembler: bundles, slots, labels and operands", "[isa][asm]") {
  Program p = assembleOk(R"(
    # a comment
    start:  sli s1, 100 ;; vimm v2, 1.5 ;; vimm v3, -1   // trailing comment
            @valu2 vadd.f32 v4, v2, v3 ;; vadd.s32 v5, v2, v3
    loop_top:
            saddi s1, s1, -1 ;; br.nz s1, loop_top
            jmp 0
            nop
    end: halt
  )");
  REQUIRE(p.code.size() == 6);
  const Bundle& b0 = p.code[0];
  CHECK(b0.slot(SlotKind::Scalar, 0).op == Opcode::SLi);
  CHECK(b0.slot(SlotKind::Scalar, 0).operands[1] == 100);
  CHECK(b0.slot(SlotKind::VectorAlu, 0).operands[1] == 0x3fc00000);
  CHECK(b0.slot(SlotKind::VectorAlu, 1).operands[1] == 0xffffffff);
  // The explicit slot is taken first; the auto op goes to the first free one.
  CHECK(p.code[1].slot(SlotKind::VectorAlu, 2).op == Opcode::VAddF32);
  CHECK(p.code[1].slot(SlotKind::VectorAlu, 0).op == Opcode::VAddS32);
  CHECK(p.code[2].slot(SlotKind::Scalar, 1).operands[1] == 2);
  CHECK(p.code[4] == Bundle{});
  CHECK(p.code[5].slot(SlotKind::Misc, 0).op == Opcode::Halt);
}

TEST_CASE("disassembler prints an explicit slot only where auto-placement differs", "[isa][asm]") {
  Bundle b;
  b.slot(SlotKind::VectorAlu, 1).op = Opcode::VIotaLane;
  b.slot(SlotKind::VectorAlu, 2).op = Opcode::VIotaSub;
  b.slot(SlotKind::Scalar, 0).op = Opcode::SAdd;
  b.slot(SlotKind::Scalar, 0).operands = {1, 2, 3};
  b.slot(SlotKind::VectorAlu, 2).operands[0] = 7;
  CHECK(disassembleBundle(b) == "sadd s1, s2, s3 ;; @valu1 viota.lane v0 ;; @valu2 viota.sub v7");
  Bundle back;
  std::string error;
  REQUIRE(assembleBundle(disassembleBundle(b), &back, &error));
  CHECK(back == b);
}

TEST_CASE("assemble(disassemble(b)) encodes byte-identical for random bundles", "[isa][property]") {
  std::mt19937_64 rng(2024);
  for (int n = 0; n < 100000; ++n) {
    Bundle b = tpusim::isa::testing::randomBundle(rng, n % 2 ? 0.6 : 0.25);
    std::string text = disassembleBundle(b);
    Bundle back;
    std::string error;
    INFO(text);
    REQUIRE(assembleBundle(text, &back, &error));
    REQUIRE(encode(back) == encode(b));
  }
}

TEST_CASE("directives fill every section and the program round trips through text", "[isa][asm]") {
  const char* src = R"(
    .chip v5e
    .buffer a, shape=[8, 128], dtype=f32, space=hbm, addr=0x0, role=input
    .buffer "out put", shape=[8,128], dtype=bf16, space=hbm, addr=0x1000, role=output, size=4096
    .data smem, 0x100, words 1, 2, -1, 1.0
    .words 5
    .data vmem, 0, bytes 1, 255, -128
    .dma_descriptor 16, src=hbm:0x0, dst=vmem:0x200, inner=512, counts=[8], src_strides=[512], dst_strides=[512]
    .cost kernel, flops=1.5e9, hbm_read=4096, hbm_write=2048
    .symbol main
    .op kernel hlo=%fusion.3 file="model.py" line=12
    main: sli s1, 16 ;; mark 0
          dma s1, f0, q0
    .op inner
          sync.wait f0, 1
    .endop
    .endop
    .op after, begin=0, end=1
          halt
  )";
  Program p = assembleOk(src);
  CHECK(p.chip == "v5e");
  REQUIRE(p.buffers.size() == 2);
  CHECK(p.buffers[0].sizeBytes == 4096);
  CHECK(p.buffers[1].name == "out put");
  CHECK(p.buffers[1].sizeBytes == 4096);
  REQUIRE(p.data.size() == 3);
  CHECK(p.data[0].bytes.size() == 20);
  CHECK(p.data[0].bytes[8] == 0xff);
  CHECK(p.data[0].bytes[15] == 0x3f);
  CHECK(p.data[1].bytes == std::vector<uint8_t>{1, 255, 128});
  CHECK(p.data[2].address == 64);
  CHECK(p.data[2].bytes.size() == 64);
  REQUIRE(p.symbols.size() == 1);
  CHECK(p.symbols[0].bundle == 0);
  REQUIRE(p.debugMap.size() == 3);
  CHECK(p.debugMap[0].begin == 0);
  CHECK(p.debugMap[0].end == 3);
  CHECK(p.debugMap[0].hloInstruction == "%fusion.3");
  CHECK(p.debugMap[1].begin == 2);
  CHECK(p.debugMap[1].end == 3);
  CHECK(p.debugMap[2].end == 1);
  CHECK(p.costs[0].flops == 1.5e9);

  std::string text = disassembleProgram(p);
  INFO(text);
  Program back = assembleOk(text);
  CHECK(back.chip == p.chip);
  CHECK(back.code == p.code);
  REQUIRE(back.buffers.size() == p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    CHECK(back.buffers[i].name == p.buffers[i].name);
    CHECK(back.buffers[i].sizeBytes == p.buffers[i].sizeBytes);
    CHECK(back.buffers[i].shape == p.buffers[i].shape);
  }
  REQUIRE(back.data.size() == p.data.size());
  for (size_t i = 0; i < p.data.size(); ++i) {
    CHECK(back.data[i].bytes == p.data[i].bytes);
    CHECK(back.data[i].address == p.data[i].address);
  }
  CHECK(text.find(".dma_descriptor 16, src=hbm:0x0, dst=vmem:0x200") != std::string::npos);
  REQUIRE(back.debugMap.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back.debugMap[i].begin == p.debugMap[i].begin);
    CHECK(back.debugMap[i].end == p.debugMap[i].end);
    CHECK(back.debugMap[i].opName == p.debugMap[i].opName);
    CHECK(back.debugMap[i].sourceFile == p.debugMap[i].sourceFile);
  }
  CHECK(back.costs[0].flops == p.costs[0].flops);
  CHECK(back.costs[0].hbmBytesWritten == 2048);
  CHECK(back.symbols[0].name == "main");
}

TEST_CASE("assembler errors: location, caret, and every error of the file", "[isa][asm]") {
  std::string errs = errorsOf("  vadd.f32 v1, v2\n  fooz s1\n  sadd s1, s2, s32\n");
  CHECK_THAT(errs, Catch::Contains("test.s:1:3: error: 'vadd.f32' takes 3 operands"));
  CHECK_THAT(errs, Catch::Contains("test.s:2:3: error: unknown opcode 'fooz'"));
  CHECK_THAT(errs, Catch::Contains("test.s:3:16: error: s32 does not exist"));
  CHECK_THAT(errs, Catch::Contains("  sadd s1, s2, s32\n               ^\n"));

  CHECK_THAT(errorsOf("vaddf32 v1, v2, v3"), Catch::Contains("did you mean 'vadd.f32'?"));
  CHECK_THAT(errorsOf("saddi s1, s2, 40000"),
             Catch::Contains("immediate 40000 is out of range for operand 3 of 'saddi'"));
  CHECK_THAT(errorsOf("vld v1, s0, 0, 1.5, 255"), Catch::Contains("only 32-bit immediates"));
  CHECK_THAT(errorsOf("vadd.f32 v1, s2, v3"),
             Catch::Contains("operand 2 of 'vadd.f32' must be a vector register (v0..v63), got "
                             "'s2'"));
  CHECK_THAT(errorsOf("mxu.latch mxu0 ;; mxu.latch mxu1"),
             Catch::Contains("1:19: error: no free mpush slot for 'mxu.latch'"));
  CHECK_THAT(errorsOf("@valu1 vmov v1, v2 ;; @valu1 vmov v3, v4"),
             Catch::Contains("slot valu1 is already used by 'vmov'"));
  CHECK_THAT(errorsOf("@vld0 vmov v1, v2"), Catch::Contains("cannot go in slot @vld0"));
  CHECK_THAT(errorsOf("@valu4 vmov v1, v2"), Catch::Contains("slot @valu4 does not exist"));
  CHECK_THAT(errorsOf("vmov v1, v2 ;; vadd.f32 v1, v2, v3"),
             Catch::Contains("register v1 is written twice in one bundle (also by 'vmov')"));
  CHECK_THAT(errorsOf("x: jmp x ;; br.z s1, x"), Catch::Contains("two branches in one bundle"));
  CHECK_THAT(errorsOf("vimm v1, 1 ;; vimm v2, 2 ;; vimm v3, 3 ;; vimm v4, 4 ;; sli s1, 5"),
             Catch::Contains("more than 4 distinct 32-bit immediates"));
  CHECK_THAT(errorsOf("jmp nowhere"), Catch::Contains("1:5: error: undefined label 'nowhere'"));
  CHECK_THAT(errorsOf("a: nop\na: nop"),
             Catch::Contains("2:1: error: label 'a' is already defined on line 1"));
  CHECK_THAT(errorsOf("jmp 5\n"), Catch::Contains("branch target 5 is past the end"));
  CHECK_THAT(errorsOf(".bogus 1"), Catch::Contains("unknown directive '.bogus'"));
  CHECK_THAT(errorsOf(".buffer a, shape=[8], dtype=f33, addr=0"),
             Catch::Contains("unknown dtype 'f33'"));
  CHECK_THAT(errorsOf(".buffer a, shape=[8], dtype=f32, addr=0\n.buffer b, shape=[8], "
                      "dtype=f32, addr=16"),
             Catch::Contains("overlaps buffer 'a'"));
  // A donated input and the output written in place share one address and size
  // (isa::buffersOverlap); any other overlap of an input and an output is an error.
  CHECK(assembleOk(".buffer a, shape=[8], dtype=f32, addr=0, role=input\n.buffer b, shape=[8], "
                   "dtype=f32, addr=0, role=output\nhalt")
            .buffers.size() == 2);
  CHECK_THAT(errorsOf(".buffer a, shape=[8], dtype=f32, addr=0, role=input\n.buffer b, "
                      "shape=[4], dtype=f32, addr=0, role=output"),
             Catch::Contains("overlaps buffer 'a'"));
  CHECK_THAT(errorsOf(".op k\nhalt"), Catch::Contains("'.op k' is never closed"));
  CHECK_THAT(errorsOf(".endop"), Catch::Contains("'.endop' without an open '.op'"));
  CHECK_THAT(errorsOf(".symbol main\n"), Catch::Contains("symbol 'main' names bundle 0"));
  CHECK_THAT(errorsOf(".words 1"), Catch::Contains("'.words' must follow a '.data' line"));
  CHECK_THAT(errorsOf("sadd s1, s2 s3"), Catch::Contains("expected ',' or ';;'"));
  CHECK_THAT(errorsOf("sadd s1, s2, s3 ; halt"), Catch::Contains("expected ';;'"));
  CHECK_THAT(errorsOf(".dma_descriptor 0, src=hbm:0, dst=vmem:0, inner=0"),
             Catch::Contains("inner 0 is out of range"));
}

TEST_CASE("assembler stops after maxErrors and says so", "[isa][asm]") {
  std::string src;
  for (int i = 0; i < 50; ++i) src += "bogus\n";
  Program p;
  std::vector<Diagnostic> diags;
  CHECK(!assemble(src, "many.s", &p, &diags));
  REQUIRE(diags.size() == 21);
  CHECK(diags.back().message == "too many errors (20), stopping");
}

TEST_CASE("every opcode prints and reassembles to itself", "[isa][asm]") {
  std::mt19937_64 rng(8);
  for (int i = 1; i < kNumOpcodes; ++i) {
    const OpcodeInfo& info = kOpcodeTable[i];
    for (int variant = 0; variant < 4; ++variant) {
      Bundle b;
      Instruction& inst = b.slot(info.slot, variant % slotInfo(info.slot).count);
      inst.op = info.op;
      for (int k = 0; k < info.numOperands; ++k)
        inst.operands[k] = tpusim::isa::testing::randomOperand(info.operands[k], rng);
      std::string text = disassembleBundle(b);
      INFO(text);
      CHECK(text.find(std::string(info.mnemonic) + (info.numOperands ? " " : "")) !=
            std::string::npos);
      Bundle back;
      std::string error;
      REQUIRE(assembleBundle(text, &back, &error));
      CHECK(back == b);
    }
  }
}

TEST_CASE("mutated source text never crashes the assembler", "[isa][asm][fuzz]") {
  const std::string base = R"(
    .chip v5e
    .buffer a, shape=[8, 128], dtype=f32, space=hbm, addr=0x0, role=input
    .data smem, 0x100, words 1, 2, 3
    .dma_descriptor 16, src=hbm:0x0, dst=vmem:0x0, inner=512, counts=[8], src_strides=[512], dst_strides=[512]
    .symbol main
    .op k hlo="x" file="f.py" line=3
    main: sli s1, 16 ;; vimm v1, 1.5 ;; @valu2 vmov v2, v1
    top:  vld v0, s0, 0, 1, 255 ;; saddi s0, s0, 8 ;; loop s3, top
    .endop
    .cost k, flops=1e3
          halt
  )";
  static const char* pieces[] = {";;",     ",",   "@valu1", "[", "]",  "=",    ":",
                                 "\"",     "\\",  "v99",    "-", "0x", "1e99", ".op",
                                 ".endop", "top", "\n",     "#", "//"};
  std::mt19937_64 rng(77);
  int accepted = 0;
  for (int n = 0; n < 5000; ++n) {
    std::string text = base;
    for (int m = 1 + int(rng() % 4); m > 0; --m) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text.erase(at, 1 + rng() % 5);
          break;
        case 1:
          text.insert(at, pieces[rng() % (sizeof pieces / sizeof *pieces)]);
          break;
        default:
          text[at] = char(rng());
      }
    }
    Program p;
    std::vector<Diagnostic> diags;
    if (assemble(text, "fuzz.s", &p, &diags)) {
      ++accepted;
      CHECK(diags.empty());
    } else {
      REQUIRE(!diags.empty());
      for (const Diagnostic& d : diags) REQUIRE(!formatDiagnostic(d).empty());
    }
  }
  CHECK(accepted > 0);
}
