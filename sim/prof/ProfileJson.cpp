#include "sim/prof/ProfileJson.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <stdexcept>

#include "sim/prof/Summarize.h"

namespace tpusim::prof {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Six significant digits: enough to read, stable to diff.
double sig6(double x) {
  if (x == 0 || !std::isfinite(x)) return 0;
  return std::stod(fmt::format("{:.6g}", x));
}

ordered_json stallsJson(const std::array<int64_t, sim::kNumStallCauses>& s) {
  ordered_json j = ordered_json::object();
  for (int k = 0; k < sim::kNumStallCauses; ++k)
    if (s[k] != 0) j[sim::stallCauseName(sim::StallCause(k))] = s[k];
  return j;
}

double share(double part, double whole) { return whole > 0 ? sig6(100.0 * part / whole) : 0.0; }

// The fields an op and a folded row share.
void opFields(ordered_json& j, const OpProfile& op, double stepCoreCycles) {
  j["category"] = categoryName(op.category);
  j["opcode"] = op.opcode;
  j["cycles"] = op.cycles;
  j["percent_of_step"] = share(double(op.cycles), stepCoreCycles);
  j["bundles"] = op.bundles;
  j["flops"] = op.flops;  // counts: exact (derived rates are rounded)
  j["mxu_flops"] = op.mxuFlops;
  j["vpu_flops"] = op.vpuFlops;
  j["hbm_read_bytes"] = op.hbmReadBytes;
  j["hbm_write_bytes"] = op.hbmWriteBytes;
  j["hbm_bytes"] = op.hbmBytes();
  j["vmem_bytes"] = op.vmemBytes;
  j["valu_ops"] = op.valuOps;
  j["transcendental_busy_cycles"] = op.transcendentalBusy;
  j["vector_loads"] = op.vldOps;
  j["vector_stores"] = op.vstOps;
  j["intensity"] = sig6(op.intensity);
  j["flops_per_second"] = sig6(op.flopsPerSecond);
  j["hbm_bytes_per_second"] = sig6(op.hbmBytesPerSecond);
  j["roofline_flops_per_second"] = sig6(op.rooflineFlopsPerSecond);
  j["roofline_efficiency"] = sig6(op.rooflineEfficiency);
  j["bound_by"] = boundByName(op.boundBy);
  j["bound_detail"] = op.boundDetail;
  j["unit_use"] = {{"mxu", sig6(op.unitUse[0])},
                   {"vpu", sig6(op.unitUse[1])},
                   {"hbm", sig6(op.unitUse[2])},
                   {"vmem", sig6(op.unitUse[3])}};
  j["stall_cycles"] = op.stallCycles;
  j["stalls"] = stallsJson(op.stalls);
  j["dma_stall_share"] = sig6(op.dmaStallShare);
  j["wasted_cycles"] = sig6(op.wastedCycles);
}

template <typename T>
T get(const json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(fmt::format("{}: missing field '{}'", what, key));
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(fmt::format("{}: field '{}' has the wrong type", what, key));
  }
}

void readStalls(const json& j, std::array<int64_t, sim::kNumStallCauses>& out,
                const std::string& what) {
  if (!j.is_object()) throw std::runtime_error(what + ": 'stalls' is not an object");
  for (int k = 0; k < sim::kNumStallCauses; ++k) {
    const char* n = sim::stallCauseName(sim::StallCause(k));
    out[k] = j.contains(n) ? get<int64_t>(j, n, what + ".stalls") : 0;
  }
}

}  // namespace

ordered_json profileToJson(const Profile& p) {
  const Overview& o = p.overview;
  const double step = double(o.stepCycles) * double(p.peaks.cores);
  ordered_json j;
  j["profile_version"] = kProfileVersion;
  j["program"] = p.program;
  j["chip"] = p.peaks.chip;
  const ChipPeaks& k = p.peaks;
  j["peaks"] = {{"clock_hz", k.clockHz},
                {"cores", k.cores},
                {"valu_slots", k.valuSlots},
                {"vld_slots", k.vldSlots},
                {"vst_slots", k.vstSlots},
                {"mxu_flops_per_cycle", k.mxuFlopsPerCycle},
                {"vpu_flops_per_cycle", k.vpuFlopsPerCycle},
                {"hbm_bytes_per_cycle", k.hbmBytesPerCycle},
                {"vmem_bytes_per_cycle", k.vmemBytesPerCycle},
                {"mxu_flops_per_second", sig6(k.mxuFlopsPerCycle * k.clockHz * double(k.cores))},
                {"vpu_flops_per_second", sig6(k.vpuFlopsPerCycle * k.clockHz * double(k.cores))},
                {"hbm_bytes_per_second", sig6(k.hbmBytesPerCycle * k.clockHz * double(k.cores))},
                {"vmem_bytes_per_second", sig6(k.vmemBytesPerCycle * k.clockHz * double(k.cores))},
                {"ridge_flops_per_byte",
                 k.hbmBytesPerCycle > 0 ? sig6(k.mxuFlopsPerCycle / k.hbmBytesPerCycle) : 0.0}};

  ordered_json ov;
  ov["step_cycles"] = o.stepCycles;
  ov["step_seconds"] = sig6(o.stepSeconds);
  ov["flops"] = sig6(o.flops);
  ov["flops_per_second"] = sig6(o.flopsPerSecond);
  ov["flops_percent_of_peak"] = sig6(o.flopsPercentOfPeak);
  ov["mxu_utilization"] = sig6(o.mxuUtilization);
  ov["hbm_bytes"] = o.hbmBytes;
  ov["hbm_bytes_per_second"] = sig6(o.hbmBytesPerSecond);
  ov["hbm_percent_of_peak"] = sig6(o.hbmPercentOfPeak);
  ov["time_split"] = {{"compute_bound_cycles", o.computeBoundCycles},
                      {"memory_bound_cycles", o.memoryBoundCycles},
                      {"latency_bound_cycles", o.latencyBoundCycles},
                      {"compute_bound_percent", share(double(o.computeBoundCycles), step)},
                      {"memory_bound_percent", share(double(o.memoryBoundCycles), step)},
                      {"latency_bound_percent", share(double(o.latencyBoundCycles), step)}};
  ov["stall_cycles"] = o.stallCycles;
  ov["stalls"] = stallsJson(o.stalls);
  ov["dma_stall_share"] = sig6(o.dmaStallShare);
  ov["findings"] = o.findings;
  j["overview"] = ov;

  ordered_json cats = ordered_json::array();
  for (const CategorySummary& c : p.categories) {
    ordered_json bound = ordered_json::object();
    for (int b = 0; b < kNumBoundBy; ++b)
      if (c.cyclesByBound[b]) bound[boundByName(BoundBy(b))] = c.cyclesByBound[b];
    cats.push_back({{"category", categoryName(c.category)},
                    {"ops", c.ops},
                    {"cycles", c.cycles},
                    {"percent_of_step", share(double(c.cycles), step)},
                    {"flops", sig6(c.flops)},
                    {"hbm_bytes", c.hbmBytes},
                    {"wasted_cycles", sig6(c.wastedCycles)},
                    {"cycles_by_bound", bound}});
  }
  j["categories"] = cats;

  ordered_json ops = ordered_json::array();
  for (const OpProfile& op : p.ops) {
    ordered_json jo;
    jo["name"] = op.name;
    jo["op_name"] = op.opName;
    jo["folded_name"] = op.folded;
    jo["layer"] = op.layer;
    jo["source"] = op.source;
    opFields(jo, op, step);
    ops.push_back(jo);
  }
  j["ops"] = ops;

  ordered_json folded = ordered_json::array();
  for (const FoldedOp& f : p.folded) {
    ordered_json jf;
    jf["folded_name"] = f.folded;
    jf["instances"] = f.ops.size();
    opFields(jf, f.total, step);
    ordered_json names = ordered_json::array();
    for (size_t i : f.ops) names.push_back(p.ops[i].name);
    jf["ops"] = names;
    folded.push_back(jf);
  }
  j["folded"] = folded;

  ordered_json layers = ordered_json::array();
  for (const LayerSummary& l : p.layers) {
    ordered_json byCat = ordered_json::object();
    for (int c = 0; c < kNumCategories; ++c)
      if (l.cyclesByCategory[c]) byCat[categoryName(Category(c))] = l.cyclesByCategory[c];
    layers.push_back({{"layer", l.layer},
                      {"ops", l.ops},
                      {"cycles", l.cycles},
                      {"percent_of_step", share(double(l.cycles), step)},
                      {"flops", sig6(l.flops)},
                      {"hbm_bytes", l.hbmBytes},
                      {"cycles_by_category", byCat}});
  }
  j["layers"] = layers;

  const MemoryProfile& m = p.memory;
  ordered_json mem;
  mem["present"] = m.present;
  if (m.present) {
    mem["capacity_bytes"] = m.capacityBytes;
    mem["peak_live_bytes"] = m.peakLiveBytes;
    mem["peak_step"] = m.peakStep;
    mem["peak_instruction"] =
        m.peakStep < int64_t(m.steps.size()) ? m.steps[size_t(m.peakStep)] : std::string();
    mem["heap_peak_bytes"] = m.heapPeakBytes;
    mem["at_peak_by_kind"] = m.atPeakByKind;
    mem["at_peak"] = m.atPeak;
    mem["steps"] = m.steps;
    mem["live_bytes"] = m.liveBytes;
    ordered_json buffers = ordered_json::array();
    for (const MemoryBuffer& b : m.buffers)
      buffers.push_back({{"name", b.name},
                         {"kind", b.kind},
                         {"shape", b.shape},
                         {"bytes", b.bytes},
                         {"offset", b.offset},
                         {"define_step", b.defineStep},
                         {"last_use_step", b.lastUseStep}});
    mem["buffers"] = buffers;
  }
  j["memory"] = mem;
  if (p.pod.present) {
    const PodProfile& pod = p.pod;
    ordered_json chips = ordered_json::array(), links = ordered_json::array();
    for (const PodChip& c : pod.chips)
      chips.push_back({{"device", c.device},
                       {"cycles", c.cycles},
                       {"status", c.status},
                       {"sync_wait_cycles", c.syncWaitCycles},
                       {"ici_bytes_out", c.iciBytesOut}});
    for (const PodLink& l : pod.links)
      links.push_back({{"name", l.name},
                       {"bytes", l.bytes},
                       {"flows", l.flows},
                       {"utilization", sig6(l.utilization)}});
    j["pod"] = {{"topology", pod.topology},
                {"device", pod.device},
                {"chosen_by", pod.chosenBy},
                {"link_bytes_per_second", pod.linkBytesPerSecond},
                {"hop_latency_cycles", pod.hopLatencyCycles},
                {"chips", chips},
                {"links", links}};
  }
  j["trace"] = p.trace;
  return j;
}

Profile profileFromJson(const json& j, const std::string& what) {
  if (!j.is_object()) throw std::runtime_error(what + ": not a profile (expected a JSON object)");
  int version = get<int>(j, "profile_version", what);
  if (version != kProfileVersion)
    throw std::runtime_error(fmt::format("{}: profile_version {} (this tpu-prof reads version {})",
                                         what, version, kProfileVersion));
  Profile p;
  p.program = get<std::string>(j, "program", what);
  p.peaks.chip = get<std::string>(j, "chip", what);
  const json& k = j.at("peaks");
  p.peaks.clockHz = get<double>(k, "clock_hz", what + ".peaks");
  p.peaks.cores = get<int64_t>(k, "cores", what + ".peaks");
  p.peaks.valuSlots = get<int64_t>(k, "valu_slots", what + ".peaks");
  p.peaks.vldSlots = get<int64_t>(k, "vld_slots", what + ".peaks");
  p.peaks.vstSlots = get<int64_t>(k, "vst_slots", what + ".peaks");
  p.peaks.mxuFlopsPerCycle = get<double>(k, "mxu_flops_per_cycle", what + ".peaks");
  p.peaks.vpuFlopsPerCycle = get<double>(k, "vpu_flops_per_cycle", what + ".peaks");
  p.peaks.hbmBytesPerCycle = get<double>(k, "hbm_bytes_per_cycle", what + ".peaks");
  p.peaks.vmemBytesPerCycle = get<double>(k, "vmem_bytes_per_cycle", what + ".peaks");

  const json& ov = get<json>(j, "overview", what);
  const std::string ow = what + ".overview";
  Overview& o = p.overview;
  o.stepCycles = get<int64_t>(ov, "step_cycles", ow);
  o.stepSeconds = get<double>(ov, "step_seconds", ow);
  o.flops = get<double>(ov, "flops", ow);
  o.flopsPerSecond = get<double>(ov, "flops_per_second", ow);
  o.flopsPercentOfPeak = get<double>(ov, "flops_percent_of_peak", ow);
  o.mxuUtilization = get<double>(ov, "mxu_utilization", ow);
  o.hbmBytes = get<int64_t>(ov, "hbm_bytes", ow);
  o.hbmBytesPerSecond = get<double>(ov, "hbm_bytes_per_second", ow);
  o.hbmPercentOfPeak = get<double>(ov, "hbm_percent_of_peak", ow);
  const json& split = get<json>(ov, "time_split", ow);
  o.computeBoundCycles = get<int64_t>(split, "compute_bound_cycles", ow + ".time_split");
  o.memoryBoundCycles = get<int64_t>(split, "memory_bound_cycles", ow + ".time_split");
  o.latencyBoundCycles = get<int64_t>(split, "latency_bound_cycles", ow + ".time_split");
  o.stallCycles = get<int64_t>(ov, "stall_cycles", ow);
  readStalls(get<json>(ov, "stalls", ow), o.stalls, ow);
  o.dmaStallShare = get<double>(ov, "dma_stall_share", ow);
  o.findings = get<std::vector<std::string>>(ov, "findings", ow);

  const json& ops = get<json>(j, "ops", what);
  if (!ops.is_array()) throw std::runtime_error(what + ": 'ops' is not a list");
  for (size_t i = 0; i < ops.size(); ++i) {
    const json& jo = ops[i];
    const std::string w = fmt::format("{}.ops[{}]", what, i);
    OpProfile op;
    op.name = get<std::string>(jo, "name", w);
    op.opName = get<std::string>(jo, "op_name", w);
    op.folded = get<std::string>(jo, "folded_name", w);
    op.layer = get<int64_t>(jo, "layer", w);
    op.source = get<std::string>(jo, "source", w);
    std::string cat = get<std::string>(jo, "category", w);
    if (!categoryFromName(cat, &op.category))
      throw std::runtime_error(fmt::format("{}: unknown category '{}'", w, cat));
    op.opcode = get<std::string>(jo, "opcode", w);
    op.cycles = get<int64_t>(jo, "cycles", w);
    op.bundles = get<int64_t>(jo, "bundles", w);
    op.flops = get<double>(jo, "flops", w);
    op.mxuFlops = get<double>(jo, "mxu_flops", w);
    op.vpuFlops = get<double>(jo, "vpu_flops", w);
    op.hbmReadBytes = get<int64_t>(jo, "hbm_read_bytes", w);
    op.hbmWriteBytes = get<int64_t>(jo, "hbm_write_bytes", w);
    op.vmemBytes = get<int64_t>(jo, "vmem_bytes", w);
    op.valuOps = get<int64_t>(jo, "valu_ops", w);
    op.transcendentalBusy = get<int64_t>(jo, "transcendental_busy_cycles", w);
    op.vldOps = get<int64_t>(jo, "vector_loads", w);
    op.vstOps = get<int64_t>(jo, "vector_stores", w);
    readStalls(get<json>(jo, "stalls", w), op.stalls, w);
    p.ops.push_back(op);
  }
  summarize(p);

  const json& mem = get<json>(j, "memory", what);
  p.memory.present = get<bool>(mem, "present", what + ".memory");
  if (p.memory.present) {
    const std::string mw = what + ".memory";
    MemoryProfile& m = p.memory;
    m.capacityBytes = get<int64_t>(mem, "capacity_bytes", mw);
    m.peakLiveBytes = get<int64_t>(mem, "peak_live_bytes", mw);
    m.peakStep = get<int64_t>(mem, "peak_step", mw);
    m.heapPeakBytes = get<int64_t>(mem, "heap_peak_bytes", mw);
    m.atPeakByKind = get<std::map<std::string, int64_t>>(mem, "at_peak_by_kind", mw);
    m.atPeak = get<std::vector<size_t>>(mem, "at_peak", mw);
    m.steps = get<std::vector<std::string>>(mem, "steps", mw);
    m.liveBytes = get<std::vector<int64_t>>(mem, "live_bytes", mw);
    const json& buffers = get<json>(mem, "buffers", mw);
    for (const json& b : buffers) {
      MemoryBuffer mb;
      mb.name = get<std::string>(b, "name", mw);
      mb.kind = get<std::string>(b, "kind", mw);
      mb.shape = get<std::string>(b, "shape", mw);
      mb.bytes = get<int64_t>(b, "bytes", mw);
      mb.offset = get<int64_t>(b, "offset", mw);
      mb.defineStep = get<int64_t>(b, "define_step", mw);
      mb.lastUseStep = get<int64_t>(b, "last_use_step", mw);
      m.buffers.push_back(mb);
    }
    for (size_t i : m.atPeak)
      if (i >= m.buffers.size())
        throw std::runtime_error(
            fmt::format("{}: at_peak names buffer {} of {}", mw, i, m.buffers.size()));
  }
  if (j.contains("pod")) {  // only multi-chip runs have one
    const json& pod = get<json>(j, "pod", what);
    const std::string pw = what + ".pod";
    PodProfile& out = p.pod;
    out.present = true;
    out.topology = get<std::string>(pod, "topology", pw);
    out.device = get<int>(pod, "device", pw);
    out.chosenBy = get<std::string>(pod, "chosen_by", pw);
    out.linkBytesPerSecond = get<double>(pod, "link_bytes_per_second", pw);
    out.hopLatencyCycles = get<int64_t>(pod, "hop_latency_cycles", pw);
    for (const json& c : get<json>(pod, "chips", pw)) {
      PodChip pc;
      pc.device = get<int>(c, "device", pw + ".chips");
      pc.cycles = get<int64_t>(c, "cycles", pw + ".chips");
      pc.status = get<std::string>(c, "status", pw + ".chips");
      pc.syncWaitCycles = get<int64_t>(c, "sync_wait_cycles", pw + ".chips");
      pc.iciBytesOut = get<double>(c, "ici_bytes_out", pw + ".chips");
      out.chips.push_back(pc);
    }
    for (const json& l : get<json>(pod, "links", pw)) {
      PodLink pl;
      pl.name = get<std::string>(l, "name", pw + ".links");
      pl.bytes = get<double>(l, "bytes", pw + ".links");
      pl.flows = get<int64_t>(l, "flows", pw + ".links");
      pl.utilization = get<double>(l, "utilization", pw + ".links");
      out.links.push_back(pl);
    }
    if (out.device < 0 || out.device >= int(out.chips.size()))
      throw std::runtime_error(fmt::format("{}: device {} is not one of its {} chips", pw,
                                           out.device, out.chips.size()));
  }
  p.trace = get<std::string>(j, "trace", what);
  return p;
}

Profile readProfile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot read the profile", path));
  json j;
  try {
    j = json::parse(f);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  try {
    return profileFromJson(j, path);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace tpusim::prof
