#include "sim/prof/Findings.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tpusim::prof {
namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

std::string pct(double share) { return fmt::format("{:.0f}%", 100.0 * share); }

// "a, b and c" of the first `n` folded names.
std::string names(const std::vector<std::string>& all, size_t n) {
  std::string out;
  for (size_t i = 0; i < all.size() && i < n; ++i)
    out += (i == 0 ? "" : i + 1 == std::min(all.size(), n) ? " and " : ", ") + all[i];
  return out;
}

std::string bytes(int64_t b) {
  if (b >= int64_t(1) << 30) return fmt::format("{:.2f} GiB", double(b) / double(int64_t(1) << 30));
  if (b >= int64_t(1) << 20) return fmt::format("{:.1f} MiB", double(b) / double(1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", double(b) / 1024.0);
  return fmt::format("{} B", b);
}

}  // namespace

std::vector<std::string> findingsOf(const Profile& p) {
  std::vector<std::string> out;
  const Overview& o = p.overview;
  const double total = double(o.stepCycles) * double(p.peaks.cores);
  if (total <= 0) return out;

  // Where the step goes.
  if (!p.categories.empty()) {
    const CategorySummary& top = p.categories.front();
    size_t bound = size_t(std::max_element(top.cyclesByBound.begin(), top.cyclesByBound.end()) -
                          top.cyclesByBound.begin());
    out.push_back(fmt::format("{} of the step is {} ({} ops); {} of that time is in {}-bound ops.",
                              pct(ratio(double(top.cycles), total)), categoryName(top.category),
                              top.ops,
                              pct(ratio(double(top.cyclesByBound[bound]), double(top.cycles))),
                              boundByName(BoundBy(bound))));
  }

  // Ops that wait on DMA rather than compute: memory traffic not overlapped.
  {
    std::map<Category, int64_t> cycles;
    std::map<Category, int64_t> hbm;
    std::map<Category, std::vector<std::string>> who;
    for (const FoldedOp& f : p.folded) {
      const OpProfile& t = f.total;
      if (t.boundBy != BoundBy::Latency || t.dmaStallShare < 0.25) continue;
      // A collective waits on ICI and on the other chips, not on HBM: the pod finding below
      // says how much of it is waiting, and "overlap with compute" is not its remedy.
      if (f.category == Category::Collective) continue;
      cycles[f.category] += t.cycles;
      hbm[f.category] += t.hbmBytes();
      who[f.category].push_back(f.folded);
    }
    std::vector<std::pair<int64_t, Category>> order;
    for (auto& [c, n] : cycles) order.push_back({n, c});
    std::sort(order.rbegin(), order.rend());
    for (size_t i = 0; i < order.size() && i < 2; ++i) {
      Category c = order[i].second;
      double share = ratio(double(order[i].first), total);
      if (share < 0.05) break;
      out.push_back(fmt::format(
          "{} of the step is {} ops stalled on DMA at {} of HBM peak bandwidth (latency-bound, "
          "not bandwidth-bound: overlap their DMAs with compute): {}.",
          pct(share), categoryName(c),
          pct(ratio(double(hbm[c]), p.peaks.hbmBytesPerCycle * double(order[i].first))),
          names(who[c], 3)));
    }
  }

  // Matmuls against the ridge point.
  {
    int64_t cycles = 0, hbmBytes = 0;
    double flops = 0, mxuFlops = 0;
    for (const OpProfile& op : p.ops)
      if (op.category == Category::MatmulFusion) {
        cycles += op.cycles;
        flops += op.flops;
        mxuFlops += op.mxuFlops;
        hbmBytes += op.hbmBytes();
      }
    if (cycles > 0) {
      double ridge = ratio(p.peaks.mxuFlopsPerCycle, p.peaks.hbmBytesPerCycle);
      double intensity = ratio(flops, double(hbmBytes));
      out.push_back(fmt::format(
          "Matmul fusions take {} of the step at {} of MXU peak; their intensity, {:.0f} "
          "FLOP/byte, is {} the ridge point ({:.0f} FLOP/byte), so their roof is {}.",
          pct(ratio(double(cycles), total)),
          pct(ratio(mxuFlops, p.peaks.mxuFlopsPerCycle * double(cycles))), intensity,
          intensity >= ridge ? "above" : "below", ridge,
          intensity >= ridge ? "the MXU peak" : "HBM bandwidth"));
    }
  }

  // Where the most time sits under the roofline.
  {
    std::vector<const FoldedOp*> byWaste;
    for (const FoldedOp& f : p.folded) byWaste.push_back(&f);
    std::stable_sort(byWaste.begin(), byWaste.end(), [](const FoldedOp* a, const FoldedOp* b) {
      return a->total.wastedCycles > b->total.wastedCycles;
    });
    double waste = 0;
    std::vector<std::string> who;
    for (size_t i = 0; i < byWaste.size() && i < 3; ++i) {
      waste += byWaste[i]->total.wastedCycles;
      who.push_back(fmt::format("{} ({} of the step, {} of its roofline)", byWaste[i]->folded,
                                pct(ratio(byWaste[i]->total.cycles, total)),
                                pct(byWaste[i]->total.rooflineEfficiency)));
    }
    if (!who.empty() && waste > 0)
      out.push_back(fmt::format("Most time lost under the roofline ({} of the step): {}.",
                                pct(ratio(waste, total)), names(who, 3)));
  }

  if (o.dmaStallShare >= 0.05)
    out.push_back(
        fmt::format("{} of the step's core cycles stall waiting on DMA (sync_wait, "
                    "dma_queue_full).",
                    pct(o.dmaStallShare)));

  if (p.memory.present && p.memory.capacityBytes > 0) {
    const MemoryProfile& m = p.memory;
    std::string kind;
    int64_t most = -1;
    for (const auto& [k, b] : m.atPeakByKind)
      if (b > most) most = b, kind = k;
    out.push_back(fmt::format(
        "HBM use peaks at {} ({} of {}) at step {}{}; {} of it is {} buffers.",
        bytes(m.peakLiveBytes), pct(ratio(double(m.peakLiveBytes), double(m.capacityBytes))),
        bytes(m.capacityBytes), m.peakStep,
        m.peakStep < int64_t(m.steps.size()) ? " (" + m.steps[size_t(m.peakStep)] + ")" : "",
        pct(ratio(double(most), double(m.peakLiveBytes))), kind));
  }

  // A pod: how much of this chip's step the collectives take, and how much of
  // that is waiting (on the other chips reaching the collective, and on ICI).
  if (p.pod.present) {
    int64_t cycles = 0, waiting = 0, ops = 0;
    for (const OpProfile& op : p.ops)
      if (op.category == Category::Collective) {
        cycles += op.cycles;
        waiting += op.stalls[int(sim::StallCause::SyncWait)];
        ++ops;
      }
    int64_t fastest = o.stepCycles, slowest = 0;
    for (const PodChip& c : p.pod.chips) {
      fastest = std::min(fastest, c.cycles);
      slowest = std::max(slowest, c.cycles);
    }
    out.push_back(fmt::format(
        "Device {} of {} chips ({}): collectives take {} of its step ({} ops), {} of that "
        "waiting on flags (other chips and ICI transfers); the chips' steps range from {} to {} "
        "cycles.",
        p.pod.device, p.pod.chips.size(), p.pod.topology, pct(ratio(double(cycles), total)), ops,
        pct(ratio(double(waiting), double(cycles))), fastest, slowest));
  }
  return out;
}

}  // namespace tpusim::prof
