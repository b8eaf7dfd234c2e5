#include "compiler/lower/dma/DmaMove.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::lower {

namespace {
constexpr int64_t kU32Limit = int64_t(1) << 32;
}

int64_t Move::points() const {
  int64_t n = 1;
  for (const MoveAxis& a : axes) n *= a.count;
  return n;
}

std::string Move::toString() const {
  std::string s = fmt::format("run {} B", run);
  for (const MoveAxis& a : axes) s += fmt::format(" x [{}: {:+}/{:+}]", a.count, a.src, a.dst);
  return s + fmt::format(" @+{}/+{}", srcOffset, dstOffset);
}

std::vector<int64_t> rowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

Move elementMove(int64_t elemBytes, const std::vector<MoveAxis>& elementAxes, int64_t srcElemOffset,
                 int64_t dstElemOffset) {
  Move m;
  m.run = elemBytes;
  m.srcOffset = srcElemOffset * elemBytes;
  m.dstOffset = dstElemOffset * elemBytes;
  for (const MoveAxis& a : elementAxes)
    m.axes.push_back({a.count, a.src * elemBytes, a.dst * elemBytes});
  return normalize(std::move(m));
}

Move normalize(Move m) {
  if (m.empty()) {
    m.axes = {MoveAxis{0, 0, 0}};
    return m;
  }
  m.axes.erase(
      std::remove_if(m.axes.begin(), m.axes.end(), [](const MoveAxis& a) { return a.count == 1; }),
      m.axes.end());
  for (bool changed = true; changed;) {
    changed = false;
    // An innermost axis that continues the run on both sides joins it.
    while (!m.axes.empty() && m.axes.back().src == m.run && m.axes.back().dst == m.run) {
      m.run *= m.axes.back().count;
      m.axes.pop_back();
      changed = true;
    }
    // Two neighbours that form one progression on both sides become one axis.
    for (size_t i = m.axes.size(); i-- > 1;) {
      const MoveAxis& outer = m.axes[i - 1];
      const MoveAxis& inner = m.axes[i];
      if (outer.src == inner.src * inner.count && outer.dst == inner.dst * inner.count) {
        m.axes[i - 1] = MoveAxis{outer.count * inner.count, inner.src, inner.dst};
        m.axes.erase(m.axes.begin() + int64_t(i));
        changed = true;
      }
    }
  }
  return m;
}

int64_t DescriptorSplit::descriptors() const {
  int64_t n = 1;
  for (const MoveAxis& a : enumerated) n *= a.count;
  return n;
}

DescriptorSplit splitForDescriptors(const Move& m) {
  DescriptorSplit s;
  s.run = m.run;
  // The descriptor walks up to three axes with unsigned strides; it takes the
  // longest ones so the fewest descriptors remain to enumerate.
  std::vector<size_t> walkable;
  for (size_t i = 0; i < m.axes.size(); ++i) {
    const MoveAxis& a = m.axes[i];
    if (a.src >= 0 && a.dst >= 0 && a.src < kU32Limit && a.dst < kU32Limit && a.count < kU32Limit)
      walkable.push_back(i);
  }
  std::stable_sort(walkable.begin(), walkable.end(), [&](size_t x, size_t y) {
    if (m.axes[x].count != m.axes[y].count) return m.axes[x].count > m.axes[y].count;
    return x > y;  // inner first among equals
  });
  if (walkable.size() > 3) walkable.resize(3);
  std::vector<bool> walked(m.axes.size(), false);
  for (size_t i : walkable) walked[i] = true;
  for (size_t i = m.axes.size(); i-- > 0;)
    if (walked[i]) s.walked.push_back(m.axes[i]);
  for (size_t i = 0; i < m.axes.size(); ++i)
    if (!walked[i]) s.enumerated.push_back(m.axes[i]);
  return s;
}

isa::DmaDescriptor makeDescriptor(const DescriptorSplit& s, uint64_t src, uint64_t dst,
                                  isa::MemorySpace srcSpace, isa::MemorySpace dstSpace) {
  isa::DmaDescriptor d;
  d.src = srcSpace;
  d.dst = dstSpace;
  d.srcAddr = src;
  d.dstAddr = dst;
  d.innerBytes = uint32_t(s.run);
  d.numDims = 1 + int(s.walked.size());
  for (size_t i = 0; i < s.walked.size(); ++i) {
    d.counts[i] = uint32_t(s.walked[i].count);
    d.srcStrides[i] = uint32_t(s.walked[i].src);
    d.dstStrides[i] = uint32_t(s.walked[i].dst);
  }
  return d;
}

std::vector<isa::DmaDescriptor> splitAcrossQueues(const isa::DmaDescriptor& d, int parts,
                                                  uint64_t minBytes) {
  if (parts <= 1 || d.totalBytes() < minBytes) return {d};
  std::vector<isa::DmaDescriptor> out;
  if (d.numDims == 1) {
    uint64_t total = d.innerBytes;
    uint64_t chunk = (total + uint64_t(parts) - 1) / uint64_t(parts);
    chunk = (chunk + 511) / 512 * 512;  // whole HBM requests
    for (uint64_t at = 0; at < total; at += chunk) {
      isa::DmaDescriptor p = d;
      p.srcAddr += at;
      p.dstAddr += at;
      p.innerBytes = uint32_t(std::min(chunk, total - at));
      out.push_back(p);
    }
    return out;
  }
  int k = d.numDims - 2;  // the outermost walked dim
  uint64_t c = d.counts[k];
  uint64_t p = std::min<uint64_t>(uint64_t(parts), c);
  for (uint64_t i = 0; i < p; ++i) {
    uint64_t lo = c * i / p, hi = c * (i + 1) / p;
    isa::DmaDescriptor piece = d;
    piece.counts[k] = uint32_t(hi - lo);
    piece.srcAddr += lo * d.srcStrides[k];
    piece.dstAddr += lo * d.dstStrides[k];
    out.push_back(piece);
  }
  return out;
}

ByteSpan moveSpan(const Move& m, bool destination) {
  int64_t base = destination ? m.dstOffset : m.srcOffset;
  ByteSpan s{base, base + m.run};
  if (m.empty()) return ByteSpan{base, base};
  for (const MoveAxis& a : m.axes) {
    int64_t reach = (a.count - 1) * (destination ? a.dst : a.src);
    if (reach < 0)
      s.begin += reach;
    else
      s.end += reach;
  }
  return s;
}

}  // namespace tpusim::lower
