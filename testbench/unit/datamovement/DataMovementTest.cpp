// Every data-movement op, lowered to a DMA fragment, linked and run on the
// simulator (functional, --strict), equals the reference evaluator bit for bit.
#include <cstring>

#include "testbench/unit/datamovement/DmaHarness.h"

using namespace dmatest;

namespace {

std::string module(const std::string& params, const std::string& root) {
  return "HloModule m\n\nENTRY main {\n" + params + "\n  ROOT r = " + root + "\n}\n";
}

// A scalar s32 literal (dynamic-slice indices chosen by the test).
Literal s32(int32_t v) { return Literal::scalar(hlo::eval::ElemType::S32, v); }

int64_t dmaCount(const RunOutcome& r) {
  int64_t n = 0;
  for (const isa::Bundle& b : r.fragment.program.code)
    for (const isa::Instruction& i : b.slots)
      if (i.op == isa::Opcode::Dma) ++n;
  return n;
}

// The fragment's descriptor templates, from its first SMEM word.
std::vector<isa::DmaDescriptor> descriptorTemplates(const RunOutcome& r) {
  std::vector<isa::DmaDescriptor> out;
  for (const isa::DataSegment& seg : r.fragment.program.data) {
    if (seg.space != isa::MemorySpace::Smem) continue;
    std::vector<uint32_t> w(seg.bytes.size() / 4);
    std::memcpy(w.data(), seg.bytes.data(), w.size() * 4);
    for (size_t i = 0; i + isa::kDmaDescriptorWords <= w.size(); i += isa::kDmaDescriptorWords) {
      isa::DmaDescriptor d;
      std::string error;
      if (!isa::DmaDescriptor::unpack(&w[i], &d, &error)) break;
      out.push_back(d);
    }
  }
  return out;
}

// The HBM runs of the fragment's VMEM -> HBM descriptor templates (innerBytes).
std::vector<uint32_t> writeRuns(const RunOutcome& r) {
  std::vector<uint32_t> runs;
  for (const isa::DmaDescriptor& d : descriptorTemplates(r))
    if (d.src == isa::MemorySpace::Vmem && d.dst == isa::MemorySpace::Hbm)
      runs.push_back(d.innerBytes);
  return runs;
}

}  // namespace

TEST_CASE("copy, reshape and bitcast move every byte", "[dma]") {
  runOp(module("  p = f32[8,128] parameter(0)", "f32[8,128] copy(p)"));
  runOp(module("  p = bf16[3,5,7] parameter(0)", "bf16[3,5,7] copy(p)"));
  runOp(module("  p = s8[1000] parameter(0)", "s8[1000] copy(p)"));
  runOp(module("  p = f32[4,6] parameter(0)", "f32[24] reshape(p)"));
  runOp(module("  p = s32[4,6] parameter(0)", "f32[4,6] bitcast-convert(p)"));
  // One long run: a single descriptor; from 256 KiB on, staged through VMEM.
  RunOutcome one = runOp(module("  p = f32[128,256] parameter(0)", "f32[128,256] copy(p)"));
  CHECK(dmaCount(one) == 1);
  RunOutcome big = runOp(module("  p = f32[300,256] parameter(0)", "f32[300,256] copy(p)"));
  CHECK(big.fragment.program.costs.at(0).vmemBytesWritten == 300 * 256 * 4);
}

TEST_CASE("transposes move the longest contiguous runs", "[dma]") {
  // The KV-cache transpose of the decode trace: 128-element runs.
  RunOutcome kv = runOp(module("  p = bf16[1,64,8,128] parameter(0)",
                               "bf16[1,8,64,128] transpose(p), dimensions={0,2,1,3}"));
  CHECK(kv.fragment.program.costs.at(0).hbmBytesRead == 64 * 8 * 128 * 2);
  runOp(module("  p = f32[6,10,12] parameter(0)", "f32[10,6,12] transpose(p), dimensions={1,0,2}"));
  // Swaps of the innermost dimension move single elements; a big one is cut
  // into one piece per queue (short runs are limited by requests per queue).
  runOp(module("  p = f32[16,24] parameter(0)", "f32[24,16] transpose(p), dimensions={1,0}"));
  RunOutcome big = runOp(
      module("  p = f32[128,160] parameter(0)", "f32[160,128] transpose(p), dimensions={1,0}"));
  CHECK(dmaCount(big) == codegenTarget().dmaQueues);
  runOp(module("  p = bf16[4,6,10] parameter(0)", "bf16[10,4,6] transpose(p), dimensions={2,0,1}"));
  runOp(module("  p = s8[3,5,7] parameter(0)", "s8[7,5,3] transpose(p), dimensions={2,1,0}"));
  // 32-bit innermost swaps with whole 128x128 tiles: VMEM and the transpose unit.
  RunOutcome xlu = runOp(
      module("  p = f32[256,384] parameter(0)", "f32[384,256] transpose(p), dimensions={1,0}"));
  CHECK(xlu.fragment.program.costs.at(0).vmemBytesWritten == 256 * 384 * 4);
  runOp(module("  p = s32[3,128,256] parameter(0)",
               "s32[3,256,128] transpose(p), dimensions={0,2,1}"));
  runOp(module("  p = f32[2,256,128] parameter(0)",
               "f32[2,128,256] transpose(p), dimensions={0,2,1}"));
  // bf16 and int8 are widened to one element per VMEM word by the DMA.
  RunOutcome xlu16 = runOp(module("  p = bf16[2,256,384] parameter(0)",
                                  "bf16[2,384,256] transpose(p), dimensions={0,2,1}"));
  CHECK(xlu16.fragment.program.costs.at(0).vmemBytesWritten == 2 * 256 * 384 * 2);
  runOp(module("  p = s8[128,128] parameter(0)", "s8[128,128] transpose(p), dimensions={1,0}"));
  // K^T of attention, [B,S,H,D] -> [B,H,D,S]: matrices [S,D] with rows H*D apart,
  // enumerated in another order than the source's (no prefetch then).
  RunOutcome kt = runOp(module("  p = f32[2,256,3,128] parameter(0)",
                               "f32[2,3,128,256] transpose(p), dimensions={0,2,3,1}"));
  CHECK(kt.fragment.program.costs.at(0).vmemBytesWritten == 2 * 256 * 3 * 128 * 4);
  runOp(module("  p = bf16[128,2,256] parameter(0)",
               "bf16[2,256,128] transpose(p), dimensions={1,2,0}"));
  // Strips 2 and 4 tiles tall (longer result runs); three strips (no double buffering).
  runOp(module("  p = f32[512,256] parameter(0)", "f32[256,512] transpose(p), dimensions={1,0}"));
  runOp(
      module("  p = bf16[1024,128] parameter(0)", "bf16[128,1024] transpose(p), dimensions={1,0}"));
  runOp(module("  p = f32[384,128] parameter(0)", "f32[128,384] transpose(p), dimensions={1,0}"));
  // Big enough to be staged through VMEM (runs of 128 and 256 bytes): the
  // fragment reads source blocks into VMEM and writes the runs from there.
  RunOutcome staged = runOp(module("  p = bf16[512,8,64] parameter(0)",
                                   "bf16[8,512,64] transpose(p), dimensions={1,0,2}"));
  CHECK(staged.fragment.program.costs.at(0).vmemBytesWritten == 512 * 8 * 64 * 2);
  RunOutcome kv4 = runOp(module("  p = f32[1,2,300,4,64] parameter(0)",
                                "f32[1,4,2,300,64] transpose(p), dimensions={0,3,1,2,4}"));
  CHECK(kv4.fragment.program.costs.at(0).vmemBytesWritten > 0);
  // Rank 5 with every dim permuted: more axes than a descriptor walks, so a loop.
  runOp(module("  p = f32[3,4,5,6,7] parameter(0)",
               "f32[7,5,3,6,4] transpose(p), dimensions={4,2,0,3,1}"));
}

TEST_CASE("16-bit transposes with long result rows: tall strips, written by column tile", "[dma]") {
  // DmaMxuTransposeRuns.cpp: on v6e a strip of 8192 source rows, its result
  // written 256 rows of 16 KiB at a time (the HBM run model prices them below
  // the double-buffered strips' 2 KiB runs); v5e keeps those. Bit for bit,
  // also run twice (the last strip's one-row reads reset for the second run).
  const std::string m =
      module("  p = u16[8192,256] parameter(0)", "u16[256,8192] transpose(p), dimensions={1,0}");
  RunOptions o;
  o.preset = "v6e";
  CHECK(writeRuns(runOp(m, o)) == std::vector<uint32_t>{16384});
  o.repeat = 2;
  runOp(m, o);
  o = RunOptions{};
  o.preset = "v5e";
  for (uint32_t run : writeRuns(runOp(m, o))) CHECK(run < 16384);
  // Batched, bf16: 2 x [4096, 512] (a strip per matrix).
  o.preset = "v6e";
  CHECK(writeRuns(runOp(module("  p = bf16[2,4096,512] parameter(0)",
                               "bf16[2,512,4096] transpose(p), dimensions={0,2,1}"),
                        o)) == std::vector<uint32_t>{8192, 8192});
  // An odd number of column tiles per strip (one, three): one output buffer,
  // each column tile's transposes after the previous one's write.
  CHECK(writeRuns(runOp(module("  p = u16[2,8192,256] parameter(0)",
                               "u16[2,256,8192] transpose(p), dimensions={0,2,1}"),
                        o)) == std::vector<uint32_t>{16384});
  CHECK(writeRuns(runOp(module("  p = s16[3,4096,768] parameter(0)",
                               "s16[3,768,4096] transpose(p), dimensions={0,2,1}"),
                        o)) == std::vector<uint32_t>{8192});
}

TEST_CASE("16-bit transposes: strips as tall as the fragment's free VMEM", "[dma]") {
  // DmaMxuTransposeRuns.cpp: with all of v6e's VMEM free, a strip of 16384
  // source rows of 512 (40 MiB widened) and two 256-row output buffers
  // (32 MiB) fit: result runs of 32 KiB. A prefetch region in flight at the
  // top leaves half of VMEM: 8192 rows, 16 KiB runs. Bit for bit.
  const std::string m =
      module("  p = u16[65536,512] parameter(0)", "u16[512,65536] transpose(p), dimensions={1,0}");
  RunOptions o;
  o.preset = "v6e";
  CHECK(writeRuns(runOp(m, o)) == std::vector<uint32_t>{32768, 32768});
  o.inFlight.fromTop = true;
  o.inFlight.flags = 1;
  o.inFlight.rows = 131072;  // 64 MiB
  o.inFlight.streams.push_back({});
  kernels::codegen::PrefetchCopy c;
  c.flag = 0;
  c.queue = 3;
  o.inFlight.copies.push_back(c);
  CHECK(writeRuns(runOp(m, o)) == std::vector<uint32_t>{16384, 16384});
}

TEST_CASE("a fragment keeps a prefetch region in flight free", "[dma]") {
  // A region at the bottom: 2 flags (f0, f1), 64 VMEM rows, a copy on queue 0.
  // The fragment moves the same bytes with flags from f2 on, queues 1.., and
  // staging VMEM past row 64 (docs/compiler.md, "Cross-kernel prefetch").
  RunOptions o;
  o.inFlight.fromTop = false;
  o.inFlight.flags = 2;
  o.inFlight.rows = 64;
  o.inFlight.streams.push_back({});
  kernels::codegen::PrefetchCopy c;
  c.flag = 0;
  c.queue = 0;
  o.inFlight.copies.push_back(c);
  auto check = [&](const RunOutcome& r) {
    const std::string& text = r.fragment.machineText;
    for (const char* bad : {", f0,", ", f1,", ", q0", "sync.wait f0,", "sync.wait f1,"})
      CHECK(text.find(bad) == std::string::npos);
    CHECK(text.find(", f2,") != std::string::npos);
    // Every descriptor template's VMEM end lies past the region.
    int vmemEnds = 0;
    for (const isa::DmaDescriptor& d : descriptorTemplates(r)) {
      if (d.src == isa::MemorySpace::Vmem) {
        CHECK(d.srcAddr >= 64 * 512);
        ++vmemEnds;
      }
      if (d.dst == isa::MemorySpace::Vmem) {
        CHECK(d.dstAddr >= 64 * 512);
        ++vmemEnds;
      }
    }
    return vmemEnds;
  };
  // Staged through VMEM (512 KiB, the attention's transposes) and through the
  // transpose unit; both still match the evaluator.
  CHECK(check(runOp(module("  p = bf16[1,256,8,128] parameter(0)",
                           "bf16[1,8,256,128] transpose(p), dimensions={0,2,1,3}"),
                    o)) > 0);
  check(runOp(
      module("  p = f32[256,384] parameter(0)", "f32[384,256] transpose(p), dimensions={1,0}"), o));
  check(runOp(
      module("  p = f32[128,160] parameter(0)", "f32[160,128] transpose(p), dimensions={1,0}"), o));
}

TEST_CASE("slice, concatenate, reverse and broadcast", "[dma]") {
  runOp(module("  p = f32[16,32] parameter(0)", "f32[4,12] slice(p), slice={[2:14:3], [5:29:2]}"));
  runOp(module("  p = bf16[8,6,128] parameter(0)",
               "bf16[2,6,64] slice(p), slice={[3:5], [0:6], [64:128]}"));
  runOp(
      module("  a = f32[4,3] parameter(0)\n  b = f32[4,5] parameter(1)\n  c = f32[4,1] "
             "parameter(2)",
             "f32[4,9] concatenate(a, b, c), dimensions={1}"));
  runOp(module("  a = bf16[2,64] parameter(0)\n  b = bf16[3,64] parameter(1)",
               "bf16[5,64] concatenate(a, b), dimensions={0}"));
  runOp(module("  p = f32[4,6,8] parameter(0)", "f32[4,6,8] reverse(p), dimensions={0,2}"));
  runOp(module("  p = bf16[5,6,32] parameter(0)", "bf16[5,6,32] reverse(p), dimensions={1}"));
  // 100 reversed rows: more points than static descriptors, so a loop.
  runOp(module("  p = f32[100,8] parameter(0)", "f32[100,8] reverse(p), dimensions={0}"));
  runOp(module("  p = f32[16] parameter(0)", "f32[4,16,8] broadcast(p), dimensions={1}"));
  runOp(module("  p = bf16[8] parameter(0)", "bf16[8,128] broadcast(p), dimensions={0}"));
  runOp(module("  p = s32[] parameter(0)", "s32[3,5] broadcast(p), dimensions={}"));
  runOp(module("  p = f32[2,3] parameter(0)", "f32[3,4,2] broadcast(p), dimensions={2,0}"));
}

TEST_CASE("pad fills with the padding value, interior and negative padding", "[dma]") {
  runOp(module("  p = f32[4,5] parameter(0)\n  v = f32[] constant(1.5)",
               "f32[7,10] pad(p, v), padding=1_2x0_1_1"));
  runOp(module("  p = bf16[6,8] parameter(0)\n  v = bf16[] parameter(1)",
               "bf16[5,12] pad(p, v), padding=-1_0x2_2"));
  runOp(module("  p = s8[3,3] parameter(0)\n  v = s8[] constant(-3)",
               "s8[7,3] pad(p, v), padding=0_2_1x0_0"));
  // A result larger than the 512-byte fill pattern, with a tail.
  runOp(module("  p = f32[30,30] parameter(0)\n  v = f32[] constant(-2)",
               "f32[33,31] pad(p, v), padding=2_1x0_1"));
  // Edge padding only: just the padded slabs are filled, beside the operand's rows.
  runOp(module("  p = f32[3,5,7] parameter(0)\n  v = f32[] constant(4)",
               "f32[6,6,10] pad(p, v), padding=1_2x0_1x3_0"));
  runOp(module("  p = bf16[4,130] parameter(0)\n  v = bf16[] parameter(1)",
               "bf16[5,300] pad(p, v), padding=0_1x70_100"));
  runOp(module("  p = s8[2,3,9] parameter(0)\n  v = s8[] constant(7)",
               "s8[2,5,9] pad(p, v), padding=0_0x2_0x0_0"));
}

TEST_CASE("dynamic-slice clamps its run-time start indices", "[dma]") {
  std::string text =
      module("  p = f32[16,32] parameter(0)\n  i = s32[] parameter(1)\n  j = s32[] parameter(2)",
             "f32[4,8] dynamic-slice(p, i, j), dynamic_slice_sizes={4,8}");
  for (auto [i, j] : std::vector<std::pair<int, int>>{
           {0, 0}, {3, 7}, {12, 24}, {13, 30}, {-5, 2}, {100, -100}, {2147483647, 5}}) {
    INFO("start " << i << ", " << j);
    RunOptions o;
    o.args = {{1, s32(i)}, {2, s32(j)}};
    runOp(text, o);
  }
  // Constant indices are folded (out of range: clamped at compile time).
  runOp(
      module("  p = bf16[1,64,8,128] parameter(0)\n  z = s32[] constant(0)\n  t = s32[] "
             "constant(70)",
             "bf16[1,16,8,128] dynamic-slice(p, z, t, z, z), dynamic_slice_sizes={1,16,8,128}"));
  // s16 indices are sign-extended.
  RunOptions o;
  o.args = {{1, Literal::scalar(hlo::eval::ElemType::S16, -3)},
            {2, Literal::scalar(hlo::eval::ElemType::S16, 9)}};
  runOp(module("  p = s8[10,20] parameter(0)\n  i = s16[] parameter(1)\n  j = s16[] parameter(2)",
               "s8[3,5] dynamic-slice(p, i, j), dynamic_slice_sizes={3,5}"),
        o);
}

TEST_CASE("dynamic-update-slice writes the KV-cache row at the clamped position", "[dma]") {
  std::string text = module(
      "  c = bf16[1,64,8,128] parameter(0)\n  u = bf16[1,1,8,128] parameter(1)\n  z = s32[] "
      "constant(0)\n  pos = s32[] parameter(2)",
      "bf16[1,64,8,128] dynamic-update-slice(c, u, z, pos, z, z)");
  for (int pos : {0, 17, 63, 64, 1000, -4}) {
    INFO("position " << pos);
    RunOptions o;
    o.args = {{2, s32(pos)}};
    runOp(text, o);
    o.inPlace = true;  // the cache updated in its own buffer: only the row moves
    RunOutcome r = runOp(text, o);
    CHECK(r.fragment.program.costs.at(0).hbmBytesWritten == 8 * 128 * 2);
  }
  runOp(
      module("  c = f32[6,7] parameter(0)\n  u = f32[3,2] parameter(1)\n  i = s32[] "
             "parameter(2)\n  j = s32[] parameter(3)",
             "f32[6,7] dynamic-update-slice(c, u, i, j)"));
}

TEST_CASE("gather: the embedding lookup and general index vectors", "[dma]") {
  // llama_micro_prefill's embedding: f32[64,128] table, s32[1,8,1] tokens.
  std::string embed =
      module("  t = f32[64,128] parameter(0)\n  ids = s32[1,8,1] parameter(1)",
             "f32[1,8,128] gather(t, ids), offset_dims={2}, collapsed_slice_dims={0}, "
             "start_index_map={0}, index_vector_dim=2, slice_sizes={1,128}");
  RunOptions o;
  Literal ids = Literal::array(hlo::eval::ElemType::S32, {1, 8, 1});
  int32_t tokens[8] = {5, 0, 63, 64, -1, 1000, 7, 7};  // out of range: clamped
  for (int k = 0; k < 8; ++k) ids.setInt(k, tokens[k]);
  o.args = {{1, ids}};
  runOp(embed, o);
  // llama_tiny_decode's: one bf16 row of a [vocab, d_model] table.
  runOp(module("  t = bf16[512,1024] parameter(0)\n  ids = s32[1,1,1] parameter(1)",
               "bf16[1,1,1024] gather(t, ids), offset_dims={2}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=2, slice_sizes={1,1024}"));
  // 64 tokens (a loop over them, unrolled over the queues), implicit index vector.
  runOp(module("  t = f32[6,32] parameter(0)\n  ids = s32[64] parameter(1)",
               "f32[64,32] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}"));
  // Two-component start indices, a slice that is not a whole row, offset dims
  // before the batch dim.
  runOp(module("  t = f32[8,6,4] parameter(0)\n  ids = s32[2,5] parameter(1)",
               "f32[3,5,4] gather(t, ids), offset_dims={0,2}, collapsed_slice_dims={0}, "
               "start_index_map={1,0}, index_vector_dim=0, slice_sizes={1,3,4}"));
}

TEST_CASE("fragments are placed where the module puts them", "[dma]") {
  RunOptions o;
  o.codeBefore = 5;
  o.smemBefore = 100;
  o.args = {{1, s32(9)}};
  RunOutcome r = runOp(module("  p = f32[16,32] parameter(0)\n  i = s32[] parameter(1)",
                              "f32[4,32] dynamic-slice(p, i, i), dynamic_slice_sizes={4,32}"),
                       o);
  CHECK(r.fragment.firstBundle == 5);
  CHECK(r.fragment.smemBase == 100);
  CHECK(r.fragment.smemWords > 0);
  REQUIRE(r.fragment.program.debugMap.size() == 1);
  CHECK(r.fragment.program.debugMap[0].begin == 5);
  CHECK(r.fragment.program.debugMap[0].opName == "r");
  // Loops branch to absolute bundles: a gather behind other code.
  RunOptions g;
  g.codeBefore = 3;
  g.smemBefore = 7;
  runOp(module("  t = f32[6,32] parameter(0)\n  ids = s32[64] parameter(1)",
               "f32[64,32] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}"),
        g);
}

TEST_CASE("addresses across a 4 GiB boundary carry into the high word", "[dma]") {
  RunOptions o;
  o.hbmBase = (uint64_t(1) << 32) - 2048;  // operands straddle 2^32
  o.args = {{1, s32(3)}};
  runOp(module("  p = f32[16,32] parameter(0)\n  i = s32[] parameter(1)",
               "f32[4,32] dynamic-slice(p, i, i), dynamic_slice_sizes={4,32}"),
        o);
  o.args.clear();
  runOp(module("  t = f32[16,32] parameter(0)\n  ids = s32[64] parameter(1)",
               "f32[64,32] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}"),
        o);
  runOp(module("  p = f32[100,8] parameter(0)", "f32[100,8] reverse(p), dimensions={0}"), o);
}

TEST_CASE("unsupported cases are clear CannotLower errors", "[dma][refusal]") {
  // 1, 2, 4 and 8-byte elements move; sub-byte ones do not.
  CHECK_THAT(refusal(module("  p = s4[4] parameter(0)", "s4[4] copy(p)")),
             Catch::Contains("cannot lower %r (copy)") && Catch::Contains("s4"));
  CHECK_THAT(refusal(module("  p = f32[4] parameter(0)\n  i = s64[] parameter(1)",
                            "f32[2] dynamic-slice(p, i), dynamic_slice_sizes={2}")),
             Catch::Contains("s64"));
  CHECK_THAT(refusal(module("  p = f32[4] parameter(0)", "f32[4] negate(p)")),
             Catch::Contains("not a data-movement instruction"));
}

TEST_CASE("other presets: megacore v4, small tiny8", "[dma]") {
  // v4 runs every fragment on both cores (like kernels); multi-phase moves
  // (copy then update, fill then interior) still end with the right bytes.
  // tiny8 has 256 KiB of VMEM and 64 KiB of SMEM.
  for (const char* preset : {"v4", "tiny8"}) {
    INFO(preset);
    RunOptions o;
    o.preset = preset;
    runOp(module("  p = f32[300,256] parameter(0)", "f32[300,256] copy(p)"), o);
    runOp(module("  p = bf16[512,8,64] parameter(0)",
                 "bf16[8,512,64] transpose(p), dimensions={1,0,2}"),
          o);
    runOp(module("  p = f32[256,384] parameter(0)", "f32[384,256] transpose(p), dimensions={1,0}"),
          o);
    runOp(module("  p = f32[30,30] parameter(0)\n  v = f32[] constant(-2)",
                 "f32[33,31] pad(p, v), padding=2_1x0_1"),
          o);
    o.args = {{2, s32(40)}};
    runOp(module("  c = bf16[1,64,8,128] parameter(0)\n  u = bf16[1,1,8,128] parameter(1)\n  z = "
                 "s32[] constant(0)\n  pos = s32[] parameter(2)",
                 "bf16[1,64,8,128] dynamic-update-slice(c, u, z, pos, z, z)"),
          o);
    o.args.clear();
    runOp(module("  t = f32[6,32] parameter(0)\n  ids = s32[64] parameter(1)",
                 "f32[64,32] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, "
                 "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}"),
          o);
  }
}

TEST_CASE("a fragment can run again (inside a loop) with the same result", "[dma]") {
  RunOptions o;
  o.repeat = 3;
  o.args = {{1, s32(5)}};
  runOp(module("  p = f32[16,32] parameter(0)\n  i = s32[] parameter(1)",
               "f32[4,32] dynamic-slice(p, i, i), dynamic_slice_sizes={4,32}"),
        o);
  o.args.clear();
  // Six strips: a stale VMEM buffer from the previous run would show.
  runOp(module("  p = f32[768,128] parameter(0)", "f32[128,768] transpose(p), dimensions={1,0}"),
        o);
  runOp(module("  p = bf16[512,8,64] parameter(0)",
               "bf16[8,512,64] transpose(p), dimensions={1,0,2}"),
        o);
  runOp(module("  p = bf16[6,8] parameter(0)\n  v = bf16[] parameter(1)",
               "bf16[5,12] pad(p, v), padding=-1_0x2_2"),
        o);
  runOp(module("  t = f32[6,32] parameter(0)\n  ids = s32[64] parameter(1)",
               "f32[64,32] gather(t, ids), offset_dims={1}, collapsed_slice_dims={0}, "
               "start_index_map={0}, index_vector_dim=1, slice_sizes={1,32}"),
        o);
}

TEST_CASE("other element types and empty arrays", "[dma]") {
  runOp(module("  p = pred[16,8] parameter(0)", "pred[8,16] transpose(p), dimensions={1,0}"));
  runOp(module("  p = u16[6,10] parameter(0)", "u16[3,10] slice(p), slice={[1:6:2], [0:10]}"));
  runOp(module("  a = u8[2,3] parameter(0)\n  b = u8[2,0] parameter(1)",
               "u8[2,3] concatenate(a, b), dimensions={1}"));
  runOp(module("  p = s16[4,0] parameter(0)", "s16[0,4] transpose(p), dimensions={1,0}"));
  runOp(module("  p = f32[5] parameter(0)", "f32[0] slice(p), slice={[2:2]}"));
}
