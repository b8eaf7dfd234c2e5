// Strip transposes through the MXU's packed int8 mode (DmaMxuTranspose.h).
#include "compiler/lower/dma/DmaMxuTranspose.h"

#include <algorithm>

namespace tpusim::lower {

using isa::Opcode;
using kernels::codegen::MOperand;

namespace {
constexpr int64_t kLanes = 128;
// overRows blocks: four row tiles per MXU spread a block's fill (the first
// weights) and drain (the last pops) over more tiles (docs/performance.md,
// "trainxt": 2 377,694 cycles, 4 357,536, 8 361,460 for 64 M elements on v6e).
constexpr int64_t kOverRowsDepth = 4;
MOperand I(int64_t v) { return MOperand::imm(v); }

// Tiles of one strip block: one per MXU, as many MXUs as divide the columns.
int64_t tilesPerBlock(const kernels::codegen::TargetInfo& t, int64_t colTiles) {
  for (int64_t k : {4, 2, 1})
    if (k <= t.mxuCount && colTiles % k == 0) return k;
  return 1;
}
// Row tiles per block: two when there are (overRows: kOverRowsDepth), so that
// the second's weights load while the first streams, and its stream follows
// the first's pops slot by slot.
int64_t rowTilesPerBlock(int64_t n, const MxuTransposeStrip& s) {
  if (s.overRows) return s.depth > 0 ? s.depth : kOverRowsDepth;
  return (s.rows / n) % 2 == 0 ? 2 : 1;
}
// overRows: MXUs per block, each taking `depth` row tiles of the one column tile.
int64_t mxusOverRows(const kernels::codegen::TargetInfo& t, int64_t blocks) {
  for (int64_t k : {4, 2, 1})
    if (k <= t.mxuCount && blocks % k == 0) return k;
  return 1;
}
}  // namespace

bool mxuTransposeFits(const kernels::codegen::TargetInfo& t, int64_t elemBytes,
                      const MxuTransposeStrip& s) {
  const int64_t n = t.mxuSize, groups = n / 8, halves = n / kLanes;
  if (elemBytes != 2 || t.int8Rate != 2 || n % kLanes != 0 || n > 2 * kLanes) return false;
  if (s.rows % n != 0 || s.cols % n != 0 || t.accSlots < 2 * groups) return false;
  // The loads' and stores' offsets from the block's base are 16-bit immediates.
  const int64_t depth = rowTilesPerBlock(n, s);
  if (s.overRows) {
    const int64_t k = mxusOverRows(t, s.rows / n / depth);
    // (each row tile's loads from a base of its own)
    return s.cols == n && ((k - 1) * n + 8 * (groups - 1)) * s.pitch + halves <= INT16_MAX &&
           8 * (groups - 1) * s.opitch + depth * k * halves <= INT16_MAX;
  }
  int64_t k = tilesPerBlock(t, s.cols / n);
  return ((depth - 1) * n + 8 * (groups - 1)) * s.pitch + k * halves <= INT16_MAX &&
         ((k - 1) * n + 8 * (groups - 1)) * s.opitch + depth * halves <= INT16_MAX;
}

int64_t mxuTransposeBlockRows(const kernels::codegen::TargetInfo& t) {
  return kOverRowsDepth * mxusOverRows(t, 4) * t.mxuSize;
}

int64_t mxuTransposeDepthFor(const kernels::codegen::TargetInfo& t, int64_t rows) {
  return rows / (mxusOverRows(t, 4) * t.mxuSize);
}

int64_t mxuTransposeTableRows(const kernels::codegen::TargetInfo& t) {
  // Two passes x N / 8 groups of 8 LHS rows, each N / 128 vregs of 8 VMEM rows.
  return 2 * (t.mxuSize / 8) * (t.mxuSize / kLanes) * 8;
}

void mxuTransposeTable(DmaFragment& f, int64_t tableRow) {
  const auto& t = f.target();
  const int64_t groups = t.mxuSize / 8, halves = t.mxuSize / kLanes;
  auto vimm = [&](int64_t v) {
    MOperand r = f.newVector();
    f.emit(Opcode::VImm, {r, I(v)});
    return r;
  };
  MOperand lane = f.newVector(), sub = f.newVector();
  f.emit(Opcode::VIotaLane, {lane});
  f.emit(Opcode::VIotaSub, {sub});
  MOperand zero = vimm(0), one = vimm(1), eight = vimm(8);
  auto op2 = [&](Opcode o, MOperand a, MOperand b) {
    MOperand r = f.newVector();
    f.emit(o, {r, a, b});
    return r;
  };
  // diag[x][i][s][l] = (l == 8i + s) in the low (x = 0) or high (x = 1) byte.
  std::vector<MOperand> diag[2];
  for (int64_t i = 0; i < std::min<int64_t>(groups, kLanes / 8); ++i) {
    MOperand d = op2(Opcode::VSubS32, op2(Opcode::VSubS32, lane, sub), vimm(8 * i));
    MOperand abs = f.newVector();
    f.emit(Opcode::VAbsS32, {abs, d});
    MOperand lo = op2(Opcode::VSubS32, one, op2(Opcode::VMinS32, abs, one));
    diag[0].push_back(lo);
    diag[1].push_back(op2(Opcode::VShl, lo, eight));
  }
  MOperand base = f.constant(tableRow);
  for (int64_t x = 0; x < 2; ++x)
    for (int64_t j = 0; j < groups; ++j)
      for (int64_t h = 0; h < halves; ++h) {
        // Group j's diagonal lies in lane half j / 16; the other half is zero.
        MOperand v = h == j / 16 ? diag[x][size_t(j % 16)] : zero;
        f.emit(Opcode::VSt, {v, base, I(((x * groups + j) * halves + h) * 8), I(1), I(255)});
      }
}

void mxuTransposeStrip(DmaFragment& f, const MxuTransposeStrip& s, int64_t aRow, int64_t oRow,
                       int64_t tableRow) {
  mxuTransposeStrip(f, s, f.constant(aRow), f.constant(oRow), tableRow);
}

void mxuTransposeStrip(DmaFragment& f, const MxuTransposeStrip& s, MOperand aRow, MOperand oRow,
                       int64_t tableRow) {
  const auto& t = f.target();
  const int64_t n = t.mxuSize, groups = n / 8, halves = n / kLanes;
  const int64_t depth = rowTilesPerBlock(n, s);
  const int64_t k = s.overRows ? mxusOverRows(t, s.rows / n / depth) : tilesPerBlock(t, s.cols / n);
  // VMEM row offsets from the block's bases of tile (row tile r, MXU u)'s source and result.
  auto srcOff = [&](int64_t r, int64_t u) {
    return s.overRows ? u * n * s.pitch : r * n * s.pitch + u * halves;
  };
  auto dstOff = [&](int64_t r, int64_t u) {
    return s.overRows ? (r * k + u) * halves : u * n * s.opitch + r * halves;
  };
  MOperand table = f.constant(tableRow);
  auto load = [&](MOperand base, int64_t imm, int64_t stride) {
    MOperand v = f.newVector();
    f.emit(Opcode::VLd, {v, base, I(imm), I(stride), I(255)});
    return v;
  };
  // A row of the MXU: one vreg, or a pair (lanes 0-127, 128-255).
  auto row = [&](MOperand base, int64_t imm, int64_t halfStep, int64_t stride) {
    MOperand lo = load(base, imm, stride);
    MOperand hi = halves == 2 ? load(base, imm + halfStep, stride) : MOperand();
    return std::pair{lo, hi};
  };
  std::vector<DmaFragment::LoopAxis> axes{
      {s.rows / n / depth, {depth * n * s.pitch, depth * halves}},
      {s.cols / n / k, {k * halves, k * n * s.opitch}}};
  if (s.overRows)
    axes = {{s.rows / n / (depth * k), {depth * k * n * s.pitch, depth * k * halves}}};
  f.loopNest(axes, {aRow, oRow}, 1, [&](const std::vector<MOperand>& cur, int) {
    // Tile u of row tile r (source rows r * N ..., columns u * N ...) goes
    // to MXU u. The MXUs' ops are emitted interleaved (they share the one
    // push slot of a bundle), so the list scheduler runs them side by side.
    auto push = [&](int64_t r) {
      // overRows: row tiles r * k ... from a base of their own (short offsets).
      MOperand base = s.overRows && r > 0 ? f.addImm(cur[0], r * k * n * s.pitch) : cur[0];
      for (int64_t p = 0; p < groups; ++p)
        for (int64_t u = 0; u < k; ++u) {
          auto [lo, hi] = row(base, srcOff(r, u) + 8 * p * s.pitch, 1, s.pitch);
          f.emitPaired(Opcode::MxuWPushTS8x2, {I(u), lo}, 1, hi);
        }
      for (int64_t u = 0; u < k; ++u) f.emit(Opcode::MxuLatch, {I(u)});
    };
    // Group j's lo pass into slot j, its hi pass into slot G + j.
    auto stream = [&](int64_t j) {
      for (int64_t x = 0; x < 2; ++x) {
        auto [lo, hi] = row(table, (x * groups + j) * halves * 8, 8, 1);
        for (int64_t u = 0; u < k; ++u)
          f.emitPaired(Opcode::MxuMmS8x2, {I(u), lo, I(x * groups + j)}, 1, hi);
      }
    };
    auto drain = [&](int64_t r, int64_t j) {
      for (int64_t u = 0; u < k; ++u) {
        MOperand b[2][2];
        for (int64_t x = 0; x < 2; ++x) {
          b[x][0] = f.newVector();
          b[x][1] = halves == 2 ? f.newVector() : MOperand();
          f.emitPaired(Opcode::MxuPop, {b[x][0], I(u), I(x * groups + j)}, 0, b[x][1]);
        }
        for (int64_t h = 0; h < halves; ++h) {
          MOperand v = f.newVector();
          f.emit(Opcode::VPackB8, {v, b[0][h], b[1][h]});
          f.emit(Opcode::VSt,
                 {v, cur[1], I(dstOff(r, u) + 8 * j * s.opitch + h), I(s.opitch), I(255)});
        }
      }
    };
    push(0);
    for (int64_t j = 0; j < groups; ++j) stream(j);
    for (int64_t r = 1; r < depth; ++r) {
      push(r);
      for (int64_t j = 0; j < groups; ++j) {
        drain(r - 1, j);
        stream(j);
      }
    }
    for (int64_t j = 0; j < groups; ++j) drain(depth - 1, j);
  });
}

}  // namespace tpusim::lower
