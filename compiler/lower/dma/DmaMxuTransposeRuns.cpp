// A 16-bit transpose whose result rows are long (the weight gradients' x^T:
// [65536, 1024] -> [1024, 65536] bf16, result rows of 128 KiB) written in long
// runs. The strip transpose of DmaXluTranspose.cpp double-buffers strips of
// 1024 source rows, so each result row gets a 2 KiB run: one to two bursts
// per DRAM row opened, about half the HBM peak for the writes (tFAW and the
// row cycle bound the activations). Here a strip is as tall as VMEM allows
// with one buffer (8192 rows: 16 KiB runs, four bursts per row opened), and
// its result is written one column tile at a time (N result rows, through
// two output buffers) while the next tile is transposed on all MXUs (each
// MXU takes other row tiles of the column tile: MxuTransposeStrip::overRows).
// The strip is read in chunks of one MXU block's rows: the first column
// tile's blocks start as their chunk lands, and the last column tile's free
// their chunk for the next strip's read (the HBM still writes the last tiles).
#include <algorithm>

#include "compiler/lower/dma/DmaLowering.h"
#include "compiler/lower/dma/DmaMxuTranspose.h"
#include "compiler/lower/dma/DmaMxuTransposeRuns.h"
#include "kernels/tiling/HbmRuns.h"

namespace tpusim::lower {

using isa::Opcode;

namespace {
constexpr int64_t kLanes = 128;

struct Plan {
  int64_t tall = 0;  // source rows per strip
  int64_t inRows = 0, outRows = 0, opitch = 0;
};

// The tallest strip (a divisor of the rows, a multiple of an MXU block's rows) whose
// buffers fit; none when no such strip is taller than the double-buffered one.
// `vmemBytes`: the fragment's free VMEM (all of it unless a kernel's prefetch
// is in flight across the fragment): on v6e 16384 rows (32 KiB runs) fit.
Plan choose(const kernels::codegen::TargetInfo& t, const TransposeGeometry& g, int64_t vmemBytes) {
  const int64_t n = t.mxuSize, unit = mxuTransposeBlockRows(t);
  const int64_t budget = vmemBytes / isa::kVmemRowBytes - mxuTransposeTableRows(t);
  Plan best;
  for (int64_t tall = unit; tall <= g.rows; tall += unit) {
    if (g.rows % tall != 0 || tall <= g.doubleBufferedTall) continue;
    Plan p{tall, tall * g.pitch, 0, (tall / kLanes) | 1};
    p.outRows = n * p.opitch;
    MxuTransposeStrip s{unit, n, g.pitch, p.opitch, true};
    if (p.inRows + 2 * p.outRows <= budget && mxuTransposeFits(t, 2, s)) best = p;
  }
  return best;
}

// HBM time of the reads and writes (the HBM run model, kernels/tiling/HbmRuns.h),
// in bytes at the peak: the tiler's pricing of a block's runs.
double hbmCost(const kernels::codegen::TargetInfo& t, const TransposeGeometry& g, int64_t tall) {
  const kernels::tiling::HbmRunModel model(t.hbm, t.dma);
  const int64_t bytes = g.batch * g.rows * g.cols * 2;
  double read = model.efficiency(g.cols * 2, g.rowStrideBytes, tall);
  double write = model.efficiency(tall * 2, g.rows * 2, g.cols);
  return double(bytes) / read + double(bytes) / write;
}
}  // namespace

int64_t mxuTransposeLongRunsVmem(const kernels::codegen::TargetInfo& t, const TransposeGeometry& g,
                                 int64_t vmemBytes) {
  if (!g.inOrder || g.cols % t.mxuSize != 0) return 0;
  const Plan p = choose(t, g, vmemBytes);
  if (p.tall == 0 || hbmCost(t, g, p.tall) >= hbmCost(t, g, g.doubleBufferedTall)) return 0;
  return (p.inRows + 2 * p.outRows + mxuTransposeTableRows(t)) * isa::kVmemRowBytes;
}

bool tryMxuTransposeLongRuns(DmaOp& op, const TransposeGeometry& g) {
  DmaFragment& f = op.frag;
  const auto& t = f.target();
  const int64_t n = t.mxuSize, halves = n / kLanes, e = 2;
  if (op.elemBytes() != 2 || !g.inOrder || g.cols % n != 0 || f.queues() < 2) return false;
  const Plan p = choose(t, g, f.vmemEnd() - f.vmemBase());
  if (p.tall == 0) return false;
  // Only when the HBM run model prices the long runs below the double-buffered strips'.
  if (hbmCost(t, g, p.tall) >= hbmCost(t, g, g.doubleBufferedTall)) return false;

  const int64_t row0 = f.vmemBase() / isa::kVmemRowBytes;
  const int64_t outRow0[2] = {row0 + p.inRows, row0 + p.inRows + p.outRows};
  const int64_t tableRow = row0 + p.inRows + 2 * p.outRows;
  const uint64_t src = op.operandAddresses[0], dst = op.resultAddress;
  // The strip's reads: chunks of the rows of a block of two row tiles per
  // MXU, which the first and last column tiles take (so that the next strip's
  // first chunk is read early); the others take blocks of four.
  const int64_t block = mxuTransposeBlockRows(t), chunk = block / 2, chunks = p.tall / chunk;
  const int64_t strips = g.batch * (g.rows / p.tall), total = g.total;

  isa::DmaDescriptor in;
  in.src = isa::MemorySpace::Hbm;
  in.dst = isa::MemorySpace::Vmem;
  in.innerBytes = uint32_t(g.cols * e);
  in.elemBytes = uint8_t(e);
  in.numDims = 2;
  in.counts[0] = uint32_t(chunk);
  in.srcStrides[0] = uint32_t(g.rowStrideBytes);
  in.dstStrides[0] = uint32_t(g.pitch * isa::kVmemRowBytes);
  const int64_t wordIn = f.addDescriptor(in);
  // A column tile's result: N result rows of `tall` elements. The column
  // tiles alternate between the two output buffers across strips only when
  // a strip has an even number of them; otherwise one buffer serves all.
  const int64_t colTiles = g.cols / n;
  const int buffers = colTiles % 2 == 0 ? 2 : 1;
  int64_t wordOut[2];
  for (int b = 0; b < buffers; ++b) {
    isa::DmaDescriptor out;
    out.src = isa::MemorySpace::Vmem;
    out.dst = isa::MemorySpace::Hbm;
    out.srcAddr = uint64_t(outRow0[b]) * isa::kVmemRowBytes;
    out.innerBytes = uint32_t(p.tall * e);
    out.elemBytes = uint8_t(e);
    out.numDims = 2;
    out.counts[0] = uint32_t(n);
    out.srcStrides[0] = uint32_t(p.opitch * isa::kVmemRowBytes);
    out.dstStrides[0] = uint32_t(g.rows * e);
    wordOut[b] = f.addDescriptor(out);
  }
  // Each output buffer waits for its previous write (stand-ins before the first).
  f.dmaStandIns(src, buffers, 1);
  mxuTransposeTable(f, tableRow);
  const uint64_t vmem0 = uint64_t(row0) * isa::kVmemRowBytes;
  const int64_t chunkVmem = chunk * g.pitch * isa::kVmemRowBytes, inBytes = p.inRows * 512;
  // The first strip's chunks (the count word may hold a one-row read of an
  // earlier run: a fragment runs again inside a while loop).
  f.storeDescriptorWord(wordIn, 6, f.constant(chunk));
  for (int64_t c = 0; c < chunks; ++c)
    f.dmaAt(wordIn, RuntimeAddress{src, true, f.constant(c * chunk * g.rowStrideBytes), total},
            RuntimeAddress{vmem0, true, f.constant(c * chunkVmem), inBytes}, 0);

  const MxuTransposeStrip edge{chunk, n, g.pitch, p.opitch, true, 2};
  // The middle column tiles in one block of the whole strip (each MXU takes
  // tall / block x 4 row tiles): a block's first weights and last pops do not
  // overlap the next block's (a loop iteration each), so fewer, longer blocks
  // keep the MXUs streaming (4 row tiles per MXU, a 4096-row block: 340,535
  // cycles; 8: 329,280; the whole 16384-row strip, 16: 322,010 on v6e for the
  // weight gradients' x^T).
  MxuTransposeStrip middle{p.tall, n, g.pitch, p.opitch, true, mxuTransposeDepthFor(t, p.tall)};
  if (!mxuTransposeFits(t, 2, middle))
    middle = MxuTransposeStrip{block, n, g.pitch, p.opitch, true};
  std::vector<DmaFragment::LoopAxis> axes = g.batchAxes;
  const int64_t stripBytes = p.tall * g.rowStrideBytes;
  axes.push_back({g.rows / p.tall, {stripBytes, p.tall * e}});
  f.loopNest(axes, {f.constant(0), f.constant(0)}, 1, [&](const std::vector<MOperand>& cur, int) {
    // The next strip (strips are in order in the source: g.inOrder), this
    // one again after the last, read as one row each: reads stay in bounds
    // and the queue's count even.
    MOperand after = f.addImm(cur[0], stripBytes);
    MOperand inside = f.binary(Opcode::SCmpLtu, after, f.constant(strips * stripBytes));
    MOperand next = f.select(inside, after, cur[0]);
    for (int64_t u = 0; u < colTiles; ++u) {
      const int b = int(u % buffers);
      f.waitOldest(1);  // this buffer's previous column tile is written
      if (u + 1 == colTiles)
        f.storeDescriptorWord(wordIn, 6, f.select(inside, f.constant(chunk), f.constant(1)));
      const bool atEdge = u == 0 || u + 1 == colTiles;
      const int64_t rows = atEdge ? chunk : middle.rows;
      std::vector<DmaFragment::LoopAxis> chunkAxes{
          {p.tall / rows,
           {rows * g.pitch, rows / kLanes, rows * g.rowStrideBytes, rows / chunk * chunkVmem}}};
      f.loopNest(
          chunkAxes,
          {f.constant(row0 + u * halves), f.constant(outRow0[b]), f.copy(next), f.constant(0)}, 1,
          [&](const std::vector<MOperand>& at, int) {
            if (u == 0) f.waitOldest(0);  // the chunk is in VMEM
            mxuTransposeStrip(f, atEdge ? edge : middle, at[0], at[1], tableRow);
            if (u + 1 == colTiles)
              f.dmaAt(wordIn, RuntimeAddress{src, true, at[2], total},
                      RuntimeAddress{vmem0, true, at[3], inBytes}, 0);
          });
      MOperand to = f.addImm(cur[1], u * n * g.rows * e);
      f.dmaAt(wordOut[b], RuntimeAddress{}, RuntimeAddress{dst, true, to, total}, 1);
    }
  });
  op.info.countStagedThroughVmem(uint64_t(total));
  return true;
}

}  // namespace tpusim::lower
