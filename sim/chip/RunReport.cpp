#include "sim/chip/RunReport.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include <algorithm>

#include "isa/target/ChipJson.h"

namespace tpusim::sim {
namespace {

using nlohmann::ordered_json;

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// Rounded so that the JSON text does not depend on printing noise.
double round6(double x) { return std::round(x * 1e6) / 1e6; }

ordered_json faultJson(const FaultInfo& f) {
  ordered_json j;
  j["kind"] = f.kind;
  j["message"] = f.message;
  j["cycle"] = f.cycle;
  j["core"] = f.core;
  j["bundle"] = f.bundle;
  j["slot"] = f.slot;
  j["op"] = f.op;
  j["debug_op"] = f.opName;
  j["unit"] = f.unit;
  j["address"] = f.address;
  return j;
}

}  // namespace

ordered_json statsJson(const SimResult& r, const target::ChipConfig& chip, const RunInfo& info) {
  ordered_json j;
  double cycles = double(std::max<int64_t>(r.cycles, 1));
  j["stats_version"] = 1;
  j["program"] = info.program;
  j["chip"] = chip.name;
  j["mode"] = info.mode;
  j["halted"] = r.halted;
  j["fault"] = r.fault ? faultJson(*r.fault) : ordered_json(nullptr);
  j["total_cycles"] = r.cycles;
  j["simulated_seconds"] = round6(double(r.cycles) / chip.core.clock_hz * 1e6) / 1e6;

  ordered_json cores = ordered_json::array();
  int64_t totalMacs = 0;
  for (size_t c = 0; c < r.cores.size(); ++c) {
    const CoreStats& s = r.cores[c];
    ordered_json jc;
    jc["core"] = c;
    jc["halt_cycle"] = s.haltCycle;
    jc["bundles_issued"] = s.bundlesIssued;
    ordered_json stalls;
    int64_t stalled = 0;
    for (int k = 0; k < kNumStallCauses; ++k) {
      stalls[stallCauseName(StallCause(k))] = s.stalls[k];
      stalled += s.stalls[k];
    }
    stalls["total"] = stalled;
    jc["stalls"] = stalls;
    ordered_json units;
    for (int m = 0; m < chip.mxu.count; ++m) {
      ordered_json jm;
      jm["busy_cycles"] = s.mxuLhsBusy[m];
      jm["utilization"] = round6(ratio(double(s.mxuLhsBusy[m]), cycles));
      jm["weight_port_busy_cycles"] = s.mxuWeightBusy[m];
      jm["macs"] = s.mxuMacs[m];
      totalMacs += s.mxuMacs[m];
      units[fmt::format("mxu{}", m)] = jm;
    }
    units["vpu"] = {{"ops", s.valuOps},
                    {"slot_utilization",
                     round6(ratio(double(s.valuOps), cycles * double(chip.core.valu_slots)))}};
    units["vpu_transcendental"] = {
        {"ops", s.transcendentalOps},
        {"busy_cycles", s.transcendentalBusy},
        {"utilization", round6(ratio(double(s.transcendentalBusy), cycles))}};
    units["xlu"] = {
        {"ops", s.xluOps},
        {"busy_cycles", s.xluBusy},
        {"utilization", round6(ratio(double(s.xluBusy), cycles * double(chip.xlu.count)))}};
    units["vector_load"] = {
        {"ops", s.vldOps},
        {"slot_utilization",
         round6(ratio(double(s.vldOps), cycles * double(chip.core.vld_slots)))}};
    units["vector_store"] = {
        {"ops", s.vstOps},
        {"slot_utilization",
         round6(ratio(double(s.vstOps), cycles * double(chip.core.vst_slots)))}};
    units["scalar"] = {{"ops", s.scalarOps}, {"smem_accesses", s.smemAccesses}};
    jc["units"] = units;
    jc["memory"] = {{"vmem_bytes_read", s.vmemBytesRead},
                    {"vmem_bytes_written", s.vmemBytesWritten},
                    {"vmem_bytes_per_cycle",
                     round6(ratio(double(s.vmemBytesRead + s.vmemBytesWritten), cycles))},
                    {"dma_descriptors", s.dmaIssued},
                    {"dma_bytes", s.dmaBytes}};
    // Timing mode: branches on values from SMEM a DMA fills only in functional mode.
    if (s.unmovedSmemBranches > 0) jc["branches_on_unmoved_dma_data"] = s.unmovedSmemBranches;
    if (s.unmovedSmemDmas > 0) jc["dmas_on_unmoved_dma_data"] = s.unmovedSmemDmas;
    if (!s.opsOnUnmovedData.empty()) jc["ops_on_unmoved_dma_data"] = s.opsOnUnmovedData;
    cores.push_back(jc);
  }
  j["cores"] = cores;
  double peakMacs = double(chip.core.cores) * chip.mxu.count * chip.mxu.size * chip.mxu.size;
  j["mxu_utilization"] = round6(ratio(double(totalMacs), peakMacs * cycles));

  ordered_json queues = ordered_json::array();
  for (const DmaReport::Queue& q : r.dma.queues)
    queues.push_back({{"core", q.core},
                      {"queue", q.queue},
                      {"descriptors", q.descriptors},
                      {"bytes", q.bytes},
                      {"busy_cycles", q.busyCycles},
                      {"utilization", round6(ratio(double(q.busyCycles), cycles))}});
  j["dma_queues"] = queues;
  ordered_json spaces;
  for (int sp = 0; sp < isa::kNumMemorySpaces; ++sp) {
    const char* name = isa::memorySpaceName(isa::MemorySpace(sp));
    double moved = double(r.dma.dmaBytesRead[sp] + r.dma.dmaBytesWritten[sp]);
    spaces[name] = {{"bytes_read", r.dma.dmaBytesRead[sp]},
                    {"bytes_written", r.dma.dmaBytesWritten[sp]},
                    {"bytes_per_second", round6(ratio(moved, cycles) * chip.core.clock_hz)}};
  }
  j["dma_bytes_by_memory"] = spaces;
  ordered_json channels = ordered_json::array();
  for (size_t c = 0; c < r.dma.hbmChannels.size(); ++c) {
    const DmaReport::Channel& ch = r.dma.hbmChannels[c];
    channels.push_back({{"channel", c},
                        {"bytes_read", ch.bytesRead},
                        {"bytes_written", ch.bytesWritten},
                        {"data_bus_busy_hbm_cycles", ch.busyCycles}});
  }
  double hbmBytes = double(r.dma.hbmBytesRead + r.dma.hbmBytesWritten);
  j["hbm"] = {{"bytes_read", r.dma.hbmBytesRead},
              {"bytes_written", r.dma.hbmBytesWritten},
              {"achieved_bytes_per_second", round6(ratio(hbmBytes, cycles) * chip.core.clock_hz)},
              {"peak_bytes_per_second", round6(r.dma.hbmPeakBytesPerCycle * chip.core.clock_hz)},
              {"utilization", round6(ratio(ratio(hbmBytes, cycles), r.dma.hbmPeakBytesPerCycle))},
              {"channels", channels}};

  ordered_json ops = ordered_json::array();
  for (const OpReport& o : r.ops)
    ops.push_back(
        {{"name", o.name},
         {"hlo_op_name", o.hloOpName},
         {"source",
          o.sourceFile.empty() ? std::string() : fmt::format("{}:{}", o.sourceFile, o.sourceLine)},
         {"cycles", o.stats.cycles},
         {"bundles", o.stats.bundles},
         {"flops", o.stats.flops},
         {"vmem_bytes", o.stats.vmemBytes},
         {"dma_bytes", o.stats.dmaBytes},
         {"flops_per_cycle", round6(ratio(o.stats.flops, double(o.stats.cycles)))}});
  j["ops"] = ops;
  target::WriteOptions wo;
  wo.sources = false;
  j["chip_config"] = target::chipToJson(chip, wo);
  return j;
}

namespace {

// An op_name without the jit(...) scopes JAX puts in front of every op and
// without the primitive's parameters ("jit(f)/jit(main)/layers_0/ffn/
// dot_general[dimension_numbers=...]" -> "layers_0/ffn/dot_general"), then the
// source file's name and line: what the op came from, in a few words.
std::string hloOrigin(const OpReport& o) {
  const std::string& n = o.hloOpName;
  size_t at = 0;
  while (n.compare(at, 4, "jit(") == 0) {
    size_t close = n.find(")/", at);
    if (close == std::string::npos) break;
    at = close + 2;
  }
  std::string out = n.substr(at, n.find('[', at) - at);
  if (!o.sourceFile.empty()) {
    size_t slash = o.sourceFile.find_last_of('/');
    out += fmt::format(" ({}:{})", o.sourceFile.substr(slash == std::string::npos ? 0 : slash + 1),
                       o.sourceLine);
  }
  return out;
}

}  // namespace

std::string summaryText(const SimResult& r, const target::ChipConfig& chip, const RunInfo& info) {
  ordered_json j = statsJson(r, chip, info);
  std::string out;
  out += fmt::format("tpusim: {} on {} ({} mode)\n", info.program, chip.name, info.mode);
  out += fmt::format("  status          {}\n", r.fault    ? "FAULT (" + r.fault->kind + ")"
                                               : r.halted ? "halted"
                                                          : "not halted");
  double seconds = double(r.cycles) / chip.core.clock_hz;
  out += fmt::format("  cycles          {}\n", r.cycles);
  {
    // Timing mode moves no data: say when the cycles depend on data it does not have.
    int64_t dmas = 0, branches = 0;
    std::set<std::string> ops;
    for (const CoreStats& s : r.cores) {
      dmas += s.unmovedSmemDmas;
      branches += s.unmovedSmemBranches;
      ops.insert(s.opsOnUnmovedData.begin(), s.opsOnUnmovedData.end());
    }
    if (dmas + branches > 0)
      out += fmt::format(
          "  not exact       {} DMA(s) and {} branch(es) depend on data timing mode does not move "
          "(ops: {}); a functional run may take other cycles\n",
          dmas, branches, fmt::join(ops, ", "));
  }
  out += fmt::format("  simulated time  {:.3f} us at {:.3f} GHz\n", seconds * 1e6,
                     chip.core.clock_hz / 1e9);
  out += fmt::format("  MXU utilization {:.1f}%\n", 100.0 * j["mxu_utilization"].get<double>());
  out += fmt::format("  HBM bandwidth   {:.2f} GB/s ({:.1f}% of {:.1f} GB/s peak)\n",
                     j["hbm"]["achieved_bytes_per_second"].get<double>() / 1e9,
                     100.0 * j["hbm"]["utilization"].get<double>(),
                     j["hbm"]["peak_bytes_per_second"].get<double>() / 1e9);
  int64_t bundles = 0;
  std::array<int64_t, kNumStallCauses> stalls{};
  for (const CoreStats& s : r.cores) {
    bundles += s.bundlesIssued;
    for (int k = 0; k < kNumStallCauses; ++k) stalls[k] += s.stalls[k];
  }
  out += fmt::format("  bundles issued  {}\n", bundles);
  std::vector<int> order(kNumStallCauses);
  for (int k = 0; k < kNumStallCauses; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return stalls[a] > stalls[b]; });
  // Stalls and op cycles are summed over the cores, so percentages are of
  // core-cycles (cycles x cores), never above 100% on a megacore chip.
  const double coreCycles =
      double(std::max<int64_t>(r.cycles, 1)) * double(std::max<size_t>(r.cores.size(), 1));
  out += "  top stalls     ";
  int shown = 0;
  for (int k : order) {
    if (stalls[k] == 0 || shown == 3) break;
    out += fmt::format(" {} {} ({:.1f}%)", stallCauseName(StallCause(k)), stalls[k],
                       100.0 * ratio(double(stalls[k]), coreCycles));
    out += ++shown < 3 ? "," : "";
  }
  if (shown == 0) out += " none";
  if (out.back() == ',') out.pop_back();
  out += "\n";
  if (r.hostSeconds > 0)
    out += fmt::format(
        "  host time       {:.3f} s wall, {:.3f} s CPU ({:.2f} M simulated cycles per CPU "
        "second{})\n",
        r.hostSeconds, r.hostCpuSeconds,
        r.hostCpuSeconds > 0 ? double(r.cycles) / r.hostCpuSeconds / 1e6 : 0.0,
        r.hostThreads > 1 ? fmt::format("; {} host threads", r.hostThreads) : "");
  if (r.hostSeconds > 0 && r.hostThreads > 1)
    out += fmt::format("  host threads    {} job(s); SystemC's thread {:.3f} s CPU of the {:.3f}\n",
                       r.hostJobs, r.hostMainCpuSeconds, r.hostCpuSeconds);
  if (!r.ops.empty()) {
    size_t width = 8;
    for (const OpReport& o : r.ops) width = std::max(width, o.name.size());
    bool anyHlo = false;
    for (const OpReport& o : r.ops) anyHlo |= !o.hloOpName.empty();
    out += fmt::format("\n  {:<{}}  {:>10}  {:>6}  {:>12}  {:>9}  {:>12}  {:>12}{}\n", "op", width,
                       "cycles", "%", "FLOPs", "FLOP/cyc", "VMEM bytes", "DMA bytes",
                       anyHlo ? "  HLO op" : "");
    // The ops that took the most cycles first, so a model's hot spots lead the table.
    std::vector<const OpReport*> shownOps;
    for (const OpReport& o : r.ops) shownOps.push_back(&o);
    if (info.topOps > 0) {
      std::stable_sort(shownOps.begin(), shownOps.end(), [](const OpReport* a, const OpReport* b) {
        return a->stats.cycles > b->stats.cycles;
      });
      if (shownOps.size() > size_t(info.topOps)) shownOps.resize(size_t(info.topOps));
    }
    for (const OpReport* op : shownOps) {
      const OpReport& o = *op;
      out += fmt::format("  {:<{}}  {:>10}  {:>5.1f}%  {:>12.4g}  {:>9.1f}  {:>12}  {:>12}{}\n",
                         o.name, width, o.stats.cycles,
                         100.0 * ratio(double(o.stats.cycles), coreCycles), o.stats.flops,
                         ratio(o.stats.flops, double(o.stats.cycles)), o.stats.vmemBytes,
                         o.stats.dmaBytes, o.hloOpName.empty() ? "" : "  " + hloOrigin(o));
    }
    if (shownOps.size() < r.ops.size()) {
      int64_t restCycles = 0;
      for (const OpReport& o : r.ops) restCycles += o.stats.cycles;
      for (const OpReport* o : shownOps) restCycles -= o->stats.cycles;
      out += fmt::format("  ... {} more ops, {:.1f}% of the cycles (--top-ops 0 lists every op)\n",
                         r.ops.size() - shownOps.size(),
                         100.0 * ratio(double(restCycles), coreCycles));
    }
  }
  return out;
}

}  // namespace tpusim::sim
