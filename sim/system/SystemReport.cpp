#include "sim/system/SystemReport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "isa/target/ChipJson.h"

namespace tpusim::sim {
namespace {

using nlohmann::ordered_json;

double round6(double x) { return std::round(x * 1e6) / 1e6; }

// Bytes on the links leaving a chip: its own transfers and what it forwards.
double bytesOut(const SystemResult& r, int chip) {
  double b = 0;
  for (const LinkReport& l : r.links)
    if (l.chip == chip) b += l.bytes;
  return b;
}

}  // namespace

ordered_json systemStatsJson(const SystemResult& r, const target::ChipConfig& chip,
                             const RunInfo& info) {
  ordered_json j;
  j["stats_version"] = 1;
  j["program"] = info.program;
  j["chip"] = chip.name;
  j["mode"] = info.mode;
  j["topology"] = r.topology;
  j["chips"] = r.chips.size();
  j["halted"] = r.halted;
  if (r.fault) {
    ordered_json f;
    f["kind"] = r.fault->kind;
    f["message"] = r.fault->message;
    f["chip"] = r.faultChip;
    f["cycle"] = r.fault->cycle;
    j["fault"] = f;
  } else {
    j["fault"] = nullptr;
  }
  j["step_cycles"] = r.cycles;
  j["simulated_seconds"] = round6(double(r.cycles) / chip.core.clock_hz * 1e6) / 1e6;
  ordered_json ici;
  ici["link_bytes_per_second"] = chip.ici.link_bytes_per_second;
  ici["link_bytes_per_cycle"] = round6(r.linkBytesPerCycle);
  ici["hop_latency_cycles"] = chip.ici.latency_cycles;
  ici["transfers"] = r.iciTransfers;
  ici["signals"] = r.iciSignals;
  ici["rate_updates"] = r.iciRateUpdates;
  double total = 0;
  for (const LinkReport& l : r.links) total += l.bytes;
  ici["link_bytes_total"] = int64_t(std::llround(total));
  j["ici"] = ici;
  ordered_json links = ordered_json::array();
  for (const LinkReport& l : r.links)
    links.push_back({{"link", l.name},
                     {"chip", l.chip},
                     {"dim", l.dim},
                     {"dir", l.dir == 0 ? "+" : "-"},
                     {"to", l.to},
                     {"bytes", int64_t(std::llround(l.bytes))},
                     {"flows", l.flows},
                     {"utilization", round6(l.utilization)}});
  j["links"] = links;
  ordered_json devices = ordered_json::array();
  for (size_t d = 0; d < r.chips.size(); ++d) {
    ordered_json dj = statsJson(r.chips[d], chip, info);
    dj.erase("chip_config");  // once, below
    dj.erase("stats_version");
    dj.erase("program");
    dj.erase("chip");
    dj.erase("mode");
    ordered_json g;
    g["device"] = d;
    for (auto it = dj.begin(); it != dj.end(); ++it) g[it.key()] = it.value();
    devices.push_back(g);
  }
  j["devices"] = devices;
  target::WriteOptions wo;
  wo.sources = false;
  j["chip_config"] = target::chipToJson(chip, wo);
  return j;
}

std::string systemSummaryText(const SystemResult& r, const target::ChipConfig& chip,
                              const RunInfo& info) {
  std::string out;
  out += fmt::format("tpusim: {} on {} x {} chips, topology {} ({} mode)\n", info.program,
                     chip.name, r.chips.size(), r.topology, info.mode);
  out += fmt::format("  status          {}\n", r.fault    ? "FAULT (" + r.fault->kind + ")"
                                               : r.halted ? "halted"
                                                          : "not halted");
  double seconds = double(r.cycles) / chip.core.clock_hz;
  out += fmt::format("  step            {} cycles (the slowest chip), {:.3f} us at {:.3f} GHz\n",
                     r.cycles, seconds * 1e6, chip.core.clock_hz / 1e9);
  double total = 0;
  for (const LinkReport& l : r.links) total += l.bytes;
  out += fmt::format(
      "  ICI             {} transfer(s), {} signal(s), {:.0f} link bytes; links {:.1f} GB/s one "
      "way, {} cycles per hop\n",
      r.iciTransfers, r.iciSignals, total, chip.ici.link_bytes_per_second / 1e9,
      chip.ici.latency_cycles);
  if (r.hostSeconds > 0)
    out += fmt::format(
        "  host time       {:.3f} s wall, {:.3f} s CPU ({:.2f} M simulated chip-cycles per CPU "
        "second, {:.2f} M per wall second; {} host thread{})\n{}",
        r.hostSeconds, r.hostCpuSeconds,
        r.hostCpuSeconds > 0 ? double(r.cycles) * double(r.chips.size()) / r.hostCpuSeconds / 1e6
                             : 0.0,
        double(r.cycles) * double(r.chips.size()) / r.hostSeconds / 1e6, r.hostThreads,
        r.hostThreads == 1 ? "" : "s",
        r.hostThreads == 1
            ? std::string()
            : fmt::format(
                  "  host threads    {} job(s); SystemC's thread {:.3f} s CPU of the {:.3f}\n",
                  r.hostJobs, r.hostMainCpuSeconds, r.hostCpuSeconds));
  out += fmt::format("\n  {:>6}  {:>10}  {:>8}  {:>8}  {:>12}  {:>14}\n", "device", "cycles",
                     "status", "MXU %", "HBM GB/s", "ICI bytes out");
  for (size_t d = 0; d < r.chips.size(); ++d) {
    const SimResult& c = r.chips[d];
    ordered_json j = statsJson(c, chip, info);
    out +=
        fmt::format("  {:>6}  {:>10}  {:>8}  {:>7.1f}%  {:>12.2f}  {:>14.0f}\n", d, c.cycles,
                    c.fault    ? (c.fault->kind == "deadlock" ? "waiting" : "fault")
                    : c.halted ? "halted"
                               : "stopped",
                    100.0 * j["mxu_utilization"].get<double>(),
                    j["hbm"]["achieved_bytes_per_second"].get<double>() / 1e9, bytesOut(r, int(d)));
  }
  bool any = false;
  for (const LinkReport& l : r.links) any |= l.bytes > 0;
  if (any) {
    out +=
        fmt::format("\n  {:<22}  {:>14}  {:>6}  {:>8}\n", "link (used)", "bytes", "flows", "util");
    for (const LinkReport& l : r.links)
      if (l.bytes > 0)
        out += fmt::format("  {:<22}  {:>14.0f}  {:>6}  {:>7.1f}%\n", l.name, l.bytes, l.flows,
                           100.0 * l.utilization);
  }
  return out;
}

}  // namespace tpusim::sim
