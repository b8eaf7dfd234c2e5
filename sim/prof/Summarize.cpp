#include "sim/prof/Summarize.h"

#include <algorithm>
#include <map>

#include "isa/Isa.h"

namespace tpusim::prof {
namespace {

void addCounters(OpProfile& into, const OpProfile& op) {
  into.cycles += op.cycles;
  into.bundles += op.bundles;
  into.flops += op.flops;
  into.mxuFlops += op.mxuFlops;
  into.vpuFlops += op.vpuFlops;
  into.hbmReadBytes += op.hbmReadBytes;
  into.hbmWriteBytes += op.hbmWriteBytes;
  into.vmemBytes += op.vmemBytes;
  into.valuOps += op.valuOps;
  into.transcendentalBusy += op.transcendentalBusy;
  into.vldOps += op.vldOps;
  into.vstOps += op.vstOps;
  for (int k = 0; k < sim::kNumStallCauses; ++k) into.stalls[k] += op.stalls[k];
}

std::vector<FoldedOp> foldOps(const std::vector<OpProfile>& ops, const ChipPeaks& peaks) {
  std::vector<FoldedOp> out;
  std::map<std::pair<int, std::string>, size_t> index;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto key = std::make_pair(int(ops[i].category), ops[i].folded);
    auto [it, fresh] = index.emplace(key, out.size());
    if (fresh) {
      FoldedOp f;
      f.folded = ops[i].folded;
      f.category = ops[i].category;
      f.total.name = f.total.folded = ops[i].folded;
      f.total.opcode = ops[i].opcode;
      f.total.category = ops[i].category;
      out.push_back(f);
    }
    FoldedOp& f = out[it->second];
    f.ops.push_back(i);
    addCounters(f.total, ops[i]);
    if (f.total.opcode != ops[i].opcode) f.total.opcode.clear();
  }
  for (FoldedOp& f : out) deriveOp(f.total, peaks);
  std::stable_sort(out.begin(), out.end(), [](const FoldedOp& a, const FoldedOp& b) {
    return a.total.cycles > b.total.cycles;
  });
  return out;
}

std::vector<CategorySummary> categoriesOf(const std::vector<OpProfile>& ops) {
  std::vector<CategorySummary> all(kNumCategories);
  for (int c = 0; c < kNumCategories; ++c) all[size_t(c)].category = Category(c);
  for (const OpProfile& op : ops) {
    CategorySummary& s = all[size_t(op.category)];
    s.ops += 1;
    s.cycles += op.cycles;
    s.flops += op.flops;
    s.wastedCycles += op.wastedCycles;
    s.hbmBytes += op.hbmBytes();
    s.cyclesByBound[size_t(op.boundBy)] += op.cycles;
  }
  std::vector<CategorySummary> out;
  for (const CategorySummary& s : all)
    if (s.ops > 0 && s.cycles > 0) out.push_back(s);
  std::stable_sort(out.begin(), out.end(), [](const CategorySummary& a, const CategorySummary& b) {
    return a.cycles > b.cycles;
  });
  return out;
}

std::vector<LayerSummary> layersOf(const std::vector<OpProfile>& ops) {
  std::map<int64_t, LayerSummary> byLayer;
  bool any = false;
  for (const OpProfile& op : ops) {
    any |= op.layer >= 0;
    LayerSummary& l = byLayer[op.layer];
    l.layer = op.layer;
    l.ops += 1;
    l.cycles += op.cycles;
    l.flops += op.flops;
    l.hbmBytes += op.hbmBytes();
    l.cyclesByCategory[size_t(op.category)] += op.cycles;
  }
  std::vector<LayerSummary> out;
  if (!any) return out;
  for (auto& [layer, l] : byLayer)
    if (layer >= 0) out.push_back(l);
  if (byLayer.count(-1)) out.push_back(byLayer[-1]);
  return out;
}

}  // namespace

ChipPeaks chipPeaks(const target::ChipConfig& chip) {
  ChipPeaks p;
  p.chip = chip.name;
  p.clockHz = chip.core.clock_hz;
  p.cores = chip.core.cores;
  p.valuSlots = chip.core.valu_slots;
  p.vldSlots = chip.core.vld_slots;
  p.vstSlots = chip.core.vst_slots;
  const double vreg = double(isa::kSublanes) * isa::kLanes;  // elements of one vector register
  p.mxuFlopsPerCycle = 2.0 * double(chip.mxu.count) * double(chip.mxu.size * chip.mxu.size);
  p.vpuFlopsPerCycle = double(chip.core.valu_slots) * vreg;
  p.hbmBytesPerCycle = chip.hbmPeakBytesPerSecond() / chip.core.clock_hz / double(p.cores);
  p.vmemBytesPerCycle = double(chip.core.vld_slots + chip.core.vst_slots) * double(isa::kSublanes) *
                        isa::kVmemRowBytes;
  return p;
}

void summarize(Profile& p) {
  for (OpProfile& op : p.ops) deriveOp(op, p.peaks);
  p.folded = foldOps(p.ops, p.peaks);
  p.categories = categoriesOf(p.ops);
  p.layers = layersOf(p.ops);
}

}  // namespace tpusim::prof
