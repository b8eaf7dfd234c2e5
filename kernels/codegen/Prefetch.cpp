#include "kernels/codegen/Prefetch.h"

#include <fmt/format.h>

#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/PairPack.h"
#include "kernels/llo/Interpreter.h"

namespace tpusim::kernels::codegen {

std::string PrefetchPlan::key() const {
  std::string k = fmt::format("prefetch{}:{}:{}", fromTop ? "T" : "B", rows, flags);
  for (const PrefetchedStream& s : streams)
    k += fmt::format(";{}@{}+{}f{}d{}v{}", s.input, s.bufRow, s.rows, s.flag, s.descriptors,
                     s.variant);
  for (const PrefetchCopy& c : copies) {
    isa::DmaDescriptor d = c.desc;
    d.srcAddr = 0;  // the consumer's input address: a parameter of the cache
    for (uint32_t w : d.pack()) k += fmt::format(",{:x}", w);
    k += fmt::format("f{}q{}", c.flag, c.queue);
  }
  return k;
}

PrefetchPlan planPrefetch(const llo::Kernel& next, const TargetInfo& t,
                          const std::vector<int64_t>& inputAddresses,
                          const std::vector<HbmRange>& written, bool fromTop, int64_t maxRows,
                          int only) {
  PrefetchPlan plan;
  plan.fromTop = fromTop;
  if (next.numScalarPrefetch > 0 || next.gridPoints() < 1 ||
      inputAddresses.size() != next.inputs.size())
    return plan;
  const std::vector<int64_t> origin(next.grid.size(), 0);
  std::vector<llo::Arg> args;
  for (size_t d = 0; d < next.grid.size(); ++d) args.push_back(llo::Arg::ofScalar(0));
  llo::Interpreter interp;
  for (size_t m = 0; m < next.inMaps.size(); ++m) {
    const llo::BlockMapping& map = next.inMaps[m];
    const int input = int(m) + next.numScalarPrefetch;
    const llo::ArrayOperand& a = next.inputs[size_t(input)];
    const int64_t base = inputAddresses[size_t(input)];
    if (map.space != llo::MemSpace::Vmem || base < 0 || (only >= 0 && input != only)) continue;
    // The whole array, not only its first block: cheap and safe.
    const llo::Type hbm = a.hbmType();
    const int64_t end = base + llo::refBytes(llo::Type::ref(llo::MemSpace::Hbm, a.dtype, a.shape));
    bool clobbered = false;
    for (const HbmRange& w : written)
      clobbered |= w.begin < end && base < w.end && w.end > w.begin && end > base;
    if (clobbered) continue;
    const llo::Type block = llo::Type::ref(llo::MemSpace::Vmem, a.dtype, map.blockShape);
    const int64_t blockRows = llo::tiledLayout(map.blockShape).totalRows();
    const int64_t rows = blockRows * map.buffers;
    if (plan.rows + rows > maxRows) break;  // keep the regions of both kernels in input order
    std::vector<int32_t> idx = interp.run(*map.indexMap, args, llo::GridContext{next.grid, origin});
    PrefetchedStream s;
    s.input = input;
    s.rows = rows;
    s.bufRow = fromTop ? t.vmemRows() - (plan.rows + rows) : plan.rows;
    s.flag = fromTop ? t.syncFlags - (plan.flags + 1) : plan.flags;
    std::vector<int64_t> window = map.blockShape;
    int bit = 0;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      s.firstBlock.push_back(idx.at(d));
      if (a.shape[d] % map.blockShape[d] == 0) continue;
      // A ragged dimension: its last block is clipped (Compile.cpp's variants).
      if (idx[d] == a.shape[d] / map.blockShape[d]) {
        s.variant |= 1 << bit;
        window[d] = a.shape[d] % map.blockShape[d];
      }
      ++bit;
    }
    // As the grid pipeline (Compile.cpp): a paired block arrives whole.
    const int64_t pairRows = pairedRows(next, input, t);
    CopyPlan cp =
        planBlockCopy(hbm, block, false, window, pairRows,
                      pairRows ? 1 : arrivalParts(next, map, hbm, t.dmaQueueDepth), a.pairRows > 0);
    std::vector<int64_t> strides = hbmStrides(a);
    int64_t src = base;
    for (size_t d = 0; d < idx.size(); ++d) src += idx[d] * map.blockShape[d] * strides[d];
    const int64_t dst = s.bufRow * isa::kVmemRowBytes;  // buffer 0: the prologue's first
    for (size_t i = 0; i < cp.descriptors.size(); ++i) {
      PrefetchCopy c;
      c.desc = cp.descriptors[i];
      c.desc.srcAddr = uint64_t(src + cp.srcOffset[i]);
      c.desc.dstAddr = uint64_t(dst + cp.dstOffset[i]);
      c.flag = s.flag;
      c.queue = s.flag % t.dmaQueues;
      plan.copies.push_back(c);
    }
    s.descriptors = int(cp.descriptors.size());
    plan.hbmBytes += cp.bytes;
    plan.rows += rows;
    plan.flags += 1;
    plan.streams.push_back(std::move(s));
  }
  return plan;
}

}  // namespace tpusim::kernels::codegen
