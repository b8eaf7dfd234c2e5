// The ICI link model without SystemC: flows of bytes over paths of links,
// each link with a capacity (bytes per core cycle, one way). A "link" is any
// resource a flow's bytes pass through: the fabric adds one per chip for the
// rate at which the receiver absorbs what arrives, so a receiver slower than
// its incoming links holds their flows down (back-pressure). Flows that
// share a link share it max-min fairly (progressive filling: every flow gets
// the same share of its tightest link, and what a flow limited elsewhere
// leaves is shared by the others). Rates change only when a flow starts or
// finishes, so a transfer costs a handful of updates however many bytes it
// moves: no event per byte or per packet.
//
// Time is in core cycles. A flow finishes at the first whole cycle at or after
// the instant its last byte leaves (its bandwidth share is held until then);
// hop latency is added by the caller (IciFabric). Deterministic: the same
// calls give the same cycles, with flows and links visited in index order.
//
// Cost: a change refills only its component (the flows joined to the added
// or removed flows' links through shared links), since max-min shares of
// flows that share no link with the change cannot move; within it the
// tightest link comes from a heap. The result is the whole-network filling's
// bit for bit (the same shares subtracted from each link in the same order,
// ties to the lowest link index), so a 256-chip pod with thousands of flows
// pays per change for the few flows into one chip, not for all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpusim::sim::ici {

struct LinkStats {
  double bytes = 0;   // bytes that crossed the link
  int64_t flows = 0;  // flows that used it
};

class FlowNetwork {
 public:
  FlowNetwork(int numLinks, double bytesPerCycle);
  // One capacity per link (each > 0).
  explicit FlowNetwork(std::vector<double> bytesPerCycle);

  // Starts a flow of `bytes` over `links` at cycle `now` (>= every earlier
  // call's cycle); returns its id (0, 1, 2, ... in call order).
  int64_t add(int64_t now, std::vector<int> links, double bytes);
  // Moves time to `now`, draining every flow at its current rate.
  void advanceTo(int64_t now);
  // The first cycle at which a flow finishes, or -1 with no flow.
  int64_t nextFinish() const;
  // Removes and returns (in id order) the flows finished by `now` (after
  // advanceTo(now)); the others' rates are recomputed.
  std::vector<int64_t> takeFinished(int64_t now);

  int activeFlows() const { return int(flows_.size()); }
  double rate(int64_t id) const;  // bytes per cycle; 0 for an unknown flow
  double remaining(int64_t id) const;
  int64_t finishCycle(int64_t id) const;
  const LinkStats& linkStats(int link) const { return links_[size_t(link)]; }
  int numLinks() const { return int(links_.size()); }
  double capacity(int link) const { return capacities_[size_t(link)]; }
  // Changes to the set of flows (each one a recomputation of the rates).
  int64_t rateUpdates() const { return rateUpdates_; }
  // Flows whose rates were refilled, summed over every recomputation.
  int64_t flowsRefilled() const {
    settle();
    return flowsRefilled_;
  }
  // Per link, the sum of its flows' rates (bytes per cycle) since the last change.
  const std::vector<double>& linkLoads() const;

 private:
  struct Flow {
    int64_t id = 0;
    std::vector<int> links;
    double remaining = 0;
    double rate = 0;
    int64_t finish = 0;
  };
  // Several changes at one cycle (every chip sending at once) need one
  // recomputation: it waits until something reads a rate or moves time.
  void settle() const {
    if (pending_) const_cast<FlowNetwork*>(this)->recomputeRates();
  }
  void markDirty(int link);
  void recomputeRates();
  size_t indexOf(int64_t id) const { return size_t(pos_[size_t(id)]); }  // a live flow's place
  void refill(const std::vector<int>& flows, const std::vector<int>& links);
  const Flow* find(int64_t id) const;
  double fastest() const;

  std::vector<double> capacities_;
  int64_t now_ = 0;
  int64_t nextId_ = 0;
  int64_t rateUpdates_ = 0;
  int64_t flowsRefilled_ = 0;
  std::vector<Flow> flows_;  // ascending id: deterministic iteration
  std::vector<int> pos_;     // per id ever added, its place in flows_ (-1: gone)
  bool pending_ = false;     // a change not yet recomputed
  std::vector<LinkStats> links_;
  mutable std::vector<double> loads_;  // summed when asked for (the trace)
  mutable bool loadsStale_ = false;
  std::vector<std::vector<int64_t>> linkIds_;  // per link, its flows' ids (ascending)
  // Links whose set of flows changed since the last recomputation.
  std::vector<int> dirty_;
  std::vector<char> isDirty_;
  // Scratch of recomputeRates, kept to avoid allocations.
  std::vector<double> left_;
  std::vector<int> unfixed_, version_;
  std::vector<char> linkSeen_, flowSeen_, fixed_;
};

}  // namespace tpusim::sim::ici
