#include "sim/tools/tpusim-batch/CaseResult.h"

#include <algorithm>
#include <map>

namespace tpusim::batch {
using nlohmann::json;

std::string faultKind(const std::string& status) {
  const std::string prefix = "fault: ";
  return status.rfind(prefix, 0) == 0 ? status.substr(prefix.size()) : "";
}

CaseResult resultFromStats(const std::string& name, const json& stats) {
  CaseResult r;
  r.name = name;
  const json& fault = stats.at("fault");
  r.status = fault.is_null() ? "halted" : "fault: " + fault.at("kind").get<std::string>();
  r.cycles = stats.at("total_cycles").get<int64_t>();
  r.simulatedSeconds = stats.at("simulated_seconds").get<double>();
  r.mxuUtilization = stats.at("mxu_utilization").get<double>();
  r.hbmBytesPerSecond = stats.at("hbm").at("achieved_bytes_per_second").get<double>();
  r.hbmUtilization = stats.at("hbm").at("utilization").get<double>();
  json cores = json::object();
  for (const json& c : stats.at("cores")) {
    json stalls = json::object();
    for (const auto& [cause, n] : c.at("stalls").items())
      if (n.get<int64_t>() != 0) stalls[cause] = n;
    int64_t dma = c.at("memory").at("dma_bytes").get<int64_t>();
    r.dmaBytes += dma;
    cores["core" + std::to_string(c.at("core").get<int>())] = {
        {"bundles", c.at("bundles_issued")}, {"stalls", stalls}, {"dma_bytes", dma}};
  }
  // Ops by name; a name the debug map holds more than once adds up.
  std::map<std::string, int64_t> ops;
  for (const json& o : stats.at("ops"))
    ops[o.at("name").get<std::string>()] += o.at("cycles").get<int64_t>();
  r.topOps.assign(ops.begin(), ops.end());
  std::stable_sort(r.topOps.begin(), r.topOps.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  r.record = {
      {"status", r.status},      {"cycles", r.cycles}, {"mxu_utilization", r.mxuUtilization},
      {"dma_bytes", r.dmaBytes}, {"cores", cores},     {"ops", json(ops)}};
  return r;
}

json resultToJson(const CaseResult& r) {
  json ops = json::array();
  for (const auto& [n, c] : r.topOps) ops.push_back({n, c});
  return {{"name", r.name},
          {"status", r.status},
          {"error", r.error},
          {"cycles", r.cycles},
          {"simulated_seconds", r.simulatedSeconds},
          {"mxu_utilization", r.mxuUtilization},
          {"hbm_bytes_per_second", r.hbmBytesPerSecond},
          {"hbm_utilization", r.hbmUtilization},
          {"dma_bytes", r.dmaBytes},
          {"top_ops", ops},
          {"record", r.record},
          {"warnings", r.warnings},
          {"host_seconds", r.hostSeconds}};
}

CaseResult resultFromJson(const json& j) {
  CaseResult r;
  r.name = j.at("name");
  r.status = j.at("status");
  r.error = j.at("error");
  r.cycles = j.at("cycles");
  r.simulatedSeconds = j.at("simulated_seconds");
  r.mxuUtilization = j.at("mxu_utilization");
  r.hbmBytesPerSecond = j.at("hbm_bytes_per_second");
  r.hbmUtilization = j.at("hbm_utilization");
  r.dmaBytes = j.at("dma_bytes");
  for (const json& o : j.at("top_ops"))
    r.topOps.emplace_back(o[0].get<std::string>(), o[1].get<int64_t>());
  r.record = j.at("record");
  r.warnings = j.at("warnings").get<std::vector<std::string>>();
  r.hostSeconds = j.at("host_seconds");
  return r;
}

}  // namespace tpusim::batch
