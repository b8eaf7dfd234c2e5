#include "sim/prof/BuildProfile.h"

#include <algorithm>
#include <map>

#include "sim/prof/Findings.h"
#include "sim/prof/MemoryViewer.h"
#include "sim/prof/OpNames.h"

namespace tpusim::prof {
namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

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

// One row per op name, in program order: several debug-map entries (a
// kernel's pieces) may carry the same name.
std::vector<OpProfile> opsOf(const sim::SimResult& run, const isa::Program& program,
                             const ProfileInputs& in) {
  std::map<std::string, double> costFlops;
  for (const isa::CostEntry& c : program.costs) costFlops[c.opName] += c.flops;
  std::vector<OpProfile> ops;
  std::map<std::string, size_t> index;
  for (const sim::OpReport& r : run.ops) {
    auto [it, fresh] = index.emplace(r.name, ops.size());
    if (fresh) {
      OpProfile op;
      op.name = r.name;
      op.opName = cleanOpName(r.hloOpName);
      if (!r.sourceFile.empty()) op.source = r.sourceFile + ":" + std::to_string(r.sourceLine);
      ops.push_back(op);
    }
    OpProfile& op = ops[it->second];
    op.cycles += r.stats.cycles;
    op.bundles += r.stats.bundles;
    op.mxuFlops += r.stats.mxuFlops;
    op.vpuFlops += r.stats.flops - r.stats.mxuFlops;
    op.hbmReadBytes += r.stats.hbmBytesRead;
    op.hbmWriteBytes += r.stats.hbmBytesWritten;
    op.vmemBytes += r.stats.vmemBytes;
    op.valuOps += r.stats.valuOps;
    op.transcendentalBusy += r.stats.transcendentalBusy;
    op.vldOps += r.stats.vldOps;
    op.vstOps += r.stats.vstOps;
    for (int k = 0; k < sim::kNumStallCauses; ++k) op.stalls[k] += r.stats.stalls[k];
  }
  for (OpProfile& op : ops) {
    auto cost = costFlops.find(op.name);
    op.flops =
        cost != costFlops.end() && cost->second > 0 ? cost->second : op.mxuFlops + op.vpuFlops;
    auto facts = in.hloOps.find(op.name);
    if (facts != in.hloOps.end()) {
      op.opcode = facts->second.opcode;
      op.category = categoryOf(facts->second);
    } else {
      op.category = categoryOfName(op.name, op.mxuFlops > 0);
    }
    FoldedName f = foldLayers(op.opName.empty() ? op.name : op.opName);
    op.folded = f.folded;
    op.layer = f.layer;
  }
  // Cores that halted before the step ended: their idle cycles, so that the
  // ops sum to cores x step.
  int64_t idle = 0;
  for (const sim::CoreStats& c : run.cores)
    if (c.haltCycle >= 0) idle += std::max<int64_t>(0, run.cycles - (c.haltCycle + 1));
  if (idle > 0) {
    OpProfile op;
    op.name = op.folded = "(idle core)";
    op.cycles = idle;
    ops.push_back(op);
  }
  return ops;
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

Overview overviewOf(const Profile& p, const sim::SimResult& run, const target::ChipConfig& chip) {
  Overview o;
  o.stepCycles = run.cycles;
  o.stepSeconds = double(run.cycles) / p.peaks.clockHz;
  const double coreCycles = double(run.cycles) * double(p.peaks.cores);
  int64_t macs = 0;
  for (const sim::CoreStats& c : run.cores)
    for (int m = 0; m < chip.mxu.count; ++m) macs += c.mxuMacs[size_t(m)];
  o.mxuUtilization = ratio(2.0 * double(macs), p.peaks.mxuFlopsPerCycle * coreCycles);
  for (const OpProfile& op : p.ops) {
    o.flops += op.flops;
    o.hbmBytes += op.hbmBytes();
    for (int k = 0; k < sim::kNumStallCauses; ++k) o.stalls[k] += op.stalls[k];
    o.stallCycles += op.stallCycles;
    switch (op.boundBy) {
      case BoundBy::Mxu:
      case BoundBy::Vpu:
        o.computeBoundCycles += op.cycles;
        break;
      case BoundBy::Hbm:
      case BoundBy::Vmem:
        o.memoryBoundCycles += op.cycles;
        break;
      case BoundBy::Latency:
        o.latencyBoundCycles += op.cycles;
        break;
    }
  }
  o.flopsPerSecond = ratio(o.flops, o.stepSeconds);
  o.flopsPercentOfPeak = 100.0 * ratio(o.flops, p.peaks.mxuFlopsPerCycle * coreCycles);
  o.hbmBytesPerSecond = ratio(double(o.hbmBytes), o.stepSeconds);
  o.hbmPercentOfPeak = 100.0 * ratio(double(o.hbmBytes), p.peaks.hbmBytesPerCycle * coreCycles);
  o.dmaStallShare = ratio(double(o.stalls[int(sim::StallCause::SyncWait)] +
                                 o.stalls[int(sim::StallCause::DmaQueueFull)]),
                          coreCycles);
  return o;
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

Profile buildProfile(const sim::SimResult& run, const isa::Program& program,
                     const target::ChipConfig& chip, const ProfileInputs& in) {
  Profile p;
  p.program = in.program;
  p.peaks = chipPeaks(chip);
  p.trace = in.trace;
  p.ops = opsOf(run, program, in);
  summarize(p);
  p.memory = in.memory;
  if (p.memory.present) finishMemory(p.memory);
  p.overview = overviewOf(p, run, chip);
  p.overview.findings = findingsOf(p);
  return p;
}

}  // namespace tpusim::prof
