// How close data movement comes to the HBM peak (timing-only runs on v5e):
// bytes read + written per cycle over the preset's peak. The floors below
// guard the lowering's choice of runs; the measured numbers are printed.
#include "testbench/unit/datamovement/DmaHarness.h"

using namespace dmatest;

namespace {
Timing measure(const std::string& name, const std::string& params, const std::string& root) {
  Timing t = timeOp("HloModule m\n\nENTRY main {\n" + params + "\n  ROOT r = " + root + "\n}\n");
  fmt::print(
      "{:<52} {:>8} cycles {:>9} B moved {:>5} descriptors {:>3} bundles "
      "{:5.1f}% of HBM peak (HBM traffic {} B)\n",
      name, t.cycles, t.bytesWritten, t.descriptors, t.bundles, 100 * t.efficiency(),
      t.hbmRead + t.hbmWritten);
  return t;
}
}  // namespace

TEST_CASE("data movement runs near the HBM peak", "[dma][efficiency]") {
  // 256-byte runs: staged through VMEM in 4 MiB blocks.
  Timing tr = measure("transpose bf16[2048,32,128] -> [32,2048,128]",
                      "  p = bf16[2048,32,128] parameter(0)",
                      "bf16[32,2048,128] transpose(p), dimensions={1,0,2}");
  CHECK(tr.bytesRead == 2048 * 32 * 128 * 2);
  CHECK(tr.efficiency() > 0.75);  // staged through VMEM; direct: 25%
  measure("transpose f32[2048,32,128] -> [32,2048,128] (512 B runs)",
          "  p = f32[2048,32,128] parameter(0)",
          "f32[32,2048,128] transpose(p), dimensions={1,0,2}");
  measure("transpose f32[1024,16,512] -> [16,1024,512] (2 KiB runs)",
          "  p = f32[1024,16,512] parameter(0)",
          "f32[16,1024,512] transpose(p), dimensions={1,0,2}");
  measure("transpose bf16[8192,64,16] -> [64,8192,16] (32 B runs)",
          "  p = bf16[8192,64,16] parameter(0)",
          "bf16[64,8192,16] transpose(p), dimensions={1,0,2}");
  measure("transpose f32[512,8,4096] -> [8,512,4096] (16 KiB runs)",
          "  p = f32[512,8,4096] parameter(0)", "f32[8,512,4096] transpose(p), dimensions={1,0,2}");
  Timing cp =
      measure("copy f32[4096,1024]", "  p = f32[4096,1024] parameter(0)", "f32[4096,1024] copy(p)");
  CHECK(cp.efficiency() > 0.85);
  Timing kv = measure("transpose bf16[1,256,8,128] -> [1,8,256,128] (KV)",
                      "  p = bf16[1,256,8,128] parameter(0)",
                      "bf16[1,8,256,128] transpose(p), dimensions={0,2,1,3}");
  CHECK(kv.efficiency() > 0.75);
  Timing x32 =
      measure("transpose f32[2048,2048]^T (transpose unit)", "  p = f32[2048,2048] parameter(0)",
              "f32[2048,2048] transpose(p), dimensions={1,0}");
  CHECK(x32.efficiency() > 0.5);  // element DMAs: 1.4%
  measure("transpose bf16[2048,2048]^T (transpose unit)", "  p = bf16[2048,2048] parameter(0)",
          "bf16[2048,2048] transpose(p), dimensions={1,0}");
  measure("K^T bf16[1,2048,32,128] -> [1,32,128,2048] (transpose unit)",
          "  p = bf16[1,2048,32,128] parameter(0)",
          "bf16[1,32,128,2048] transpose(p), dimensions={0,2,3,1}");
  measure("transpose f32[512,512] ^T (transpose unit)", "  p = f32[512,512] parameter(0)",
          "f32[512,512] transpose(p), dimensions={1,0}");
  measure("transpose bf16[512,512] ^T (transpose unit)", "  p = bf16[512,512] parameter(0)",
          "bf16[512,512] transpose(p), dimensions={1,0}");
  measure("gather 2048 rows of bf16[32000,4096] (embedding)",
          "  t = bf16[32000,4096] parameter(0)\n  ids = s32[1,2048,1] parameter(1)",
          "bf16[1,2048,4096] gather(t, ids), offset_dims={2}, collapsed_slice_dims={0}, "
          "start_index_map={0}, index_vector_dim=2, slice_sizes={1,4096}");
  measure("dynamic-update-slice bf16[1,2048,32,128] row (in a copy)",
          "  c = bf16[1,2048,32,128] parameter(0)\n  u = bf16[1,1,32,128] parameter(1)\n  z = "
          "s32[] constant(0)\n  pos = s32[] parameter(2)",
          "bf16[1,2048,32,128] dynamic-update-slice(c, u, z, pos, z, z)");
  measure("pad f32[1000,1000] by 12 on each side",
          "  p = f32[1000,1000] parameter(0)\n  v = f32[] "
          "constant(0)",
          "f32[1024,1024] pad(p, v), padding=12_12x12_12");
  measure("broadcast bf16[4096] -> [512,4096]", "  p = bf16[4096] parameter(0)",
          "bf16[512,4096] broadcast(p), dimensions={1}");
  measure("broadcast f32[512] -> [512,128] (elements)", "  p = f32[512] parameter(0)",
          "f32[512,128] broadcast(p), dimensions={0}");
}
