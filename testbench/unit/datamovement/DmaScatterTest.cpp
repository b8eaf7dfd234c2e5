// The scatter fragment (compiler/lower/dma/DmaScatter.cpp) beside a kernel's
// prefetch region in flight (CompileOptions::inFlight): its table, scratch
// slab and update buffers stay out of the region's VMEM rows (the harness
// fills them with a pattern and checks it after the run), and its chunks shrink to the VMEM
// left, or it says that the table does not fit.
#include "testbench/unit/datamovement/DmaHarness.h"

using namespace dmatest;

namespace {

// scatter-add of `points` slabs of `cols` f32 into an [8, cols] table; the
// indices are a constant cycling through 0 .. 10 (8, 9, 10: out of bounds).
std::string scatterModule(int64_t points, int64_t cols) {
  std::string idx;
  for (int64_t i = 0; i < points; ++i)
    idx += fmt::format("{}{{{}}}", i ? "," : "", (i * 7 + i / 11) % 11);
  return fmt::format(
      "HloModule m\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}}\n\nENTRY main {{\n  t = f32[8,{1}] parameter(0)\n"
      "  i = s32[{0},1] constant({{{2}}})\n  u = f32[{0},{1}] parameter(1)\n"
      "  ROOT r = f32[8,{1}] scatter(t, i, u), update_window_dims={{1}}, "
      "inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, "
      "to_apply=add\n}}\n",
      points, cols, idx);
}

kernels::codegen::PrefetchPlan region(bool fromTop, int64_t rows) {
  kernels::codegen::PrefetchPlan p;
  p.fromTop = fromTop;
  p.flags = 1;
  p.rows = rows;
  p.streams.push_back({});
  kernels::codegen::PrefetchCopy c;
  c.flag = fromTop ? 15 : 0;
  c.queue = 0;
  p.copies.push_back(c);
  return p;
}

}  // namespace

TEST_CASE("a scatter keeps a prefetch region in flight free", "[dma]") {
  // Bottom: 64 rows; 40000 rows (past the vld/vst row immediate: the base is
  // added to each slab's row register); top: 64 rows. 12288 slabs of 512 B:
  // two 3 MiB chunks, double-buffered; 6 slabs of 1 KiB: one chunk.
  RunOptions o;
  for (auto [fromTop, rows] : {std::pair<bool, int64_t>{false, 64}, {false, 40000}, {true, 64}}) {
    INFO("region of " << rows << " rows at the " << (fromTop ? "top" : "bottom"));
    o.inFlight = region(fromTop, rows);
    runOp(scatterModule(12288, 128), o);
    runOp(scatterModule(6, 256), o);
  }
}

TEST_CASE("a scatter's chunks shrink to the VMEM beside a region in flight", "[dma]") {
  // tiny8 (256 KiB of VMEM, 512 rows): a 32 KiB table past a 128-row region
  // leaves room for two chunks of 32 slabs of 4 KiB, not one of 256 KiB.
  RunOptions o;
  o.preset = "tiny8";
  o.inFlight = region(false, 128);
  runOp(scatterModule(64, 1024), o);
}

TEST_CASE("a scatter table that does not fit beside a region in flight", "[dma][refusal]") {
  RunOptions o;
  o.preset = "tiny8";
  o.inFlight = region(false, 460);  // 52 rows left: the 64-row table does not fit
  CHECK_THROWS_WITH(runOp(scatterModule(8, 1024), o),
                    Catch::Contains("do not fit the VMEM free to it") &&
                        Catch::Contains("beside a prefetch in flight"));
}
