#include "sim/ici/IciFabric.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tpusim::sim::ici {
namespace {

// The network's resources: every link slot at its sustained rate, then one
// per chip for the rate at which it absorbs arriving bytes.
std::vector<double> capacities(const Torus& torus, const target::IciConfig& ici, double clockHz) {
  std::vector<double> c(size_t(torus.numLinkSlots()), ici.linkBytesPerCycle(clockHz));
  c.resize(c.size() + size_t(torus.numChips()), ici.ingress_bytes_per_second / clockHz);
  return c;
}

}  // namespace

IciFabric::IciFabric(sc_core::sc_module_name name, Torus torus, const target::IciConfig& ici,
                     double clockHz)
    : sc_core::sc_module(name),
      torus_(std::move(torus)),
      hopLatency_(ici.latency_cycles),
      clock_(clockHz),
      network_(capacities(torus_, ici, clockHz)),
      clockHz_(clockHz),
      linkTracks_(size_t(network_.numLinks()), -1),
      tracedLoads_(size_t(network_.numLinks()), 0.0) {
  SC_THREAD(run);
}

int64_t IciFabric::send(int src, int dst, uint64_t bytes, int64_t cycle) {
  std::vector<int> path = torus_.route(src, dst);
  if (path.empty()) throw std::logic_error("IciFabric::send: a transfer to its own chip");
  const int hops = int(path.size());
  path.push_back(ingress(dst));
  int64_t id = nextId_++;
  int64_t flow = network_.add(cycle, path, double(bytes));
  if (flow >= int64_t(flowIds_.size())) flowIds_.resize(size_t(flow) + 1, {-1, 0});
  flowIds_[size_t(flow)] = {id, hops};
  ++transfers_;
  traceLoads(cycle);
  work_.notify(sc_core::SC_ZERO_TIME);
  return id;
}

int64_t IciFabric::signal(int src, int dst, int64_t cycle) {
  int64_t id = nextId_++;
  arrivals_.push({cycle + hops(src, dst) * hopLatency_, id});
  ++signals_;
  work_.notify(sc_core::SC_ZERO_TIME);
  return id;
}

void IciFabric::traceLoads(int64_t cycle) {
  if (!trace_) return;
  const std::vector<double>& loads = network_.linkLoads();
  for (size_t l = 0; l < loads.size(); ++l) {
    if (loads[l] == tracedLoads_[l]) continue;
    if (linkTracks_[l] < 0)
      linkTracks_[l] = trace_->track(
          "ici", (int(l) < torus_.numLinkSlots()
                      ? torus_.linkName(int(l))
                      : fmt::format("chip{} ingress", int(l) - torus_.numLinkSlots())) +
                     " GB/s");
    trace_->counter(linkTracks_[l], cycle, loads[l] * clockHz_ / 1e9);
    tracedLoads_[l] = loads[l];
  }
}

void IciFabric::run() {
  while (true) {
    int64_t now = clock_.now();
    std::vector<int64_t> finished = network_.takeFinished(now);
    for (int64_t flow : finished) {
      auto [id, hops] = flowIds_[size_t(flow)];
      if (onDrained) onDrained(id, now);
      arrivals_.push({now + hops * hopLatency_, id});
    }
    if (!finished.empty()) traceLoads(now);
    while (!arrivals_.empty() && arrivals_.top().cycle <= now) {
      int64_t id = arrivals_.top().id;
      arrivals_.pop();
      if (onArrived) onArrived(id, now);
    }
    int64_t next = network_.nextFinish();
    if (!arrivals_.empty() && (next < 0 || arrivals_.top().cycle < next))
      next = arrivals_.top().cycle;
    if (next < 0)
      wait(work_);
    else
      wait(clock_.timeOf(next) - sc_core::sc_time_stamp(), work_);
  }
}

}  // namespace tpusim::sim::ici
