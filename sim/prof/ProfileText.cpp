#include "sim/prof/ProfileText.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace tpusim::prof {
namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

std::string humanCount(double v) {
  const char* units[] = {"", " k", " M", " G", " T", " P"};
  int u = 0;
  while (std::abs(v) >= 1000 && u < 5) v /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}{}", v, units[u]);
}

std::string humanRate(double v, const char* unit) {
  std::string n = humanCount(v);
  return n + (n.back() == ' ' || std::isalpha(static_cast<unsigned char>(n.back())) ? "" : " ") +
         unit;
}

std::string humanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(b) >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.3g} {}", b, units[u]);
}

std::string overviewText(const Profile& p) {
  const Overview& o = p.overview;
  const ChipPeaks& k = p.peaks;
  const double step = double(o.stepCycles) * double(k.cores);
  std::string out = fmt::format("profile: {} on {}\n", p.program, k.chip);
  out += fmt::format("  step            {} cycles, {:.3f} us at {:.3f} GHz\n", o.stepCycles,
                     o.stepSeconds * 1e6, k.clockHz / 1e9);
  out += fmt::format(
      "  FLOP/s          {}FLOP/s ({:.1f}% of {}FLOP/s MXU peak), MXU "
      "utilization {:.1f}%\n",
      humanCount(o.flopsPerSecond), o.flopsPercentOfPeak,
      humanCount(k.mxuFlopsPerCycle * k.clockHz * double(k.cores)), 100.0 * o.mxuUtilization);
  out += fmt::format("  HBM bandwidth   {}B/s ({:.1f}% of {}B/s peak), {} moved\n",
                     humanCount(o.hbmBytesPerSecond), o.hbmPercentOfPeak,
                     humanCount(k.hbmBytesPerCycle * k.clockHz * double(k.cores)),
                     humanBytes(double(o.hbmBytes)));
  out += fmt::format(
      "  time split      compute-bound {:.1f}%, memory-bound {:.1f}%, latency-bound {:.1f}%\n",
      100.0 * ratio(double(o.computeBoundCycles), step),
      100.0 * ratio(double(o.memoryBoundCycles), step),
      100.0 * ratio(double(o.latencyBoundCycles), step));
  std::vector<int> order;
  for (int s = 0; s < sim::kNumStallCauses; ++s)
    if (o.stalls[s] > 0) order.push_back(s);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return o.stalls[a] > o.stalls[b]; });
  out += fmt::format("  stalls          {:.1f}% of the step", 100.0 * ratio(o.stallCycles, step));
  for (size_t i = 0; i < order.size() && i < 4; ++i)
    out += fmt::format("{} {} {:.1f}%", i == 0 ? ":" : ",",
                       sim::stallCauseName(sim::StallCause(order[i])),
                       100.0 * ratio(double(o.stalls[order[i]]), step));
  out += "\n  by category    ";
  for (size_t i = 0; i < p.categories.size() && i < 5; ++i) {
    const CategorySummary& c = p.categories[i];
    out += fmt::format("{} {} {:.1f}% ({} ops)", i == 0 ? "" : ",", categoryName(c.category),
                       100.0 * ratio(double(c.cycles), step), c.ops);
  }
  out += "\n";
  if (p.memory.present)
    out += fmt::format(
        "  HBM memory      peak {} live at step {} of {} ({:.1f}% of {})\n",
        humanBytes(double(p.memory.peakLiveBytes)), p.memory.peakStep, p.memory.steps.size(),
        100.0 * ratio(double(p.memory.peakLiveBytes), double(p.memory.capacityBytes)),
        humanBytes(double(p.memory.capacityBytes)));
  if (p.pod.present) {
    double bytes = 0, busiest = 0;
    std::string busiestName;
    for (const PodLink& l : p.pod.links) {
      bytes += l.bytes;
      if (l.utilization > busiest) busiest = l.utilization, busiestName = l.name;
    }
    out += fmt::format(
        "  pod             {} ({} chips): this profile is device {} ({}); ICI {} "
        "over {} links",
        p.pod.topology, p.pod.chips.size(), p.pod.device, p.pod.chosenBy, humanBytes(bytes),
        p.pod.links.size());
    if (!busiestName.empty())
      out += fmt::format(", busiest {:.1f}% ({})", 100.0 * busiest, busiestName);
    out += "\n";
  }
  if (!o.findings.empty()) {
    out += "findings:\n";
    for (const std::string& f : o.findings) out += "  - " + f + "\n";
  }
  return out;
}

std::string opTableText(const Profile& p, const OpTableOptions& opt) {
  const double step = double(p.overview.stepCycles) * double(p.peaks.cores);
  size_t width = 24;
  for (const FoldedOp& f : p.folded) width = std::max(width, f.folded.size() + 2);
  width = std::min<size_t>(width, 60);
  auto row = [&](const std::string& label, const OpProfile& t, size_t n) {
    std::string name = label.size() > width ? label.substr(0, width - 3) + "..." : label;
    return fmt::format("  {:<{}} {:>5} {:>12} {:>6.1f}% {:>9} {:>9} {:>8.1f} {:>6.1f}% {:>7}  {}\n",
                       name, width, n, t.cycles, 100.0 * ratio(double(t.cycles), step),
                       humanCount(t.flops), humanBytes(double(t.hbmBytes())), t.intensity,
                       100.0 * t.rooflineEfficiency, boundByName(t.boundBy), t.boundDetail);
  };
  std::string out = fmt::format(
      "op profile (ops folded across layers, most cycles first; %roof = roofline efficiency)\n"
      "  {:<{}} {:>5} {:>12} {:>7} {:>9} {:>9} {:>8} {:>7} {:>7}  {}\n",
      "category / op", width, "n", "cycles", "%step", "FLOPs", "HBM", "FLOP/B", "%roof", "bound",
      "why");
  for (const CategorySummary& c : p.categories) {
    OpProfile total;
    total.cycles = c.cycles;
    total.flops = c.flops;
    std::vector<const FoldedOp*> rows;
    for (const FoldedOp& f : p.folded)
      if (f.category == c.category) rows.push_back(&f);
    out += fmt::format("  {:<{}} {:>5} {:>12} {:>6.1f}% {:>9} {:>9}\n", categoryName(c.category),
                       width, c.ops, c.cycles, 100.0 * ratio(double(c.cycles), step),
                       humanCount(c.flops), humanBytes(double(c.hbmBytes)));
    size_t shown = 0;
    for (const FoldedOp* f : rows) {
      if (opt.rowsPerCategory > 0 && shown == opt.rowsPerCategory) break;
      ++shown;
      out += row("  " + f->folded, f->total, f->ops.size());
      if (!opt.expandLayers) continue;
      for (size_t i : f->ops) {
        const OpProfile& op = p.ops[i];
        std::string label =
            op.layer >= 0 ? fmt::format("    layer {}: {}", op.layer, op.name) : "    " + op.name;
        out += row(label, op, 1);
      }
    }
    if (shown < rows.size()) {
      int64_t rest = 0;
      for (size_t i = shown; i < rows.size(); ++i) rest += rows[i]->total.cycles;
      out += fmt::format("    ... {} more, {:.1f}% of the step\n", rows.size() - shown,
                         100.0 * ratio(double(rest), step));
    }
  }
  if (!p.layers.empty()) {
    out += "\nper layer\n";
    for (const LayerSummary& l : p.layers)
      out += fmt::format("  {:<20} {:>5} ops {:>12} cycles {:>6.1f}% {:>9}FLOP {:>9}\n",
                         l.layer >= 0 ? fmt::format("layer {}", l.layer) : "outside layers", l.ops,
                         l.cycles, 100.0 * ratio(double(l.cycles), step), humanCount(l.flops),
                         humanBytes(double(l.hbmBytes)));
  }
  return out;
}

}  // namespace tpusim::prof
