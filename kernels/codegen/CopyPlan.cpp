#include "kernels/codegen/CopyPlan.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/codegen/FirstRead.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/llo/Interpreter.h"

namespace tpusim::kernels::codegen {

namespace {

isa::MemorySpace isaSpace(llo::MemSpace s) {
  switch (s) {
    case llo::MemSpace::Hbm:
      return isa::MemorySpace::Hbm;
    case llo::MemSpace::Vmem:
      return isa::MemorySpace::Vmem;
    default:
      return isa::MemorySpace::Smem;
  }
}

struct Dim {
  int64_t count, src, dst;
};

// Per window dimension, the byte stride of one step on one side; for VMEM the
// last dimension is split into (column tile, lane).
struct Side {
  std::vector<int64_t> strides;  // per window dim (VMEM: last dim's lane stride)
  int64_t tileStride = 0;        // VMEM: bytes per column tile
};

Side sideOf(const llo::Type& t) {
  Side s;
  size_t n = t.shape.size();
  if (t.space == llo::MemSpace::Vmem) {
    llo::TiledLayout l = llo::tiledLayout(t.shape);
    int64_t rowBytes = isa::kVmemRowBytes;
    s.strides.assign(n, 0);
    int64_t m = l.rowsPerMatrix() * rowBytes;
    for (size_t d = n >= 2 ? n - 2 : n; d-- > 0;) {
      s.strides[d] = m;
      m *= t.shape[d];
    }
    if (n >= 2) s.strides[n - 2] = rowBytes;
    if (n >= 1) s.strides[n - 1] = 4;
    s.tileStride = l.paddedRows * rowBytes;
    return s;
  }
  int64_t e = t.space == llo::MemSpace::Hbm ? isa::dtypeBytes(t.dtype) : 4;
  if (t.space == llo::MemSpace::Hbm && !t.strides.empty()) {  // a strided view
    for (int64_t st : t.strides) s.strides.push_back(st * e);
    return s;
  }
  s.strides.assign(n, 0);
  for (size_t d = n; d-- > 0;) {
    s.strides[d] = e;
    e *= t.shape[d];
  }
  return s;
}

}  // namespace

std::vector<int64_t> elementStrides(const llo::Type& ref) { return sideOf(ref).strides; }

std::vector<int64_t> hbmStrides(const llo::ArrayOperand& a) {
  if (!a.pairRows) return elementStrides(a.hbmType());
  // Chunk-aligned rows: row r's chunk starts at byte r * N, as dense; a
  // tile-aligned column c's tile at c * 2S (S rows of 16-bit pairs per lane).
  return {a.shape.at(1), 2 * a.pairRows};
}

CopyPlan planCopy(const llo::Type& src, const llo::Type& dst, const std::vector<int64_t>& sizes) {
  size_t n = sizes.size();
  if (src.rank() != int(n) || dst.rank() != int(n))
    throw CodegenError("internal: copy ranks differ");
  bool srcHbm = src.space == llo::MemSpace::Hbm, dstHbm = dst.space == llo::MemSpace::Hbm;
  int64_t dtypeBytes = isa::dtypeBytes(src.dtype);
  // bf16 / int8 between dense HBM and one-element-per-word VMEM/SMEM: the
  // DMA's widening mode does the relayout (isa/DmaDescriptor.h).
  bool widen = srcHbm != dstHbm && dtypeBytes < 4;
  // Bytes per element on each side.
  int64_t es = srcHbm ? dtypeBytes : 4, ed = dstHbm ? dtypeBytes : 4;
  if (!widen) es = ed = srcHbm || dstHbm ? dtypeBytes : 4;
  Side s = sideOf(src), d = sideOf(dst);
  // Window dims, outermost first; the last one split at column tiles when a
  // VMEM side has more than one.
  std::vector<Dim> dims;
  for (size_t i = 0; i + 1 < n; ++i) dims.push_back({sizes[i], s.strides[i], d.strides[i]});
  int64_t cols = n ? sizes[n - 1] : 1;
  bool vmem = src.space == llo::MemSpace::Vmem || dst.space == llo::MemSpace::Vmem;
  int64_t lanes = cols;
  if (vmem && cols > llo::kLanes) {
    if (cols % llo::kLanes)
      throw CodegenError(fmt::format(
          "a copy of {} columns into or out of VMEM must cover whole 128-lane tiles (not yet "
          "split into a tail descriptor)",
          cols));
    auto tileStep = [&](const Side& x, const llo::Type& t) {
      return t.space == llo::MemSpace::Vmem ? x.tileStride : x.strides[n - 1] * llo::kLanes;
    };
    dims.push_back({cols / llo::kLanes, tileStep(s, src), tileStep(d, dst)});
    lanes = llo::kLanes;
  }
  int64_t ls = n ? s.strides[n - 1] : es, ld = n ? d.strides[n - 1] : ed;
  // Inner run, in each side's own bytes: contiguous elements on both sides, or one element.
  int64_t innerS = es, innerD = ed;
  if (ls == es && ld == ed) {
    innerS *= lanes;
    innerD *= lanes;
  } else {
    dims.push_back({lanes, ls, ld});
  }
  // Drop count-1 dims; merge a dim into the inner run when it continues it on both sides.
  std::vector<Dim> kept;
  for (const Dim& x : dims)
    if (x.count > 1) kept.push_back(x);
  // A strided HBM view (a transpose read in place) walks in address order, so
  // that consecutive requests spread over the HBM's channels and banks.
  if ((srcHbm && !src.strides.empty()) || (dstHbm && !dst.strides.empty()))
    std::stable_sort(kept.begin(), kept.end(), [&](const Dim& a, const Dim& b) {
      return srcHbm ? a.src > b.src : a.dst > b.dst;
    });
  while (!kept.empty() && kept.back().src == innerS && kept.back().dst == innerD) {
    innerS *= kept.back().count;
    innerD *= kept.back().count;
    kept.pop_back();
  }
  // The descriptor's inner size counts dense bytes (the HBM side's).
  int64_t inner = dstHbm && !srcHbm ? innerD : innerS;
  CopyPlan plan;
  plan.bytes = inner;
  for (const Dim& x : kept) plan.bytes *= x.count;
  // At most 3 counted dims per descriptor; outer extra dims unroll.
  size_t extra = kept.size() > 3 ? kept.size() - 3 : 0;
  std::vector<Dim> outer(kept.begin(), kept.begin() + extra);
  std::vector<Dim> inDesc(kept.begin() + extra, kept.end());
  isa::DmaDescriptor t;
  t.src = isaSpace(src.space);
  t.dst = isaSpace(dst.space);
  t.numDims = 1 + int(inDesc.size());
  t.innerBytes = uint32_t(inner);
  t.elemBytes = widen ? uint8_t(dtypeBytes) : 0;
  // Descriptor dim 1 is the innermost counted dim.
  for (size_t i = 0; i < inDesc.size(); ++i) {
    const Dim& x = inDesc[inDesc.size() - 1 - i];
    t.counts[i] = uint32_t(x.count);
    t.srcStrides[i] = uint32_t(x.src);
    t.dstStrides[i] = uint32_t(x.dst);
  }
  std::vector<int64_t> idx(outer.size(), 0);
  while (true) {
    int64_t so = 0, dof = 0;
    for (size_t i = 0; i < outer.size(); ++i) {
      so += idx[i] * outer[i].src;
      dof += idx[i] * outer[i].dst;
    }
    plan.descriptors.push_back(t);
    plan.srcOffset.push_back(so);
    plan.dstOffset.push_back(dof);
    int k = int(idx.size()) - 1;
    while (k >= 0 && ++idx[k] == outer[k].count) idx[k--] = 0;
    if (k < 0) break;
  }
  if (plan.descriptors.size() > 4096)
    throw CodegenError(fmt::format("a copy needs {} DMA descriptors; reshape the window",
                                   plan.descriptors.size()));
  return plan;
}

namespace {

// Appends `part`'s descriptors at extra source / destination byte offsets.
void append(CopyPlan& to, const CopyPlan& part, int64_t src, int64_t dst) {
  for (size_t i = 0; i < part.descriptors.size(); ++i) {
    to.descriptors.push_back(part.descriptors[i]);
    to.srcOffset.push_back(part.srcOffset[i] + src);
    to.dstOffset.push_back(part.dstOffset[i] + dst);
  }
  to.bytes += part.bytes;
}

// The packed s8x2 HBM layout (isa::BufferDesc::pairRows): each chunk of 2S
// rows is its column tiles in order, each tile S rows of 128 16-bit pairs. A
// window of whole chunks and tiles is then one sequential run per chunk: one
// descriptor widening 16-bit elements (no pair mode; each word is the pair),
// rows innermost, then tiles, then chunks.
CopyPlan planPackedCopy(const llo::Type& hbm, const llo::Type& block,
                        const std::vector<int64_t>& window, int64_t S) {
  const int64_t rows = window.at(0), cols = window.at(1), n = hbm.shape.at(1);
  constexpr int64_t kPair = 2, lanes = llo::kLanes;
  if (rows % (2 * S) || cols % lanes || n % lanes || 2 * S * n > int64_t(UINT32_MAX))
    throw CodegenError("internal: a packed s8x2 block copy covers whole chunks and column tiles");
  const int64_t tileStride = llo::tiledLayout(block.shape).paddedRows * isa::kVmemRowBytes;
  isa::DmaDescriptor d;
  d.src = isa::MemorySpace::Hbm;
  d.dst = isa::MemorySpace::Vmem;
  d.numDims = 4;
  d.elemBytes = kPair;
  d.innerBytes = uint32_t(lanes * kPair);
  d.counts = {uint32_t(S), uint32_t(cols / lanes), uint32_t(rows / (2 * S))};
  d.srcStrides = {uint32_t(lanes * kPair), uint32_t(S * lanes * kPair), uint32_t(2 * S * n)};
  d.dstStrides = {uint32_t(isa::kVmemRowBytes), uint32_t(tileStride),
                  uint32_t(2 * S * isa::kVmemRowBytes)};
  CopyPlan out;
  out.descriptors.push_back(d);
  out.srcOffset.push_back(0);
  out.dstOffset.push_back(0);
  out.bytes = rows * cols;
  return out;
}

CopyPlan planPairedCopy(const llo::Type& hbm, const llo::Type& block,
                        const std::vector<int64_t>& window, int64_t S) {
  const int64_t rows = window.at(0), chunks = rows / (2 * S), tail = rows % (2 * S);
  const int64_t rowSrc = elementStrides(hbm).at(0), rowDst = isa::kVmemRowBytes;
  auto rowsPlan = [&](int64_t n, bool pair) {
    std::vector<int64_t> w = window;
    w[0] = n;
    CopyPlan p = planBlockCopy(hbm, block, false, w);
    if (pair) {
      for (isa::DmaDescriptor& d : p.descriptors) d.pairOffset = uint32_t(S * rowSrc);
      p.bytes *= 2;
    }
    return p;
  };
  CopyPlan out;
  if (chunks > 0) {
    CopyPlan c = rowsPlan(S, true);
    // One more counted dimension for the chunks when the chunk's copy is one
    // descriptor with a dimension to spare; else one copy per chunk.
    isa::DmaDescriptor& d = c.descriptors[0];
    if (chunks > 1 && c.descriptors.size() == 1 && d.numDims < isa::kDmaMaxDims &&
        2 * S * rowSrc <= int64_t(UINT32_MAX)) {
      int k = d.numDims - 1;
      d.counts[size_t(k)] = uint32_t(chunks);
      d.srcStrides[size_t(k)] = uint32_t(2 * S * rowSrc);
      d.dstStrides[size_t(k)] = uint32_t(2 * S * rowDst);
      ++d.numDims;
      c.bytes *= chunks;
      append(out, c, 0, 0);
    } else {
      for (int64_t i = 0; i < chunks; ++i) append(out, c, i * 2 * S * rowSrc, i * 2 * S * rowDst);
    }
  }
  // A partial last chunk: its first tail - S rows have a partner, the rest up
  // to S do not (the widening mode zeroes their high byte).
  const int64_t r0 = chunks * 2 * S, paired = std::max<int64_t>(0, tail - S);
  const int64_t single = std::min(S, tail) - paired;
  if (paired > 0) append(out, rowsPlan(paired, true), r0 * rowSrc, r0 * rowDst);
  if (single > 0)
    append(out, rowsPlan(single, false), (r0 + paired) * rowSrc, (r0 + paired) * rowDst);
  return out;
}

}  // namespace

bool rowsBlock(const std::vector<int64_t>& shape) {
  if (shape.size() < 2) return false;
  for (size_t d = 0; d + 2 < shape.size(); ++d)
    if (shape[d] != 1) return false;
  return true;
}

bool entriesBlock(const std::vector<int64_t>& shape) {
  if (shape.size() < 3 || shape[0] < 2) return false;
  for (size_t d = 1; d + 2 < shape.size(); ++d)
    if (shape[d] != 1) return false;
  return true;
}

namespace {

// Whether some step keeps the block of the step before, and whether every
// step keeps the first one (a block copied once, in the prologue); both
// false past kMaxStepsWalked steps.
struct BlockReuse {
  bool kept = false, once = false;
};
BlockReuse blockReuse(const llo::Kernel& k, const llo::BlockMapping& m) {
  const int64_t steps = k.gridPoints();
  constexpr int64_t kMaxStepsWalked = int64_t(1) << 16;
  if (steps < 2 || steps > kMaxStepsWalked || k.numScalarPrefetch > 0) return {};
  llo::Interpreter interp;
  std::vector<int64_t> ids(k.grid.size(), 0);
  std::vector<int32_t> first, prev;
  bool kept = false, once = true;
  for (int64_t step = 0; step < steps; ++step) {
    std::vector<llo::Arg> args;
    for (int64_t id : ids) args.push_back(llo::Arg::ofScalar(int32_t(id)));
    std::vector<int32_t> idx = interp.run(*m.indexMap, args, llo::GridContext{k.grid, ids});
    if (step == 0) first = idx;
    kept = kept || (step > 0 && idx == prev);
    once = once && idx == first;
    if (kept && !once) break;
    prev = std::move(idx);
    for (size_t d = ids.size(); d-- > 0;) {
      if (++ids[d] < k.grid[d]) break;
      ids[d] = 0;
    }
  }
  return {kept, kept && once};
}

}  // namespace

bool copiedOnce(const llo::Kernel& k, const llo::BlockMapping& m) { return blockReuse(k, m).once; }

int64_t arrivalParts(const llo::Kernel& k, const llo::BlockMapping& m, const llo::Type& hbm,
                     int queueDepth) {
  const std::vector<int64_t>& block = m.blockShape;
  if (entriesBlock(block) && hbm.shape.size() == block.size() && m.buffers == 2 &&
      k.numScalarPrefetch == 0) {
    // Parts of whole entries, also for a block that changes every step (the
    // rows' rule below keeps those whole): each entry's matmul waits only for
    // its own part, and the next block's copy goes on the same queue behind
    // the parts (one stream, one flag), so it takes no HBM from them. Steps at
    // the HBM's rate (decode attention's q.K) start on their first entries
    // while the rest of the block is in flight, the first step on the block
    // the kernel before could not start (it writes the cache).
    for (size_t d = 0; d < block.size(); ++d)
      if (hbm.shape[d] % block[d] != 0) return 1;
    int64_t bytes = isa::dtypeBytes(hbm.dtype);
    for (int64_t n : block) bytes *= n;
    int64_t parts =
        std::min<int64_t>({kMaxArrivalParts, queueDepth / 2, block[0] / kMinArrivalPartEntries,
                           bytes / kMinArrivalPartBytes});
    while (parts > 1 && block[0] % parts != 0) --parts;
    if (parts < 2 || !firstReadByEntries(k, m)) return 1;
    return parts;
  }
  if (!rowsBlock(block) || hbm.shape.size() != block.size() || m.buffers != 2 ||
      k.numScalarPrefetch > 0)
    return 1;
  for (size_t d = 0; d < block.size(); ++d)
    if (hbm.shape[d] % block[d] != 0) return 1;
  const int64_t rows = block[block.size() - 2], cols = block.back();
  const int64_t bytes = rows * cols * isa::dtypeBytes(hbm.dtype);
  const auto [kept, once] = blockReuse(k, m);
  if (!kept) return 1;
  // A block of leading unit dims, or one copied once in smaller parts, only
  // where the body's first read takes some of its rows (FirstRead.h): else
  // the parts would be waited for at once, their copies sharing HBM with the
  // other streams' first blocks (the whole block lands sooner alone).
  const bool byRows = (once || block.size() > 2) && firstReadByRows(k, m, once);
  if (block.size() > 2 && !byRows) return 1;
  // A block copied once has no next block to take HBM from its parts:
  // smaller parts let the first step start on its first rows sooner. Only a
  // block of leading unit dims (a whole head): 2-D ones keep the parts they
  // had (the tiny prefill's down projection LHS in 128 KiB parts: +8 cycles).
  const int64_t minPart =
      once && byRows && block.size() > 2 ? kMinOnceArrivalPartBytes : kMinArrivalPartBytes;
  const int64_t parts =
      std::min<int64_t>({kMaxArrivalParts, queueDepth / 2, rows / 8, bytes / minPart});
  return parts > 1 ? parts : 1;
}

CopyPlan planBlockCopy(const llo::Type& hbm, const llo::Type& block, bool toHbm,
                       std::vector<int64_t> window, int64_t pairRows, int64_t parts,
                       bool packedHbm) {
  if (pairRows > 0) {
    if (toHbm || hbm.dtype != llo::DType::S8 || window.size() != 2 || parts > 1 ||
        (packedHbm && !hbm.strides.empty()))
      throw CodegenError("internal: a paired block copy is an s8 rank-2 input in one part");
    return packedHbm ? planPackedCopy(hbm, block, window, pairRows)
                     : planPairedCopy(hbm, block, window, pairRows);
  }
  if (packedHbm) throw CodegenError("internal: a packed s8x2 array is copied paired");
  if (parts > 1 && entriesBlock(window)) {
    // Ranges of whole entries, each its own descriptors, in order.
    if (toHbm || window != block.shape || window[0] % parts != 0)
      throw CodegenError("internal: only whole input blocks are copied in parts of entries");
    const int64_t entries = window[0], step = entries / parts;
    const int64_t hbmEntry = elementStrides(hbm)[0];
    const int64_t vmemEntry = llo::tiledLayout(window).totalRows() / entries * isa::kVmemRowBytes;
    CopyPlan all;
    all.partsByEntry = true;
    for (int64_t e0 = 0; e0 < entries; e0 += step) {
      std::vector<int64_t> part = window;
      part[0] = step;
      CopyPlan p = planBlockCopy(hbm, block, false, part);
      for (size_t i = 0; i < p.descriptors.size(); ++i) {
        all.descriptors.push_back(p.descriptors[i]);
        all.srcOffset.push_back(p.srcOffset[i] + e0 * hbmEntry);
        all.dstOffset.push_back(p.dstOffset[i] + e0 * vmemEntry);
      }
      all.bytes += p.bytes;
      all.partRowEnd.push_back(e0 + step);
      all.partDescriptors.push_back(int64_t(p.descriptors.size()));
    }
    return all;
  }
  if (parts > 1) {
    // Row ranges of whole (8-row) tiles, each its own descriptors, in order.
    if (toHbm || !rowsBlock(window) || window != block.shape)
      throw CodegenError("internal: only whole 2-D input blocks are copied in parts");
    const size_t rowDim = window.size() - 2;
    const int64_t rows = window[rowDim], step = (rows / parts + 7) / 8 * 8;
    const int64_t hbmRow = elementStrides(hbm)[rowDim];
    CopyPlan all;
    for (int64_t r0 = 0; r0 < rows; r0 += step) {
      const int64_t r1 = std::min(rows, r0 + step);
      std::vector<int64_t> part = window;
      part[rowDim] = r1 - r0;
      CopyPlan p = planBlockCopy(hbm, block, false, part);
      for (size_t i = 0; i < p.descriptors.size(); ++i) {
        all.descriptors.push_back(p.descriptors[i]);
        all.srcOffset.push_back(p.srcOffset[i] + r0 * hbmRow);
        all.dstOffset.push_back(p.dstOffset[i] + r0 * isa::kVmemRowBytes);
      }
      all.bytes += p.bytes;
      all.partRowEnd.push_back(r1);
      all.partDescriptors.push_back(int64_t(p.descriptors.size()));
    }
    return all;
  }
  auto plan = [&](const std::vector<int64_t>& w) {
    return toHbm ? planCopy(block, hbm, w) : planCopy(hbm, block, w);
  };
  int64_t cols = window.empty() ? 1 : window.back(), tiles = cols / llo::kLanes;
  if (cols <= llo::kLanes || cols % llo::kLanes == 0) return plan(window);
  window.back() = tiles * llo::kLanes;
  CopyPlan whole = plan(window);
  window.back() = cols % llo::kLanes;
  CopyPlan tail = plan(window);
  int64_t vmemOff = tiles * llo::tiledLayout(block.shape).paddedRows * isa::kVmemRowBytes;
  int64_t hbmOff = tiles * llo::kLanes * isa::dtypeBytes(hbm.dtype);
  for (size_t i = 0; i < tail.descriptors.size(); ++i) {
    whole.descriptors.push_back(tail.descriptors[i]);
    whole.srcOffset.push_back(tail.srcOffset[i] + (toHbm ? vmemOff : hbmOff));
    whole.dstOffset.push_back(tail.dstOffset[i] + (toHbm ? hbmOff : vmemOff));
  }
  whole.bytes += tail.bytes;
  return whole;
}

}  // namespace tpusim::kernels::codegen
