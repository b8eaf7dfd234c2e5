#include "sim/prof/MemoryViewer.h"

#include <algorithm>

namespace tpusim::prof {

void finishMemory(MemoryProfile& m) {
  m.present = true;
  const int64_t steps = std::max<int64_t>(int64_t(m.steps.size()), 1);
  m.liveBytes.assign(size_t(steps), 0);
  m.heapPeakBytes = 0;
  for (const MemoryBuffer& b : m.buffers) {
    m.heapPeakBytes = std::max(m.heapPeakBytes, b.offset + b.bytes);
    int64_t from = std::clamp<int64_t>(b.defineStep, 0, steps - 1);
    int64_t to = std::clamp<int64_t>(b.lastUseStep, from, steps - 1);
    for (int64_t s = from; s <= to; ++s) m.liveBytes[size_t(s)] += b.bytes;
  }
  m.peakStep = 0;
  for (int64_t s = 0; s < steps; ++s)
    if (m.liveBytes[size_t(s)] > m.liveBytes[size_t(m.peakStep)]) m.peakStep = s;
  m.peakLiveBytes = m.liveBytes[size_t(m.peakStep)];
  m.atPeak.clear();
  m.atPeakByKind.clear();
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const MemoryBuffer& b = m.buffers[i];
    if (b.defineStep <= m.peakStep && m.peakStep <= b.lastUseStep) {
      m.atPeak.push_back(i);
      m.atPeakByKind[b.kind] += b.bytes;
    }
  }
  std::stable_sort(m.atPeak.begin(), m.atPeak.end(),
                   [&](size_t a, size_t b) { return m.buffers[a].bytes > m.buffers[b].bytes; });
}

}  // namespace tpusim::prof
