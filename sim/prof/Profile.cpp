#include "sim/prof/Profile.h"

#include <fmt/format.h>
#include <algorithm>

namespace tpusim::prof {

const char* categoryName(Category c) {
  switch (c) {
    case Category::MatmulFusion:
      return "matmul fusion";
    case Category::LoopFusion:
      return "loop fusion";
    case Category::Reduction:
      return "reduction";
    case Category::DataFormatting:
      return "data formatting";
    case Category::DynamicSlice:
      return "dynamic slice/update";
    case Category::Collective:
      return "collective";
    case Category::ControlFlow:
      return "control flow";
    case Category::LibraryKernel:
      return "library kernel";
    case Category::Other:
      return "other";
  }
  return "?";
}

bool categoryFromName(const std::string& name, Category* out) {
  for (int c = 0; c < kNumCategories; ++c)
    if (name == categoryName(Category(c))) {
      *out = Category(c);
      return true;
    }
  return false;
}

const char* boundByName(BoundBy b) {
  switch (b) {
    case BoundBy::Mxu:
      return "MXU";
    case BoundBy::Vpu:
      return "VPU";
    case BoundBy::Hbm:
      return "HBM";
    case BoundBy::Vmem:
      return "VMEM";
    case BoundBy::Latency:
      return "latency";
  }
  return "?";
}

bool boundByFromName(const std::string& name, BoundBy* out) {
  for (int b = 0; b < kNumBoundBy; ++b)
    if (name == boundByName(BoundBy(b))) {
      *out = BoundBy(b);
      return true;
    }
  return false;
}

namespace {
double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }
}  // namespace

void deriveOp(OpProfile& op, const ChipPeaks& peaks) {
  const double cycles = double(op.cycles);
  const double hbm = double(op.hbmBytes());
  op.stallCycles = 0;
  for (int64_t s : op.stalls) op.stallCycles += s;
  op.intensity = ratio(op.flops, hbm);
  op.flopsPerSecond = ratio(op.flops, cycles) * peaks.clockHz;
  op.hbmBytesPerSecond = ratio(hbm, cycles) * peaks.clockHz;

  // What each resource needed, as a share of the op's time.
  op.unitUse = {ratio(op.mxuFlops, peaks.mxuFlopsPerCycle * cycles),
                std::max(ratio(double(op.valuOps), double(peaks.valuSlots) * cycles),
                         ratio(double(op.transcendentalBusy), cycles)),
                ratio(hbm, peaks.hbmBytesPerCycle * cycles),
                std::max(ratio(double(op.vldOps), double(peaks.vldSlots) * cycles),
                         ratio(double(op.vstOps), double(peaks.vstSlots) * cycles))};

  // The roofline: the least time the op's FLOPs and bytes allow on this chip.
  const double peakCompute =
      op.mxuFlops > 0 || op.vpuFlops == 0 ? peaks.mxuFlopsPerCycle : peaks.vpuFlopsPerCycle;
  const double roofCycles =
      std::max({ratio(op.flops, peakCompute), ratio(hbm, peaks.hbmBytesPerCycle),
                ratio(double(op.vmemBytes), peaks.vmemBytesPerCycle)});
  op.rooflineFlopsPerSecond = ratio(op.flops, roofCycles) * peaks.clockHz;
  op.rooflineEfficiency = std::min(1.0, ratio(roofCycles, cycles));
  op.wastedCycles = cycles * (1.0 - op.rooflineEfficiency);

  const int64_t dmaStalls =
      op.stalls[int(sim::StallCause::SyncWait)] + op.stalls[int(sim::StallCause::DmaQueueFull)];
  op.dmaStallShare = ratio(double(dmaStalls), cycles);

  static const BoundBy kUnits[4] = {BoundBy::Mxu, BoundBy::Vpu, BoundBy::Hbm, BoundBy::Vmem};
  size_t best = 0;
  for (size_t u = 1; u < 4; ++u)
    if (op.unitUse[u] > op.unitUse[best]) best = u;
  if (op.cycles > 0 && op.unitUse[best] >= kBoundThreshold) {
    op.boundBy = kUnits[best];
    op.boundDetail = fmt::format("{} {:.0f}% busy", boundByName(op.boundBy),
                                 100.0 * std::min(1.0, op.unitUse[best]));
    return;
  }
  op.boundBy = BoundBy::Latency;
  if (op.cycles == 0) {
    op.boundDetail = "did not run";
    return;
  }
  // The stall causes that explain it, largest first; the rest of the time
  // is issue (bundles that ran without stalling).
  std::vector<int> order;
  for (int k = 0; k < sim::kNumStallCauses; ++k)
    if (op.stalls[k] > 0) order.push_back(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return op.stalls[a] > op.stalls[b]; });
  std::string detail;
  for (size_t i = 0; i < order.size() && i < 2; ++i)
    detail += fmt::format("{}{} {:.0f}%", detail.empty() ? "" : ", ",
                          sim::stallCauseName(sim::StallCause(order[i])),
                          100.0 * ratio(double(op.stalls[order[i]]), cycles));
  double issue = ratio(cycles - double(op.stallCycles), cycles);
  detail += fmt::format("{}issue {:.0f}%", detail.empty() ? "" : ", ", 100.0 * issue);
  op.boundDetail = detail;
}

}  // namespace tpusim::prof
