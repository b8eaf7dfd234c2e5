#include "sim/prof/BuildProfile.h"

#include <algorithm>
#include <map>

#include "sim/prof/Findings.h"
#include "sim/prof/MemoryViewer.h"
#include "sim/prof/OpNames.h"
#include "sim/prof/Summarize.h"

namespace tpusim::prof {
namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

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
  p.pod = in.pod;
  p.overview = overviewOf(p, run, chip);
  p.overview.findings = findingsOf(p);
  return p;
}

}  // namespace tpusim::prof
