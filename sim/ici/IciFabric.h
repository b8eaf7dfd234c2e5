// The ICI of a slice as one SystemC module: the torus, its links (a
// FlowNetwork) and one thread that wakes only when a flow finishes or a
// message arrives. A transfer's last byte leaves the source when its flow
// finishes (the rates of the flows sharing its links decide when) and
// arrives hops x ici.latency_cycles later; a flag signal (a message of no
// size) arrives after the hop latency alone.
//
// Flow control, in the steady state (no event per packet): a flow crosses
// its links and then its destination's ingress (ici.ingress_bytes_per_second,
// shared by every flow into that chip), and moves at the rate of the tightest
// of them, so a receiver that cannot absorb what its links bring backs the
// senders up (their last byte leaves later); a link carries at most
// ici.buffer_bytes per credit round trip (IciConfig::linkBytesPerCycle). What a transfer carries is
// the caller's business: the fabric reports ids and cycles through callbacks, which run in SystemC
// context at exactly those cycles.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include "isa/target/IciConfig.h"
#include "sim/core/CycleClock.h"
#include "sim/ici/FlowNetwork.h"
#include "sim/ici/Torus.h"
#include "sim/trace/TraceRecorder.h"

namespace tpusim::sim::ici {

class IciFabric : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(IciFabric);
  IciFabric(sc_core::sc_module_name name, Torus torus, const target::IciConfig& ici,
            double clockHz);

  // Both are called by a process at SystemC time = `cycle`; they return the
  // id the callbacks report (ids count up from 0 over both kinds).
  int64_t send(int src, int dst, uint64_t bytes, int64_t cycle);
  int64_t signal(int src, int dst, int64_t cycle);

  // The last byte of transfer `id` left its source at `cycle`.
  std::function<void(int64_t id, int64_t cycle)> onDrained;
  // Transfer or signal `id` arrived at its destination at `cycle`.
  std::function<void(int64_t id, int64_t cycle)> onArrived;

  // A counter track per link that carries traffic ("ici" / "chip0 d1+ -> chip1 GB/s").
  void setTrace(TraceRecorder* trace) { trace_ = trace; }

  const Torus& torus() const { return torus_; }
  int hops(int src, int dst) const { return int(torus_.route(src, dst).size()); }
  // One link's sustained rate (bytes per core cycle).
  double bytesPerCycle() const { return network_.capacity(0); }
  // The network resource of chip `chip`'s ingress (its stats: bytes received).
  int ingress(int chip) const { return torus_.numLinkSlots() + chip; }
  double ingressBytesPerCycle() const { return network_.capacity(ingress(0)); }
  const FlowNetwork& network() const { return network_; }
  int64_t transfers() const { return transfers_; }
  int64_t signals() const { return signals_; }
  // Transfers and signals not yet arrived (for deadlock reports): the flows
  // still on their links and what has left but not arrived (flowIds_ is
  // indexed by flow id and never shrinks, so its size is no count).
  int64_t inFlight() const { return int64_t(network_.activeFlows()) + int64_t(arrivals_.size()); }

 private:
  void run();
  void traceLoads(int64_t cycle);

  struct Arrival {
    int64_t cycle, id;
    bool operator>(const Arrival& o) const { return std::tie(cycle, id) > std::tie(o.cycle, o.id); }
  };
  Torus torus_;
  int64_t hopLatency_;
  CycleClock clock_;
  FlowNetwork network_;
  std::vector<std::pair<int64_t, int>> flowIds_;  // per network flow id (dense): our id, hops
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<Arrival>> arrivals_;
  int64_t nextId_ = 0, transfers_ = 0, signals_ = 0;
  sc_core::sc_event work_;
  TraceRecorder* trace_ = nullptr;
  double clockHz_;
  std::vector<int> linkTracks_;
  std::vector<double> tracedLoads_;
};

}  // namespace tpusim::sim::ici
