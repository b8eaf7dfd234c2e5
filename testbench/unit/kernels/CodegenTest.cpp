// Code generator components: target presets, list scheduling, register
// allocation, and the independent timing check of the generated bundles.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "kernels/codegen/HazardCheck.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/codegen/TargetInfo.h"

using namespace tpusim;
using namespace tpusim::kernels::codegen;
using isa::Opcode;

namespace {

std::string chipsDir() {
  if (const char* src = std::getenv("TPUSIM_SOURCE_DIR")) return std::string(src) + "/sim/chips";
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/testbench/")) + "/sim/chips";
}

MOperand I(int64_t v) { return MOperand::imm(v); }

// One MXU's work for an (8*tiles x 128) @ (128 x 128) product: load 16 weight
// tiles, push, latch, stream `tiles` LHS tiles, pop and store each result.
void mxuTile(MFunction& fn, MBlock& b, int mxu, int tiles, int region) {
  MOperand base = fn.newReg(RegClass::Scalar);
  b.instrs.push_back(makeInstr(Opcode::SLi, {base, I(0)}));
  for (int p = 0; p < 16; ++p) {
    MOperand w = fn.newReg(RegClass::Vector);
    MInstr ld = makeInstr(Opcode::VLd, {w, base, I(region * 4096 + p * 8), I(1), I(0xFF)});
    ld.mem = {MemAccess::Space::Vmem, region, false, region * 4096 + p * 8, 8};
    b.instrs.push_back(ld);
    b.instrs.push_back(makeInstr(Opcode::MxuWPushBf16, {I(mxu), w}));
  }
  b.instrs.push_back(makeInstr(Opcode::MxuLatch, {I(mxu)}));
  for (int i = 0; i < tiles; ++i) {
    MOperand x = fn.newReg(RegClass::Vector);
    MInstr ld = makeInstr(Opcode::VLd, {x, base, I(region * 4096 + 1024 + i * 8), I(1), I(0xFF)});
    ld.mem = {MemAccess::Space::Vmem, region, false, region * 4096 + 1024 + i * 8, 8};
    b.instrs.push_back(ld);
    b.instrs.push_back(makeInstr(Opcode::MxuMmBf16, {I(mxu), x, I(i)}));
  }
  for (int i = 0; i < tiles; ++i) {
    MOperand r = fn.newReg(RegClass::Vector);
    b.instrs.push_back(makeInstr(Opcode::MxuPop, {r, I(mxu), I(i)}));
    MInstr st = makeInstr(Opcode::VSt, {r, base, I(region * 4096 + 2048 + i * 8), I(1), I(0xFF)});
    st.mem = {MemAccess::Space::Vmem, region + 100, true, region * 4096 + 2048 + i * 8, 8};
    b.instrs.push_back(st);
  }
}

struct Compiled {
  std::vector<BlockSchedule> schedules;
  std::vector<isa::Bundle> bundles;
};

Compiled compile(MFunction& fn, const TargetInfo& t) {
  Compiled c;
  for (const MBlock& b : fn.blocks) c.schedules.push_back(scheduleBlock(b, t));
  allocateRegisters(fn, c.schedules, {}, t);
  c.bundles = assembleBundles(fn, c.schedules, t);
  return c;
}

}  // namespace

TEST_CASE("targets are read from the chip presets by their own keys") {
  TargetInfo v5e = loadTargetByName("v5e", chipsDir());
  CHECK(v5e.name == "v5e");
  CHECK(v5e.mxuCount == 4);
  CHECK(v5e.mxuSize == 128);
  CHECK(v5e.vectorRegs == 64);
  CHECK(v5e.valuSlots == 4);
  CHECK(v5e.vldSlots == 3);
  CHECK(v5e.vmemBytes == 134217728);
  CHECK(v5e.latencyOf(isa::LatencyClass::VectorLoad) == 3);
  CHECK(v5e.latencyOf(isa::LatencyClass::XluReduce) == 24);
  TargetInfo tiny = loadTargetByName("tiny8", chipsDir());
  CHECK(tiny.mxuSize == 8);
  CHECK(tiny.mxuCount == 1);
  // "extends" starts from the named sibling preset.
  TargetInfo ext = parseTarget(R"({"name": "v5e-small", "extends": "v5e", "mxu": {"count": 2}})",
                               chipsDir() + "/v5e-small.json");
  CHECK(ext.mxuCount == 2);
  CHECK(ext.vectorRegs == 64);
  CHECK_THROWS_WITH(
      parseTarget(R"({"extends": "v5e", "mxu": {"size": "big"}})", chipsDir() + "/x.json"),
      Catch::Contains("x.json:1:28: error: mxu.size: expected an integer"));
  CHECK_THROWS_WITH(
      parseTarget(R"({"extends": "v5e", "mxu": {"size": 96}})", chipsDir() + "/y.json"),
      Catch::Contains("mxu.size: must be a power of two"));
  CHECK_THROWS_WITH(loadTargetByName("no-such-chip", chipsDir()),
                    Catch::Contains("no-such-chip.json: error: chip file does not exist"));
}

TEST_CASE("an MXU tile sequence is scheduled without a single stall") {
  TargetInfo t = loadTargetByName("v5e", chipsDir());
  MFunction fn;
  fn.name = "mxu_tile";
  fn.blocks.resize(1);
  mxuTile(fn, fn.blocks[0], 0, 16, 0);
  Compiled c = compile(fn, t);
  auto problems = checkBlockTiming(c.bundles, t);
  for (const auto& p : problems) INFO(p);
  CHECK(problems.empty());
  // The weight port paces the 16 pushes (8 cycles each); the 16 mms follow
  // the latch at 8-cycle intervals; the last pop waits 7 + 2N after its mm.
  int lower = 15 * 8 + 8 + 15 * 8 + 7 + 2 * 128;
  CHECK(c.schedules[0].length >= lower);
  CHECK(c.schedules[0].length <= lower + 16);
}

TEST_CASE("independent MXUs overlap in one block") {
  TargetInfo t = loadTargetByName("v5e", chipsDir());
  MFunction one, four;
  one.blocks.resize(1);
  four.blocks.resize(1);
  mxuTile(one, one.blocks[0], 0, 16, 0);
  for (int m = 0; m < 4; ++m) mxuTile(four, four.blocks[0], m, 16, m);
  Compiled a = compile(one, t), b = compile(four, t);
  CHECK(checkBlockTiming(b.bundles, t).empty());
  // Four MXUs take far less than four times one MXU's time.
  CHECK(b.schedules[0].length < a.schedules[0].length + 64);
}

TEST_CASE("the timing check reports what the machine would stall on") {
  TargetInfo t = TargetInfo::defaults();
  std::vector<isa::Bundle> bundles(3);
  auto& mm = bundles[0].slot(isa::SlotKind::MatrixPush, 0);
  mm.op = Opcode::MxuMmBf16;
  mm.operands = {0, 1, 2};
  auto& pop = bundles[1].slot(isa::SlotKind::MatrixPop, 0);
  pop.op = Opcode::MxuPop;
  pop.operands = {5, 0, 2};
  auto& add = bundles[2].slot(isa::SlotKind::VectorAlu, 0);
  add.op = Opcode::VAddF32;
  add.operands = {6, 5, 5};
  auto problems = checkBlockTiming(bundles, t);
  REQUIRE(problems.size() >= 3);
  CHECK(problems[0] == "bundle 1: mxu.pop: result slot a2 not ready until 263");
  CHECK(problems[1] == "bundle 2: vadd.f32: v5 is not ready until bundle 3");
}

TEST_CASE("running out of vector registers is a clear error") {
  TargetInfo t = TargetInfo::defaults();  // 32 vector registers
  MFunction fn;
  fn.name = "pressure";
  fn.blocks.resize(1);
  MBlock& b = fn.blocks[0];
  std::vector<MOperand> regs;
  for (int i = 0; i < 40; ++i) {
    regs.push_back(fn.newReg(RegClass::Vector));
    b.instrs.push_back(makeInstr(Opcode::VImm, {regs.back(), I(i)}));
  }
  // A barrier keeps every definition above it: 40 values live at once.
  b.instrs.push_back(makeInstr(Opcode::SyncWait, {I(0), I(0)}));
  MOperand acc = regs[0];
  for (int i = 1; i < 40; ++i) {
    MOperand next = fn.newReg(RegClass::Vector);
    b.instrs.push_back(makeInstr(Opcode::VAddS32, {next, acc, regs[40 - i]}));
    acc = next;
  }
  std::vector<BlockSchedule> s{scheduleBlock(b, t)};
  CHECK_THROWS_WITH(allocateRegisters(fn, s, {}, t),
                    Catch::Contains("needs more than the 32 vector registers"));
}

#include "isa/ProgramFile.h"
#include "kernels/codegen/Compile.h"
#include "kernels/lib/Matmul.h"
#include "kernels/lib/Softmax.h"

namespace {

// Compiles, then checks the program survives the .tpuprog writer and reader
// (which decode every bundle and validate every table).
CompiledKernel compileAndRoundTrip(const tpusim::kernels::llo::Kernel& k, const TargetInfo& t) {
  CompiledKernel c = compileKernel(k, t);
  std::vector<uint8_t> bytes;
  std::string error;
  REQUIRE(isa::serializeProgram(c.program, &bytes, &error));
  isa::Program back;
  REQUIRE(isa::parseProgram(bytes.data(), bytes.size(), "kernel.tpuprog", &back, &error));
  CHECK(back.code.size() == c.program.code.size());
  return c;
}

}  // namespace

TEST_CASE("compiling library kernels gives hazard-free, encodable programs") {
  using namespace tpusim::kernels;
  TargetInfo t = loadTargetByName("v5e", chipsDir());
  SECTION("element-wise softmax over a grid") {
    auto k = lib::softmaxCall(64, 256, 16).trace({{{64, 256}, dsl::F32}});
    CompiledKernel c = compileAndRoundTrip(*k, t);
    CHECK(c.program.buffers.size() == 2);
    CHECK(c.program.costs[0].hbmBytesRead == 64 * 256 * 4);
    CHECK(c.program.costs[0].hbmBytesWritten == 64 * 256 * 4);
    CHECK(c.program.debugMap[0].opName == "softmax_64x256");
  }
  SECTION("bf16 matmul with a K reduction axis") {
    auto k = lib::matmulCall(256, 256, 512, dsl::BF16, {128, 128, 256})
                 .trace({{{256, 512}, dsl::BF16}, {{512, 256}, dsl::BF16}});
    CompiledKernel c = compileAndRoundTrip(*k, t);
    CHECK(c.program.costs[0].flops == 2.0 * 256 * 256 * 512);
    // Every step changes both input blocks: x is read N/bn times, y M/bm times.
    CHECK(c.program.costs[0].hbmBytesRead == 2u * (256 * 512 * 2) + 2u * (512 * 256 * 2));
    INFO(c.machineText.substr(0, 4000));
    CHECK(c.stats.vectorRegs <= t.vectorRegs);
  }
}

TEST_CASE("edge blocks copy and cost only their in-bounds part") {
  using namespace tpusim::kernels;
  TargetInfo t = loadTargetByName("v5e", chipsDir());
  // 20 rows in blocks of 8: the third block holds 4 rows.
  auto ragged = lib::softmaxCall(20, 256, 8).trace({{{20, 256}, dsl::F32}});
  CompiledKernel c = compileKernel(*ragged, t);
  CHECK(c.program.costs[0].hbmBytesRead == 20 * 256 * 4);
  CHECK(c.program.costs[0].hbmBytesWritten == 20 * 256 * 4);
  CHECK(c.program.costs[0].vmemBytesWritten == 3 * 8 * 256 * 4);
}

TEST_CASE("constructs the code generator does not handle yet are clear errors") {
  using namespace tpusim::kernels;
  TargetInfo t = loadTargetByName("v5e", chipsDir());
  TargetInfo tiny = loadTargetByName("tiny8", chipsDir());
  // MXU sizes from 8 to 256 compile (MxuSizesTest runs them); 4 does not, nor a transposed LHS
  // with results kept in the MXU across grid steps.
  auto mm = lib::matmulCall(32, 128, 128, dsl::BF16)
                .trace({{{32, 128}, dsl::BF16}, {{128, 128}, dsl::BF16}});
  CHECK_NOTHROW(compileKernel(*mm, tiny));
  TargetInfo four =
      parseTarget(R"({"extends": "v5e", "mxu": {"size": 4}})", chipsDir() + "/mxu4.json");
  CHECK_THROWS_WITH(compileKernel(*mm, four),
                    Catch::Contains("MXUs of size 4 are not supported (only 256 and powers of two "
                                    "from 8 to 128)"));
  dsl::CallConfig c;
  c.name = "matmul_tn";
  c.out_shapes = {{{128, 128}, dsl::F32, "out"}};
  c.grid = {1};
  auto whole = [](const dsl::GridIndex&) { return std::vector<dsl::Scalar>{0, 0}; };
  c.in_specs = {dsl::BlockSpec({128, 128}, whole), dsl::BlockSpec({128, 128}, whole)};
  c.out_specs = {dsl::BlockSpec({128, 128}, whole)};
  auto tn = dsl::pallas_call(
                [](dsl::Ref x, dsl::Ref y, dsl::Ref o) {
                  dsl::DotOptions keep{true, false};
                  keep.resident = dsl::MxuResident::Store;
                  o.store(dot(x.load(), y.load(), keep));
                },
                c)
                .trace({{{128, 128}, dsl::BF16}, {{128, 128}, dsl::BF16}});
  CHECK_THROWS_WITH(compileKernel(*tn, t), Catch::Contains("a transposed LHS with results kept"));
}

#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/MemoryPlan.h"

TEST_CASE("copy plans: rows merge into one run, bf16/int8 through the widening DMA") {
  using tpusim::kernels::llo::DType;
  using tpusim::kernels::llo::MemSpace;
  using tpusim::kernels::llo::Type;
  // A (16, 256) f32 block of a (64, 1024) array: rows of 512 bytes per column tile.
  CopyPlan f = planCopy(Type::ref(MemSpace::Hbm, DType::F32, {64, 1024}),
                        Type::ref(MemSpace::Vmem, DType::F32, {16, 256}), {16, 256});
  REQUIRE(f.descriptors.size() == 1);
  CHECK(f.descriptors[0].innerBytes == 512);
  CHECK(f.descriptors[0].numDims == 3);
  CHECK(f.descriptors[0].counts[0] == 2);         // column tiles, inner of the two
  CHECK(f.descriptors[0].srcStrides[0] == 512);   // 128 f32 further in the HBM row
  CHECK(f.descriptors[0].dstStrides[0] == 8192);  // 16 VMEM rows further
  CHECK(f.descriptors[0].counts[1] == 16);        // rows
  CHECK(f.descriptors[0].srcStrides[1] == 4096);
  CHECK(f.descriptors[0].dstStrides[1] == 512);
  CHECK(f.bytes == 16 * 256 * 4);
  // A whole (8, 128) f32 array is one contiguous run.
  CopyPlan w = planCopy(Type::ref(MemSpace::Hbm, DType::F32, {8, 128}),
                        Type::ref(MemSpace::Vmem, DType::F32, {8, 128}), {8, 128});
  CHECK(w.descriptors[0].innerBytes == 4096);
  CHECK(w.descriptors[0].numDims == 1);
  // bf16: the widening DMA puts each 2-byte element in the low half of its
  // 4-byte VMEM word, so a row of a column tile is one run (256 dense bytes).
  CopyPlan b = planCopy(Type::ref(MemSpace::Hbm, DType::Bf16, {32, 256}),
                        Type::ref(MemSpace::Vmem, DType::Bf16, {32, 256}), {32, 256});
  REQUIRE(b.descriptors.size() == 1);
  CHECK(b.descriptors[0].elemBytes == 2);
  CHECK(b.descriptors[0].innerBytes == 256);
  CHECK(b.descriptors[0].numDims == 3);
  CHECK(b.descriptors[0].counts[0] == 2);             // column tiles
  CHECK(b.descriptors[0].srcStrides[0] == 256);       // 128 bf16 further in the HBM row
  CHECK(b.descriptors[0].dstStrides[0] == 32 * 512);  // the next column tile
  CHECK(b.descriptors[0].counts[1] == 32);
  CHECK(b.descriptors[0].srcStrides[1] == 512);
  CHECK(b.descriptors[0].dstStrides[1] == 512);
  CHECK(b.bytes == 32 * 256 * 2);
  // int8 out of VMEM: one whole (8, 128) tile narrows into one dense run.
  CopyPlan o = planCopy(Type::ref(MemSpace::Vmem, DType::S8, {8, 128}),
                        Type::ref(MemSpace::Hbm, DType::S8, {8, 128}), {8, 128});
  REQUIRE(o.descriptors.size() == 1);
  CHECK(o.descriptors[0].elemBytes == 1);
  CHECK(o.descriptors[0].innerBytes == 1024);
  CHECK(o.descriptors[0].numDims == 1);
  std::string error;
  CHECK(o.descriptors[0].validate(&error));
  // VMEM to VMEM has nothing to widen: plain words.
  CopyPlan v = planCopy(Type::ref(MemSpace::Vmem, DType::Bf16, {8, 128}),
                        Type::ref(MemSpace::Vmem, DType::Bf16, {8, 128}), {8, 128});
  CHECK(v.descriptors[0].elemBytes == 0);
  CHECK(v.descriptors[0].innerBytes == 4096);
  // Windows that are not whole lane tiles are not split into tail descriptors yet.
  CHECK_THROWS_WITH(planCopy(Type::ref(MemSpace::Hbm, DType::F32, {8, 300}),
                             Type::ref(MemSpace::Vmem, DType::F32, {8, 300}), {8, 300}),
                    Catch::Contains("must cover whole 128-lane tiles"));
}

TEST_CASE("paired block copies: s8x2 weight rows packed by the DMA") {
  using tpusim::kernels::llo::DType;
  using tpusim::kernels::llo::MemSpace;
  using tpusim::kernels::llo::Type;
  // A (600, 256) s8 block of a (1200, 256) array, S = 128: two whole chunks of
  // 256 rows (one descriptor, a chunk dimension), then 88 rows: none has a partner.
  Type hbm = Type::ref(MemSpace::Hbm, DType::S8, {1200, 256});
  Type block = Type::ref(MemSpace::Vmem, DType::S8, {600, 256});
  CopyPlan p = planBlockCopy(hbm, block, false, {600, 256}, 128);
  REQUIRE(p.descriptors.size() == 2);
  const auto& d = p.descriptors[0];
  CHECK(d.pairOffset == 128 * 256);  // rows k and k + 128
  CHECK(d.numDims == 4);
  CHECK(d.counts[1] == 128);  // rows of a chunk's low part
  CHECK(d.counts[2] == 2);    // chunks
  CHECK(d.srcStrides[2] == 256 * 256);
  CHECK(d.dstStrides[2] == 256 * 512);
  CHECK_FALSE(p.descriptors[1].paired());
  CHECK(p.descriptors[1].counts[1] == 88);
  CHECK(p.srcOffset[1] == 512 * 256);
  CHECK(p.dstOffset[1] == 512 * 512);
  CHECK(p.bytes == 600 * 256);  // every weight once, paired or not
  std::string error;
  for (const auto& x : p.descriptors) CHECK(x.validate(&error));
  // 400 rows: one chunk, then 144 rows of which the first 16 have a partner.
  CopyPlan q = planBlockCopy(hbm, block, false, {400, 256}, 128);
  REQUIRE(q.descriptors.size() == 3);
  CHECK(q.descriptors[1].paired());
  CHECK(q.descriptors[1].counts[1] == 16);
  CHECK(q.srcOffset[1] == 256 * 256);
  CHECK_FALSE(q.descriptors[2].paired());
  CHECK(q.descriptors[2].counts[1] == 112);
  CHECK(q.srcOffset[2] == 272 * 256);
  CHECK(q.bytes == 400 * 256);
  // Only inputs.
  CHECK_THROWS_WITH(planBlockCopy(hbm, block, true, {600, 256}, 128),
                    Catch::Contains("paired block copy"));
}

TEST_CASE("a strided HBM view is copied in address order") {
  using tpusim::isa::DType;
  using tpusim::kernels::llo::MemSpace;
  using tpusim::kernels::llo::Type;
  // A [seq=64, heads=16, dim=128] bf16 cache read as [heads, seq, dim]: a block
  // of 4 heads x 64 positions. Each head's row is 256 bytes, 4 KiB apart.
  Type view = Type::ref(MemSpace::Hbm, DType::Bf16, {16, 64, 128}, {128, 2048, 1});
  CopyPlan p = planCopy(view, Type::ref(MemSpace::Vmem, DType::Bf16, {4, 64, 128}), {4, 64, 128});
  REQUIRE(p.descriptors.size() == 1);
  const isa::DmaDescriptor& d = p.descriptors[0];
  CHECK(d.innerBytes == 256);
  // The heads (256 bytes apart in HBM) are walked inside the positions (4 KiB
  // apart), so consecutive requests cover consecutive bytes.
  CHECK(d.counts[0] == 4);
  CHECK(d.srcStrides[0] == 256);
  CHECK(d.dstStrides[0] == 64 * 512);  // the next head's (64, 128) VMEM matrix
  CHECK(d.counts[1] == 64);
  CHECK(d.srcStrides[1] == 4096);
  CHECK(d.dstStrides[1] == 512);
  CHECK(p.bytes == 4 * 64 * 128 * 2);
  CHECK(view.str() == "ref<hbm bf16[16,64,128] strides=[128,2048,1]>");
  CHECK(view != Type::ref(MemSpace::Hbm, DType::Bf16, {16, 64, 128}));
}

TEST_CASE("memory plan overflow lists every allocation") {
  TargetInfo t = TargetInfo::defaults();
  t.name = "small";
  t.vmemBytes = 64 * 512;
  MemoryPlan m(t);
  m.vmem("'x' blocks", {32, 128}, 2);
  m.vmem("scratch", {8, 128});
  CHECK_THROWS_WITH(
      m.check(), Catch::Contains("needs 72 rows of vmem but the target 'small' has 64") &&
                     Catch::Contains("64 rows  'x' blocks") && Catch::Contains("8 rows  scratch"));
}
