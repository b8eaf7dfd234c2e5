#include "sim/prof/HtmlReport.h"

#include "isa/support/MarkupEscape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/prof/ProfileText.h"

namespace tpusim::prof {
namespace {

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

std::string esc(const std::string& s) { return support::escapeMarkup(s); }

// One colour per category, the same in every chart.
const char* colorOf(Category c) {
  static const char* kColors[kNumCategories] = {"#4e79a7", "#f28e2b", "#59a14f",
                                                "#b07aa1", "#edc948", "#e15759",
                                                "#76b7b2", "#9c755f", "#bab0ac"};
  return kColors[int(c)];
}

const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
.sub{color:#666}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:150px}
.card .v{font-size:20px;font-weight:600}.card .l{color:#666;font-size:12px}
table{border-collapse:collapse;font-size:13px;width:100%}
th,td{padding:3px 6px;text-align:right;border-bottom:1px solid #eee;white-space:nowrap}
td.why{white-space:normal;text-align:left;min-width:160px}
th{cursor:pointer;background:#f6f6f6;position:sticky;top:0}th.l,td.l{text-align:left}
tr.cat td{font-weight:600;background:#fafafa;cursor:pointer}
tr.inst td{color:#555;font-size:12px}tr.fold td.l{cursor:pointer}
.hidden{display:none}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
.bound-latency{color:#b33}.bound-HBM{color:#a60}.bound-MXU{color:#264}.bound-VPU{color:#264}
svg text{font-size:11px;fill:#333}.legend span{margin-right:12px;font-size:12px}
ul.findings li{margin:4px 0}
)";

// Sorting and expanding the op table: folded rows belong to their category
// (data-cat) and carry their instances (data-fold) below them.
const char* kScript = R"(
function toggleCat(cat){
  var rows=document.querySelectorAll('tr[data-cat="'+cat+'"]');
  var hide=rows.length&&!rows[0].classList.contains('hidden');
  rows.forEach(function(r){if(hide||!r.classList.contains('inst'))r.classList.toggle('hidden',hide);});
}
function toggleFold(id){
  document.querySelectorAll('tr[data-fold="'+id+'"]').forEach(function(r){r.classList.toggle('hidden');});
}
function sortOps(col){
  var table=document.getElementById('ops');var body=table.tBodies[0];
  var dir=table.getAttribute('data-col')==String(col)&&table.getAttribute('data-dir')=='desc'?'asc':'desc';
  table.setAttribute('data-col',col);table.setAttribute('data-dir',dir);
  var groups=[],cur=null;
  Array.prototype.slice.call(body.rows).forEach(function(r){
    if(r.classList.contains('cat')){cur={head:r,folds:[]};groups.push(cur);}
    else if(r.classList.contains('fold')){cur.folds.push({row:r,inst:[]});}
    else if(cur&&cur.folds.length){cur.folds[cur.folds.length-1].inst.push(r);}
  });
  function key(r){var c=r.cells[col];var v=c.getAttribute('data-v');return v===null?c.textContent:parseFloat(v);}
  groups.forEach(function(g){
    g.folds.sort(function(a,b){var x=key(a.row),y=key(b.row);var s=x<y?-1:x>y?1:0;return dir=='asc'?s:-s;});
    body.appendChild(g.head);
    g.folds.forEach(function(f){body.appendChild(f.row);f.inst.forEach(function(i){body.appendChild(i);});});
  });
}
// report.html#sort=N opens the op table sorted by column N.
window.addEventListener('load',function(){
  var m=/sort=(\d+)/.exec(location.hash);if(m)sortOps(parseInt(m[1],10));
  document.body.setAttribute('data-js','ready');
});
)";

std::string card(const std::string& id, const std::string& value, const std::string& label) {
  return fmt::format(
      "<div class=\"card\"><div class=\"v\" id=\"{}\">{}</div><div "
      "class=\"l\">{}</div></div>\n",
      id, esc(value), esc(label));
}

// A horizontal stacked bar of (label, value, colour) parts, `width` pixels.
std::string stackedBar(const std::vector<std::tuple<std::string, double, std::string>>& parts,
                       double total, int width, int height) {
  std::string out = fmt::format("<svg width=\"{}\" height=\"{}\">", width, height);
  double x = 0;
  for (const auto& [label, v, color] : parts) {
    double w = ratio(v, total) * width;
    if (w <= 0) continue;
    out += fmt::format(
        "<rect x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
        "<title>{}: {:.1f}%</title></rect>",
        x, w, height, color, esc(label), 100.0 * ratio(v, total));
    x += w;
  }
  return out + "</svg>";
}

std::string overviewSection(const Profile& p) {
  const Overview& o = p.overview;
  const ChipPeaks& k = p.peaks;
  const double step = double(o.stepCycles) * double(k.cores);
  std::string out = "<h2 id=\"overview\">Overview</h2>\n<div class=\"cards\">\n";
  out += card("ov-step-us", fmt::format("{:.3f} us", o.stepSeconds * 1e6),
              fmt::format("step time ({} cycles)", o.stepCycles));
  out += card("ov-flops", fmt::format("{}FLOP/s", humanCount(o.flopsPerSecond)),
              fmt::format("{:.1f}% of {}FLOP/s MXU peak", o.flopsPercentOfPeak,
                          humanCount(k.mxuFlopsPerCycle * k.clockHz * double(k.cores))));
  out += card("ov-mxu", fmt::format("{:.1f}%", 100.0 * o.mxuUtilization), "MXU utilization");
  out += card("ov-hbm", fmt::format("{}B/s", humanCount(o.hbmBytesPerSecond)),
              fmt::format("HBM bandwidth, {:.1f}% of {}B/s peak", o.hbmPercentOfPeak,
                          humanCount(k.hbmBytesPerCycle * k.clockHz * double(k.cores))));
  out += card("ov-stalled", fmt::format("{:.1f}%", 100.0 * ratio(double(o.stallCycles), step)),
              "of the step stalled");
  out += "</div>\n";
  out += "<p><b>Time split</b> (by what bounds each op)</p>\n";
  out += stackedBar({{"compute-bound", double(o.computeBoundCycles), "#59a14f"},
                     {"memory-bound", double(o.memoryBoundCycles), "#f28e2b"},
                     {"latency-bound", double(o.latencyBoundCycles), "#e15759"}},
                    step, 600, 18);
  out += fmt::format(
      "<div class=\"legend\"><span><i class=\"sw\" style=\"background:#59a14f\"></i>compute-bound "
      "{:.1f}%</span><span><i class=\"sw\" style=\"background:#f28e2b\"></i>memory-bound "
      "{:.1f}%</span><span><i class=\"sw\" style=\"background:#e15759\"></i>latency-bound "
      "{:.1f}%</span></div>\n",
      100.0 * ratio(double(o.computeBoundCycles), step),
      100.0 * ratio(double(o.memoryBoundCycles), step),
      100.0 * ratio(double(o.latencyBoundCycles), step));
  out += "<p><b>Time by category</b></p>\n";
  std::vector<std::tuple<std::string, double, std::string>> parts;
  std::string legend = "<div class=\"legend\">";
  for (const CategorySummary& c : p.categories) {
    parts.emplace_back(categoryName(c.category), double(c.cycles), colorOf(c.category));
    legend += fmt::format("<span><i class=\"sw\" style=\"background:{}\"></i>{} {:.1f}%</span>",
                          colorOf(c.category), categoryName(c.category),
                          100.0 * ratio(double(c.cycles), step));
  }
  out += stackedBar(parts, step, 600, 18) + legend + "</div>\n";
  out += "<p><b>Stalls</b> (% of the step)</p>\n<table style=\"width:auto\" id=\"stalls\">";
  for (int s = 0; s < sim::kNumStallCauses; ++s)
    if (o.stalls[s] > 0)
      out += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1f}%</td></tr>",
                         sim::stallCauseName(sim::StallCause(s)), o.stalls[s],
                         100.0 * ratio(double(o.stalls[s]), step));
  out += "</table>\n";
  if (!o.findings.empty()) {
    out += "<p><b>Findings</b></p>\n<ul class=\"findings\" id=\"findings\">\n";
    for (const std::string& f : o.findings) out += "<li>" + esc(f) + "</li>\n";
    out += "</ul>\n";
  }
  return out;
}

std::string opCells(const OpProfile& t, double step, size_t n) {
  return fmt::format(
      "<td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{:.2f}%</td>"
      "<td data-v=\"{}\">{}</td><td data-v=\"{}\">{}</td><td data-v=\"{}\">{:.1f}</td>"
      "<td data-v=\"{}\">{}</td><td data-v=\"{}\">{:.1f}%</td><td "
      "class=\"l bound-{}\">{}</td><td data-v=\"{}\">{:.1f}%</td><td "
      "data-v=\"{}\">{}</td><td class=\"why\">{}</td>",
      n, n, t.cycles, t.cycles, ratio(double(t.cycles), step),
      100.0 * ratio(double(t.cycles), step), t.flops, humanCount(t.flops), t.hbmBytes(),
      humanBytes(double(t.hbmBytes())), t.intensity, t.intensity, t.flopsPerSecond,
      humanRate(t.flopsPerSecond, "FLOP/s"), t.rooflineEfficiency, 100.0 * t.rooflineEfficiency,
      boundByName(t.boundBy), boundByName(t.boundBy), t.dmaStallShare, 100.0 * t.dmaStallShare,
      t.wastedCycles, humanCount(t.wastedCycles), esc(t.boundDetail));
}

std::string opTableSection(const Profile& p) {
  const double step = double(p.overview.stepCycles) * double(p.peaks.cores);
  std::string out =
      "<h2 id=\"op-profile\">Op profile</h2>\n<p class=\"sub\">Grouped by category; the same op "
      "across layers is folded into one row (click it for each instance, click a category to "
      "collapse it, click a column to sort). %roof: roofline efficiency (the least time the "
      "op's FLOPs and bytes allow on this chip over its time). Wasted: cycles x (1 - "
      "%roof).</p>\n<table id=\"ops\"><thead><tr>";
  const char* heads[] = {"op",        "n",      "cycles", "% step", "FLOPs",
                         "HBM bytes", "FLOP/B", "FLOP/s", "% roof", "bound by",
                         "DMA stall", "wasted", "why"};
  for (int c = 0; c < 13; ++c)
    out += fmt::format("<th class=\"{}\" onclick=\"sortOps({})\">{}</th>",
                       c == 0 || c == 9 || c == 12 ? "l" : "", c, heads[c]);
  out += "</tr></thead><tbody>\n";
  size_t foldId = 0;
  for (const CategorySummary& c : p.categories) {
    const int cat = int(c.category);
    out += fmt::format(
        "<tr class=\"cat\" onclick=\"toggleCat({})\"><td class=\"l\"><i class=\"sw\" "
        "style=\"background:{}\"></i>{}</td><td>{}</td><td>{}</td><td>{:.2f}%</td><td>{}</td>"
        "<td>{}</td><td colspan=\"7\"></td></tr>\n",
        cat, colorOf(c.category), categoryName(c.category), c.ops, c.cycles,
        100.0 * ratio(double(c.cycles), step), humanCount(c.flops), humanBytes(double(c.hbmBytes)));
    for (const FoldedOp& f : p.folded) {
      if (f.category != c.category) continue;
      ++foldId;
      out += fmt::format(
          "<tr class=\"fold\" data-cat=\"{}\"><td class=\"l\" "
          "onclick=\"toggleFold({})\" title=\"{}\">&#9656; {}</td>{}</tr>\n",
          cat, foldId, esc(f.folded), esc(f.folded), opCells(f.total, step, f.ops.size()));
      for (size_t i : f.ops) {
        const OpProfile& op = p.ops[i];
        std::string label =
            op.layer >= 0 ? fmt::format("layer {}: {}", op.layer, op.name) : op.name;
        out += fmt::format(
            "<tr class=\"inst hidden\" data-cat=\"{}\" data-fold=\"{}\"><td "
            "class=\"l\" title=\"{}\">&nbsp;&nbsp;&nbsp;{}</td>{}</tr>\n",
            cat, foldId, esc(op.opName + " " + op.source), esc(label), opCells(op, step, 1));
      }
    }
  }
  return out + "</tbody></table>\n";
}

// log10 axis helpers for the roofline chart.
struct LogAxis {
  double lo, hi;  // decades
  double px0, px1;
  double at(double v) const { return px0 + (std::log10(v) - lo) / (hi - lo) * (px1 - px0); }
};

std::string rooflineSection(const Profile& p) {
  const ChipPeaks& k = p.peaks;
  const double hz = k.clockHz * double(k.cores);
  const double mxu = k.mxuFlopsPerCycle * hz, vpu = k.vpuFlopsPerCycle * hz;
  const double hbm = k.hbmBytesPerCycle * hz, vmem = k.vmemBytesPerCycle * hz;
  const double step = double(p.overview.stepCycles) * double(k.cores);
  // Points: folded ops that did FLOPs and moved HBM bytes.
  double xMin = 1e300, xMax = 0, yMin = 1e300;
  size_t plotted = 0, unplotted = 0;
  for (const FoldedOp& f : p.folded) {
    if (f.total.flops <= 0 || f.total.hbmBytes() <= 0 || f.total.cycles <= 0) {
      unplotted += f.total.cycles > 0;
      continue;
    }
    ++plotted;
    xMin = std::min(xMin, f.total.intensity);
    xMax = std::max(xMax, f.total.intensity);
    yMin = std::min(yMin, f.total.flopsPerSecond);
  }
  const double ridge = ratio(mxu, hbm);
  LogAxis x{std::floor(std::log10(std::min(plotted ? xMin : 1.0, 1.0))) - 0.0,
            std::ceil(std::log10(std::max({plotted ? xMax : 1.0, ridge * 4, 10.0}))), 70, 860};
  LogAxis y{std::floor(std::log10(std::min(plotted ? yMin : vpu / 100, vpu / 10))),
            std::ceil(std::log10(mxu * 2)), 440, 20};
  std::string out =
      "<h2 id=\"roofline-chart\">Roofline</h2>\n<p class=\"sub\">Log-log: operational intensity "
      "(FLOPs per HBM byte) against achieved FLOP/s, one point per folded op, its area "
      "proportional to its time (hover for its name). Roofs: MXU and VPU peak (flat), HBM and "
      "VMEM bandwidth (slopes). An op far below the roof over its intensity has the most to "
      "gain.</p>\n";
  out += "<svg id=\"roofline\" width=\"900\" height=\"480\" role=\"img\">\n";
  out += "<rect x=\"70\" y=\"20\" width=\"790\" height=\"420\" fill=\"none\" stroke=\"#999\"/>\n";
  for (double d = x.lo; d <= x.hi; d += 1) {
    double px = x.at(std::pow(10.0, d));
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"20\" x2=\"{0:.1f}\" y2=\"440\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"456\" text-anchor=\"middle\">1e{1:.0f}</text>\n",
        px, d);
  }
  for (double d = y.lo; d <= y.hi; d += 1) {
    double py = y.at(std::pow(10.0, d));
    out += fmt::format(
        "<line x1=\"70\" y1=\"{0:.1f}\" x2=\"860\" y2=\"{0:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"64\" y=\"{0:.1f}\" text-anchor=\"end\">1e{1:.0f}</text>\n",
        py, d);
  }
  out +=
      "<text x=\"465\" y=\"474\" text-anchor=\"middle\">operational intensity (FLOP / HBM "
      "byte)</text><text x=\"14\" y=\"230\" transform=\"rotate(-90 14 230)\" "
      "text-anchor=\"middle\">FLOP/s</text>\n";
  // A roof: FLOP/s = min(peak, intensity x bandwidth), clipped to the chart.
  auto roof = [&](double peak, double bw, const char* color, const char* label, const char* id) {
    double x0 = std::pow(10.0, x.lo), x1 = std::pow(10.0, x.hi);
    double knee = std::clamp(peak / bw, x0, x1);
    double yLo = std::pow(10.0, y.lo);
    double xs = std::max(x0, yLo / bw);
    std::string pts = fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}", x.at(xs),
                                  y.at(std::max(yLo, xs * bw)), x.at(knee),
                                  y.at(std::min(peak, knee * bw)), x.at(x1), y.at(peak));
    return fmt::format(
        "<polyline id=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\"><title>{}</title></polyline>\n",
        id, pts, color, esc(label));
  };
  out += roof(mxu, hbm, "#264",
              fmt::format("MXU peak {}FLOP/s over HBM {}B/s (ridge {:.0f} FLOP/B)", humanCount(mxu),
                          humanCount(hbm), ridge)
                  .c_str(),
              "roof-mxu-hbm");
  out += roof(vpu, hbm, "#7a7", fmt::format("VPU peak {}FLOP/s over HBM", humanCount(vpu)).c_str(),
              "roof-vpu-hbm");
  out += roof(
      mxu, vmem, "#99c",
      fmt::format("MXU peak over VMEM {}B/s (vector loads and stores)", humanCount(vmem)).c_str(),
      "roof-mxu-vmem");
  // Slope labels where each bandwidth roof crosses a tenth of the VPU peak.
  for (auto [bw, label] : {std::pair<double, std::string>{hbm, "HBM " + humanRate(hbm, "B/s")},
                           {vmem, "VMEM " + humanRate(vmem, "B/s")}}) {
    double at = vpu / 10 / bw;
    if (at > std::pow(10.0, x.lo) && at < std::pow(10.0, x.hi))
      out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x.at(at) + 6,
                         y.at(vpu / 10) + 4, esc(label));
  }
  out += fmt::format(
      "<text x=\"856\" y=\"{:.1f}\" text-anchor=\"end\">MXU peak {}FLOP/s</text>"
      "<text x=\"856\" y=\"{:.1f}\" text-anchor=\"end\">VPU peak {}FLOP/s</text>\n",
      y.at(mxu) - 4, humanCount(mxu), y.at(vpu) - 4, humanCount(vpu));
  for (const FoldedOp& f : p.folded) {
    const OpProfile& t = f.total;
    if (t.flops <= 0 || t.hbmBytes() <= 0 || t.cycles <= 0) continue;
    double r = 3.0 + 22.0 * std::sqrt(ratio(double(t.cycles), step));
    out += fmt::format(
        "<circle class=\"op-point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" "
        "fill-opacity=\"0.6\" stroke=\"#333\" stroke-width=\"0.5\"><title>{} ({}): {:.1f}% of "
        "the step, {:.1f} FLOP/B, {}FLOP/s, {:.0f}% of roofline, {}-bound</title></circle>\n",
        x.at(std::max(t.intensity, std::pow(10.0, x.lo))),
        y.at(std::max(t.flopsPerSecond, std::pow(10.0, y.lo))), r, colorOf(f.category),
        esc(f.folded), categoryName(f.category), 100.0 * ratio(double(t.cycles), step), t.intensity,
        humanCount(t.flopsPerSecond), 100.0 * t.rooflineEfficiency, boundByName(t.boundBy));
  }
  out += "</svg>\n";
  out += fmt::format(
      "<p class=\"sub\">{} ops plotted; {} without FLOPs or HBM bytes (data "
      "movement, control) are in the table only.</p>\n",
      plotted, unplotted);
  return out;
}

std::string layersSection(const Profile& p) {
  if (p.layers.empty()) return "";
  const double step = double(p.overview.stepCycles) * double(p.peaks.cores);
  int64_t most = 1;
  for (const LayerSummary& l : p.layers) most = std::max(most, l.cycles);
  std::string out =
      "<h2 id=\"layers\">Per layer</h2>\n<table id=\"layer-table\" "
      "style=\"width:auto\"><tr><th class=\"l\">layer</th><th>ops</th><th>cycles</"
      "th><th>% step</th><th>FLOPs</th><th>HBM bytes</th><th "
      "class=\"l\">time by category</th></tr>\n";
  for (const LayerSummary& l : p.layers) {
    std::vector<std::tuple<std::string, double, std::string>> parts;
    for (int c = 0; c < kNumCategories; ++c)
      parts.emplace_back(categoryName(Category(c)), double(l.cyclesByCategory[c]),
                         colorOf(Category(c)));
    int width = int(std::max(2.0, 400.0 * ratio(double(l.cycles), double(most))));
    out += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{}</"
        "td><td>{}</td><td class=\"l\">{}</td></tr>\n",
        l.layer >= 0 ? fmt::format("layer {}", l.layer) : "outside layers", l.ops, l.cycles,
        100.0 * ratio(double(l.cycles), step), humanCount(l.flops), humanBytes(double(l.hbmBytes)),
        stackedBar(parts, double(l.cycles), width, 12));
  }
  return out + "</table>\n";
}

std::string memorySection(const Profile& p) {
  const MemoryProfile& m = p.memory;
  std::string out = "<h2 id=\"memory\">Memory viewer</h2>\n";
  if (!m.present || m.liveBytes.empty())
    return out +
           "<p>No buffer assignment: the program was not compiled from HLO by this run.</p>\n";
  out += fmt::format(
      "<p>HBM bytes live over the program's order (buffer assignment of the entry computation). "
      "Peak <b id=\"mem-peak\">{}</b> ({} bytes) at step {} ({}), {:.2f}% of {}; heap high-water "
      "mark with reuse {}.</p>\n",
      humanBytes(double(m.peakLiveBytes)), m.peakLiveBytes, m.peakStep,
      esc(m.peakStep < int64_t(m.steps.size()) ? m.steps[size_t(m.peakStep)] : ""),
      100.0 * ratio(double(m.peakLiveBytes), double(m.capacityBytes)),
      humanBytes(double(m.capacityBytes)), humanBytes(double(m.heapPeakBytes)));
  const double n = double(m.liveBytes.size());
  const double top = double(std::max<int64_t>(m.peakLiveBytes, 1)) * 1.1;
  auto px = [&](double s) { return 70.0 + s / std::max(n, 1.0) * 790.0; };
  auto py = [&](double b) { return 260.0 - b / top * 240.0; };
  std::string pts = fmt::format("{:.1f},{:.1f}", px(0), py(0));
  for (size_t s = 0; s < m.liveBytes.size(); ++s)
    pts += fmt::format(" {:.1f},{:.1f} {:.1f},{:.1f}", px(double(s)), py(double(m.liveBytes[s])),
                       px(double(s + 1)), py(double(m.liveBytes[s])));
  pts += fmt::format(" {:.1f},{:.1f}", px(n), py(0));
  out += "<svg id=\"memory-chart\" width=\"900\" height=\"290\">\n";
  out += fmt::format(
      "<polygon points=\"{}\" fill=\"#4e79a7\" fill-opacity=\"0.5\" "
      "stroke=\"#4e79a7\"/>\n",
      pts);
  out += fmt::format(
      "<line x1=\"{0:.1f}\" y1=\"20\" x2=\"{0:.1f}\" y2=\"260\" stroke=\"#e15759\" "
      "stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"14\" "
      "text-anchor=\"middle\">peak {1}</text>\n",
      px(double(m.peakStep) + 0.5), humanBytes(double(m.peakLiveBytes)));
  out += "<line x1=\"70\" y1=\"260\" x2=\"860\" y2=\"260\" stroke=\"#999\"/>";
  out += fmt::format(
      "<text x=\"64\" y=\"{:.1f}\" text-anchor=\"end\">{}</text><text x=\"64\" "
      "y=\"260\" text-anchor=\"end\">0</text><text x=\"465\" y=\"282\" "
      "text-anchor=\"middle\">program order (step of the entry schedule, {} "
      "steps)</text>\n",
      py(double(m.peakLiveBytes)), humanBytes(double(m.peakLiveBytes)), m.liveBytes.size());
  out += "</svg>\n<p><b>Buffers live at the peak</b>: ";
  for (const auto& [kind, bytes] : m.atPeakByKind)
    out += fmt::format("{} {} ({:.0f}%); ", kind, humanBytes(double(bytes)),
                       100.0 * ratio(double(bytes), double(m.peakLiveBytes)));
  out +=
      "</p>\n<table style=\"width:auto\" id=\"peak-buffers\"><tr><th class=\"l\">buffer</th><th "
      "class=\"l\">kind</th><th class=\"l\">shape</th><th>bytes</th><th>live "
      "steps</th></tr>\n";
  for (size_t i = 0; i < m.atPeak.size() && i < 25; ++i) {
    const MemoryBuffer& b = m.buffers[m.atPeak[i]];
    out += fmt::format(
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td "
        "class=\"l\">{}</td><td>{}</td><td>{}-{}</td></tr>\n",
        esc(b.name), esc(b.kind), esc(b.shape), b.bytes, b.defineStep, b.lastUseStep);
  }
  if (m.atPeak.size() > 25)
    out += fmt::format("<tr><td class=\"l\" colspan=\"5\">... {} more</td></tr>\n",
                       m.atPeak.size() - 25);
  return out + "</table>\n";
}

std::string podSection(const Profile& p) {
  if (!p.pod.present) return "";
  const PodProfile& pod = p.pod;
  std::string out = fmt::format(
      "<h2 id=\"pod\">Pod</h2>\n<p>{} chips joined by ICI ({}; links {:.1f} GB/s one way, {} "
      "cycles per hop). Everything above is <b id=\"pod-device\">device {}</b> ({}); "
      "<code>--profile-device N</code> profiles another. The Perfetto trace has every chip and "
      "link.</p>\n",
      pod.chips.size(), esc(pod.topology), pod.linkBytesPerSecond / 1e9, pod.hopLatencyCycles,
      pod.device, esc(pod.chosenBy));
  out +=
      "<table style=\"width:auto\" id=\"pod-chips\"><tr><th>device</th><th>cycles</th><th "
      "class=\"l\">status</th><th>sync_wait cycles</th><th>ICI bytes out</th></tr>\n";
  for (const PodChip& c : pod.chips)
    out += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>\n",
        c.device == pod.device ? " style=\"font-weight:bold\"" : "", c.device, c.cycles,
        esc(c.status), c.syncWaitCycles, humanBytes(c.iciBytesOut));
  out +=
      "</table>\n<table style=\"width:auto\" id=\"pod-links\"><tr><th "
      "class=\"l\">link</th><th>bytes</th><th>flows</th><th>utilization</th></tr>\n";
  for (const PodLink& l : pod.links)
    out += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.2f}%</td></tr>\n",
                       esc(l.name), humanBytes(l.bytes), l.flows, 100.0 * l.utilization);
  return out + "</table>\n";
}

}  // namespace

std::string htmlReport(const Profile& p) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out +=
      fmt::format("<title>tpusim profile: {} on {}</title>\n", esc(p.program), esc(p.peaks.chip));
  out += std::string("<style>") + kStyle + "</style>\n</head><body>\n";
  out += fmt::format("<h1>tpusim profile: {} on {}</h1>\n", esc(p.program), esc(p.peaks.chip));
  out +=
      "<p class=\"sub\"><a href=\"#overview\">overview</a> &middot; <a "
      "href=\"#op-profile\">op profile</a> &middot; <a href=\"#roofline-chart\">roofline</a>";
  if (!p.layers.empty()) out += " &middot; <a href=\"#layers\">per layer</a>";
  if (p.pod.present) out += " &middot; <a href=\"#pod\">pod</a>";
  out +=
      " &middot; <a href=\"#memory\">memory</a> &middot; <a href=\"profile.json\">profile.json</a>";
  if (!p.trace.empty())
    out += fmt::format(
        " &middot; <a id=\"trace-link\" href=\"{0}\">{0}</a> (open it in "
        "ui.perfetto.dev or chrome://tracing)",
        esc(p.trace));
  out += "</p>\n";
  out += overviewSection(p);
  out += opTableSection(p);
  out += rooflineSection(p);
  out += layersSection(p);
  out += memorySection(p);
  out += podSection(p);
  out += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return out;
}

}  // namespace tpusim::prof
