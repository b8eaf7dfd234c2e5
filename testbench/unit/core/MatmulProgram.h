// Generates a tiled matmul C[M][N] = A[M][K] @ B[K][N] in assembly: A and B
// (bf16 or int8) are DMA'd from HBM into VMEM with one element per 32-bit
// lane (strided DMA with 2- or 1-byte elements), each (K-tile, N-tile) of B is
// pushed into MXU (n-tile mod mxu.count), LHS blocks of 8 rows stream
// through it (mm for the first K-tile, mma after), results are popped,
// stored and DMA'd back as f32 / s32. Straight-line code: the scoreboard
// and port rules do the scheduling, which is what the tests exercise.
#pragma once

#include <fmt/format.h>

#include <string>

namespace tpusim::testing {

struct MatmulShape {
  int m = 16, k = 256, n = 256;
  bool int8 = false;
  int mxus = 2;  // MXUs used (<= the chip's)
};

inline std::string matmulProgram(const MatmulShape& s) {
  const int T = 128;  // tile = MXU size (the chip must have 128-wide MXUs)
  const int kt = s.k / T, nt = s.n / T;
  const int elem = s.int8 ? 1 : 2;
  const char* dt = s.int8 ? "s8" : "bf16";
  const uint64_t aAddr = 0, bAddr = 0x100000, cAddr = 0x400000;
  // VMEM rows: A at row 0 (row kt*M + m), B after it (row nt*K + k), C after that.
  const int aRow = 0, bRow = kt * s.m, cRow = bRow + nt * s.k;
  std::string p;
  p += fmt::format(".buffer a, shape=[{},{}], dtype={}, space=hbm, addr={:#x}, role=input\n", s.m,
                   s.k, dt, aAddr);
  p += fmt::format(".buffer b, shape=[{},{}], dtype={}, space=hbm, addr={:#x}, role=input\n", s.k,
                   s.n, dt, bAddr);
  p += fmt::format(".buffer c, shape=[{},{}], dtype={}, space=hbm, addr={:#x}, role=output\n", s.m,
                   s.n, s.int8 ? "s32" : "f32", cAddr);
  // A: element (m, t*128 + l) -> VMEM row aRow + t*M + m, lane l.
  p += fmt::format(
      ".dma_descriptor 0, src=hbm:{:#x}, dst=vmem:{:#x}, inner={}, counts=[{},{},{}], "
      "src_strides=[{},{},{}], dst_strides=[4,512,{}]\n",
      aAddr, aRow * 512, elem, T, s.m, kt, elem, s.k * elem, T * elem, s.m * 512);
  // B: element (k, t*128 + l) -> VMEM row bRow + t*K + k, lane l.
  p += fmt::format(
      ".dma_descriptor 16, src=hbm:{:#x}, dst=vmem:{:#x}, inner={}, counts=[{},{},{}], "
      "src_strides=[{},{},{}], dst_strides=[4,512,{}]\n",
      bAddr, bRow * 512, elem, T, s.k, nt, elem, s.n * elem, T * elem, s.k * 512);
  // C: VMEM row cRow + t*M + m -> element (m, t*128 .. t*128+127).
  p += fmt::format(
      ".dma_descriptor 32, src=vmem:{:#x}, dst=hbm:{:#x}, inner=512, counts=[{},{}], "
      "src_strides=[512,{}], dst_strides=[{},512]\n",
      cRow * 512, cAddr, s.m, nt, s.m * 512, s.n * 4);
  p += ".op load_inputs\n";
  p += "  sli s1, 0 ;; sli s2, 16\n  sli s3, 32\n";
  p += "  dma s1, f0, q0\n  dma s2, f1, q1\n  sync.wait f0, 1\n  sync.wait f1, 1\n.endop\n";
  p += ".op matmul\n";
  for (int n = 0; n < nt; ++n) {
    int mxu = n % s.mxus;
    for (int k = 0; k < kt; ++k) {
      for (int push = 0; push < T / 8; ++push)
        p += fmt::format("  vld v{}, s0, {}, 1, 255\n  mxu.wpush.{} mxu{}, v{}\n", 1 + push % 8,
                         bRow + n * s.k + k * T + push * 8, dt, mxu, 1 + push % 8);
      p += fmt::format("  mxu.latch mxu{}\n", mxu);
      for (int mb = 0; mb < s.m / 8; ++mb)
        p += fmt::format("  vld v{}, s0, {}, 1, 255\n  mxu.{}.{} mxu{}, v{}, a{}\n", 10 + mb % 8,
                         aRow + k * s.m + mb * 8, k == 0 ? "mm" : "mma", dt, mxu, 10 + mb % 8,
                         (n / s.mxus) * (s.m / 8) + mb);
    }
  }
  for (int n = 0; n < nt; ++n)
    for (int mb = 0; mb < s.m / 8; ++mb)
      p += fmt::format("  mxu.pop v20, mxu{}, a{}\n  vst v20, s0, {}, 1, 255\n", n % s.mxus,
                       (n / s.mxus) * (s.m / 8) + mb, cRow + n * s.m + mb * 8);
  p += ".endop\n.op store_output\n  dma s3, f2, q0\n  sync.wait f2, 1\n  halt\n.endop\n";
  return p;
}

}  // namespace tpusim::testing
