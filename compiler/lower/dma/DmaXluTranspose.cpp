// A transpose that swaps the two innermost dimensions ([..., R, C] ->
// [..., C, R], R and C multiples of 128) would move single elements by DMA
// (one request per element: about 1.4% of the HBM peak on v5e). Instead it
// goes through VMEM and the transpose unit: a strip of 128 source rows is
// DMA'd into VMEM (bf16 / int8 widened to one element per 32-bit word by the
// DMA), each 128x128 tile of it is pushed into the transpose unit (16 x 8
// rows, strided loads) and popped transposed into an output strip, which one
// DMA writes to the result (128-element runs, narrowed back). Strips of
// 16-bit elements go through the MXU instead when it has packed int8
// (DmaMxuTranspose.h: exact, 8x the transpose unit's rate).
//
// The tile loop is placed by hand at explicit cycles: the list scheduler
// models the transpose unit as an ordinary XLU (two of them on v5e), so it
// would neither keep pushes before pops nor space them by the unit's
// occupancy. Pushes and pops issue every max(8, xlu.permute_interval) cycles
// (the presets' transpose push/pop interval is 8).
//
// Measured on v5e (timing-only, bytes read + written per cycle over the HBM
// peak): f32[2048,2048]^T 62.5% (element DMAs: about 1.4%), f32[512,512]^T
// 59%, bf16[2048,2048]^T 37%: the transpose unit, about 263 cycles per tile
// whatever the element size, is then the limit.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/lower/dma/DmaLowering.h"
#include "compiler/lower/dma/DmaMxuTranspose.h"
#include "compiler/lower/dma/DmaMxuTransposeRuns.h"

namespace tpusim::lower {

using isa::Opcode;
using kernels::codegen::MOperand;

namespace {
constexpr int kTile = 128;
int64_t row0Of(const DmaFragment& f) { return f.vmemBase() / isa::kVmemRowBytes; }
constexpr int kMinTransposeInterval = 8;
MOperand I(int64_t v) { return MOperand::imm(v); }

// The strip heights to try, in 128-row tiles: the tallest first that still
// leaves an even number of strips (the strip loop then unrolls by two, one
// strip loading while the other is transposed), then the tallest at all.
std::vector<int64_t> stripHeights(int64_t rowTiles) {
  std::vector<int64_t> talls;
  for (int64_t k : {8, 4, 2, 1})
    if (rowTiles % (2 * k) == 0) talls.push_back(k);
  for (int64_t k : {8, 4, 2, 1})
    if (rowTiles % k == 0) talls.push_back(k);
  return talls;
}

// The same transpose over fewer dims: unit dims dropped, and operand dims that stay adjacent
// and in order in the result merged into one. [B, S, K] -> [K, B, S] becomes the matrix
// transpose [B*S, K] -> [K, B*S] (the backward pass's x^T of a dot over batch and sequence).
void normalizeTranspose(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm,
                        std::vector<int64_t>* outDims, std::vector<int64_t>* outPerm) {
  std::vector<int64_t> index(dims.size(), -1), kept, p;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1) {
      index[i] = int64_t(kept.size());
      kept.push_back(dims[i]);
    }
  for (int64_t d : perm)
    if (dims[size_t(d)] != 1) p.push_back(index[size_t(d)]);
  std::vector<std::pair<int64_t, int64_t>> runs;  // [first, last] operand dims, result order
  for (int64_t d : p) {
    if (!runs.empty() && d == runs.back().second + 1)
      runs.back().second = d;
    else
      runs.push_back({d, d});
  }
  std::vector<size_t> byOperand(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) byOperand[i] = i;
  std::sort(byOperand.begin(), byOperand.end(),
            [&](size_t a, size_t b) { return runs[a].first < runs[b].first; });
  outDims->clear();
  std::vector<int64_t> position(runs.size());
  for (size_t j = 0; j < byOperand.size(); ++j) {
    const auto& [first, last] = runs[byOperand[j]];
    int64_t size = 1;
    for (int64_t d = first; d <= last; ++d) size *= kept[size_t(d)];
    outDims->push_back(size);
    position[byOperand[j]] = int64_t(j);
  }
  outPerm->assign(position.begin(), position.end());
}
}  // namespace

int64_t tallTransposeVmemWish(const kernels::codegen::TargetInfo& t,
                              const std::vector<int64_t>& dims, const std::vector<int64_t>& perm0,
                              int64_t elemBytes) {
  if (elemBytes != 2) return 0;
  std::vector<int64_t> inDims, perm;
  normalizeTranspose(dims, perm0, &inDims, &perm);
  const size_t n = inDims.size();
  if (n < 2 || perm[n - 2] != int64_t(n - 1) || perm[n - 1] == int64_t(n - 1)) return 0;
  const size_t r = size_t(perm[n - 1]);
  const int64_t rows = inDims[r], cols = inDims[n - 1];
  if (rows == 0 || cols == 0 || rows % kTile != 0 || cols % kTile != 0) return 0;
  int64_t batch = 1;
  bool simple = r == n - 2;
  for (size_t i = 0; i + 2 < n; ++i) {
    batch *= inDims[size_t(perm[i])];
    simple = simple && perm[i] == int64_t(i);
  }
  const int64_t pitch = (cols / kTile) | 1;
  if (pitch > 255 || !simple) return 0;
  // The double-buffered strip tryXluTranspose would take (its loop, simple matrices).
  int64_t tall = 0;
  for (int64_t k : stripHeights(rows / kTile)) {
    const int buffers = (rows / kTile / k) % 2 == 0 ? 2 : 1;
    if (buffers * (k * kTile * pitch + cols * (k | 1)) * isa::kVmemRowBytes <= t.vmemBytes / 2) {
      tall = k * kTile;
      break;
    }
  }
  if (tall == 0) return 0;
  const std::vector<int64_t> strides = rowMajorStrides(inDims);
  const TransposeGeometry g{rows, cols, batch, strides[r] * 2, pitch, batch * rows * cols * 2,
                            tall, true, {}};
  const int64_t all = mxuTransposeLongRunsVmem(t, g, t.vmemBytes);
  return all > mxuTransposeLongRunsVmem(t, g, t.vmemBytes / 2) ? all : 0;
}

bool tryXluTranspose(DmaOp& op) {
  std::vector<int64_t> inDims, perm;
  normalizeTranspose(op.operandShape(0).dims, op.instr.dimensions(), &inDims, &perm);
  std::vector<int64_t> resDims;
  for (int64_t d : perm) resDims.push_back(inDims[size_t(d)]);
  size_t n = inDims.size();
  if (n < 2) return false;
  const int64_t e = op.elemBytes();  // bf16 / int8 widen to one element per VMEM word
  if (e > 4) return false;           // 64-bit elements: the plain DMA path
  // The result's last two dims are (the operand's innermost dim, some other
  // operand dim `r`): each [rows, cols] matrix with rows along r is
  // transposed. The other result dims, in any order, enumerate the matrices.
  if (perm[n - 2] != int64_t(n - 1) || perm[n - 1] == int64_t(n - 1)) return false;
  size_t r = size_t(perm[n - 1]);
  int64_t rows = inDims[r], cols = inDims[n - 1];
  if (rows == 0 || cols == 0 || rows % kTile != 0 || cols % kTile != 0) return false;
  std::vector<int64_t> opStrides = rowMajorStrides(inDims);
  std::vector<int64_t> resStrides = rowMajorStrides(resDims);
  int64_t batch = 1;
  bool simple = r == n - 2;  // matrices in order and contiguous: strips are too
  for (size_t i = 0; i + 2 < n; ++i) {
    batch *= inDims[size_t(perm[i])];
    simple = simple && perm[i] == int64_t(i);
  }
  int64_t tiles = cols / kTile;
  // Strip rows sit an odd number of VMEM rows apart, so the 8 rows one
  // strided load reads fall into 8 different banks.
  int64_t pitch = tiles | 1;
  if (pitch > 255) return false;  // the load's stride is 8 bits
  DmaFragment& f = op.frag;
  const auto& t = f.target();
  int64_t total = batch * rows * cols * e;
  if (total >= (int64_t(1) << 32) || f.queues() < 2) return false;
  // A strip is `tall` tiles high: the write-out then has runs of tall x 128
  // elements per result row instead of 128 (fewer, longer HBM writes). Each
  // result row takes an odd number of VMEM rows (opitch), so a store of 8
  // rows at that stride hits 8 banks. Two strips are in flight (the next
  // loads while this one is transposed and the previous one written) when
  // the strip loop unrolls by two.
  int64_t tall = 1, opitch = 1, aRows = 0, oRows = 0;
  int buffers = 1;
  bool fits = false;
  for (int64_t k : stripHeights(rows / kTile)) {
    tall = k;
    opitch = k | 1;
    aRows = k * kTile * pitch;
    oRows = cols * opitch;
    buffers = simple && (rows / kTile / k) % 2 == 0 ? 2 : 1;
    if (buffers * (aRows + oRows) * isa::kVmemRowBytes <= t.vmemBytes / 2) {
      fits = true;
      break;
    }
  }
  if (!fits) return false;
  {
    // 16-bit elements: taller strips on the MXU when their long result runs pay.
    TransposeGeometry g{rows,         cols,   batch, opStrides[r] * e, pitch, total,
                        tall * kTile, simple, {}};
    for (size_t k = 0; k + 2 < n; ++k)
      g.batchAxes.push_back({resDims[k], {opStrides[size_t(perm[k])] * e, resStrides[k] * e}});
    if (e == 2 && tryMxuTransposeLongRuns(op, g)) return true;
  }
  // 16-bit elements go through the MXU when it has packed int8 (DmaMxuTranspose.h).
  const MxuTransposeStrip mxuStrip{tall * kTile, cols, pitch, opitch};
  const int64_t tableRow = row0Of(f) + buffers * (aRows + oRows);
  const bool viaMxu = mxuTransposeFits(t, e, mxuStrip) &&
                      (buffers * (aRows + oRows) + mxuTransposeTableRows(t)) * isa::kVmemRowBytes <=
                          t.vmemBytes / 2;
  int64_t stripStep = tall * kTile * opStrides[r] * e;  // source bytes between strips
  int64_t stripBytes = tall * kTile * cols * e, strips = batch * (rows / kTile / tall);
  // Rows from the fragment's VMEM base (past a prefetch region in flight).
  const int64_t row0 = f.vmemBase() / isa::kVmemRowBytes;
  auto aRow0 = [&](int b) { return row0 + int64_t(b) * (aRows + oRows); };
  auto oRow0 = [&](int b) { return aRow0(b) + aRows; };

  // Strip in: tall x 128 rows of C elements, HBM -> VMEM rows (pitch apart).
  std::vector<int64_t> wordIn, wordOut;
  for (int b = 0; b < buffers; ++b) {
    isa::DmaDescriptor in;
    in.src = isa::MemorySpace::Hbm;
    in.dst = isa::MemorySpace::Vmem;
    in.srcAddr = op.operandAddresses[0];
    in.dstAddr = uint64_t(aRow0(b)) * isa::kVmemRowBytes;
    in.innerBytes = uint32_t(cols * e);
    in.elemBytes = uint8_t(e < 4 ? e : 0);
    in.numDims = 2;
    in.counts[0] = uint32_t(tall * kTile);
    in.srcStrides[0] = uint32_t(opStrides[r] * e);
    in.dstStrides[0] = uint32_t(pitch * isa::kVmemRowBytes);
    wordIn.push_back(f.addDescriptor(in));
    // Strip out: C rows of tall x 128 elements, VMEM -> HBM.
    isa::DmaDescriptor out;
    out.src = isa::MemorySpace::Vmem;
    out.dst = isa::MemorySpace::Hbm;
    out.srcAddr = uint64_t(oRow0(b)) * isa::kVmemRowBytes;
    out.dstAddr = op.resultAddress;
    out.innerBytes = uint32_t(tall * kTile * e);
    out.elemBytes = uint8_t(e < 4 ? e : 0);
    out.numDims = 2;
    out.counts[0] = uint32_t(cols);
    out.srcStrides[0] = uint32_t(opitch * isa::kVmemRowBytes);
    out.dstStrides[0] = uint32_t(rows * e);
    wordOut.push_back(f.addDescriptor(out));
  }
  const uint64_t src = op.operandAddresses[0], dst = op.resultAddress;

  // A strip waits for the write-out that last used its output rows
  // (stand-ins before the first strips).
  f.dmaStandIns(src, buffers, 1);
  if (viaMxu) mxuTransposeTable(f, tableRow);
  if (buffers == 2) {
    // The count word may hold the one-row read of an earlier run (a fragment
    // runs again inside a while loop).
    f.storeDescriptorWord(wordIn[0], 6, f.constant(tall * kTile));
    f.dmaAt(wordIn[0], RuntimeAddress{src, true, f.constant(0), total}, RuntimeAddress{}, 0);
  }

  const int lv = t.latencyOf(isa::LatencyClass::VectorLoad);
  const int lt = t.latencyOf(isa::LatencyClass::XluTranspose);
  const int gap = std::max(kMinTransposeInterval, t.xluPermuteInterval);
  // The tiles of one strip: for each tile row, a hand-scheduled loop over
  // its tiles: 16 strided loads + pushes, 16 pops + strided stores.
  auto transposeStrip = [&](int b) {
    if (viaMxu) return mxuTransposeStrip(f, mxuStrip, aRow0(b), oRow0(b), tableRow);
    std::vector<DmaFragment::LoopAxis> tileRows{{tall, {kTile * pitch, 1}}};
    f.loopNest(tileRows, {f.constant(aRow0(b)), f.constant(oRow0(b))}, 1,
               [&](const std::vector<MOperand>& base, int) {
                 MOperand count = f.constant(tiles);
                 MOperand aRow = f.copy(base[0]), oRow = f.copy(base[1]);
                 f.beginManualLoop();
                 for (int p = 0; p < 16; ++p) {
                   MOperand v = f.newVector();
                   f.emitAt(gap * p, Opcode::VLd, {v, aRow, I(8 * p * pitch), I(pitch), I(255)});
                   f.emitAt(gap * p + lv, Opcode::XluTrPush, {v});
                 }
                 int pop0 = lv + gap * 16;
                 for (int q = 0; q < 16; ++q) {
                   MOperand v = f.newVector();
                   f.emitAt(pop0 + gap * q, Opcode::XluTrPop, {v});
                   f.emitAt(pop0 + gap * q + lt, Opcode::VSt,
                            {v, oRow, I(8 * q * opitch), I(opitch), I(255)});
                 }
                 int last = pop0 + gap * 15 + lt;
                 f.emitAt(last, Opcode::SAddI, {aRow, aRow, I(1)});
                 f.emitAt(last, Opcode::SAddI, {oRow, oRow, I(kTile * opitch)});
                 f.endManualLoop(count, last + 1, tiles);
               });
  };
  std::vector<DmaFragment::LoopAxis> axes;
  for (size_t k = 0; k + 2 < n; ++k)
    axes.push_back({resDims[k], {opStrides[size_t(perm[k])] * e, resStrides[k] * e}});
  axes.push_back({rows / kTile / tall, {stripStep, tall * kTile * e}});
  f.loopNest(
      axes, {f.constant(0), f.constant(0)}, buffers, [&](const std::vector<MOperand>& cur, int b) {
        if (buffers == 1) {
          f.dmaAt(wordIn[0], RuntimeAddress{src, true, cur[0], total}, RuntimeAddress{}, 0);
          f.waitOldest(0);
        } else {
          f.waitOldest(0);  // this strip is in VMEM
          // The next strip (the last one again at the end: reads stay in bounds).
          MOperand next = f.addImm(cur[0], stripBytes);
          MOperand lastStrip = f.constant((strips - 1) * stripBytes);
          MOperand inside = f.binary(Opcode::SCmpLtu, next, f.constant(strips * stripBytes));
          // After the last strip, a one-row read keeps the queue's count even.
          f.storeDescriptorWord(wordIn[size_t(1 - b)], 6,
                                f.select(inside, f.constant(tall * kTile), f.constant(1)));
          f.dmaAt(wordIn[size_t(1 - b)],
                  RuntimeAddress{src, true, f.select(inside, next, lastStrip), total},
                  RuntimeAddress{}, 0);
        }
        f.waitOldest(1);  // this buffer's previous output rows are written
        transposeStrip(b);
        f.dmaAt(wordOut[size_t(b)], RuntimeAddress{}, RuntimeAddress{dst, true, cur[1], total}, 1);
      });
  op.info.countStagedThroughVmem(uint64_t(total));
  return true;
}

}  // namespace tpusim::lower
