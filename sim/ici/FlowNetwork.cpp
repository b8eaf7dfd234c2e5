#include "sim/ici/FlowNetwork.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tpusim::sim::ici {

namespace {
// Bytes below this count as drained (rates are doubles; a flow's finish
// cycle is rounded up, so what is left at it is rounding noise).
constexpr double kDrained = 1e-6;
}  // namespace

FlowNetwork::FlowNetwork(int numLinks, double bytesPerCycle)
    : FlowNetwork(std::vector<double>(size_t(numLinks), bytesPerCycle)) {}

FlowNetwork::FlowNetwork(std::vector<double> bytesPerCycle)
    : capacities_(std::move(bytesPerCycle)),
      links_(capacities_.size()),
      loads_(capacities_.size(), 0.0) {
  for (double c : capacities_)
    if (!(c > 0)) throw std::logic_error("FlowNetwork: link capacity must be > 0");
}

int64_t FlowNetwork::add(int64_t now, std::vector<int> links, double bytes) {
  advanceTo(now);
  for (int l : links)
    if (l < 0 || l >= numLinks()) throw std::logic_error("FlowNetwork::add: no such link");
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  Flow f;
  f.links = std::move(links);
  f.remaining = bytes;
  for (int l : f.links) ++links_[size_t(l)].flows;
  int64_t id = nextId_++;
  flows_.emplace(id, std::move(f));
  recomputeRates();
  return id;
}

void FlowNetwork::advanceTo(int64_t now) {
  if (now < now_) throw std::logic_error("FlowNetwork::advanceTo: time went backwards");
  if (now == now_) return;
  double dt = double(now - now_);
  for (auto& [id, f] : flows_) {
    double moved = std::min(f.remaining, f.rate * dt);
    f.remaining -= moved;
    for (int l : f.links) links_[size_t(l)].bytes += moved;
  }
  now_ = now;
}

int64_t FlowNetwork::nextFinish() const {
  int64_t first = -1;
  for (const auto& [id, f] : flows_)
    if (first < 0 || f.finish < first) first = f.finish;
  return first;
}

std::vector<int64_t> FlowNetwork::takeFinished(int64_t now) {
  advanceTo(now);
  std::vector<int64_t> done;
  for (auto it = flows_.begin(); it != flows_.end();) {
    if (it->second.finish <= now) {
      // The last fraction of a byte left during this cycle.
      for (int l : it->second.links) links_[size_t(l)].bytes += it->second.remaining;
      done.push_back(it->first);
      it = flows_.erase(it);
    } else {
      ++it;
    }
  }
  if (!done.empty()) recomputeRates();
  return done;
}

void FlowNetwork::recomputeRates() {
  ++rateUpdates_;
  // Progressive filling: repeatedly find the link whose remaining capacity,
  // shared by its unfixed flows, is smallest; fix those flows at that share.
  std::vector<double> left = capacities_;
  std::vector<int> unfixed(links_.size(), 0);
  std::map<int64_t, bool> fixed;
  for (auto& [id, f] : flows_) {
    fixed[id] = false;
    f.rate = 0;
    for (int l : f.links) ++unfixed[size_t(l)];
  }
  size_t remainingFlows = flows_.size();
  while (remainingFlows > 0) {
    int bottleneck = -1;
    double share = 0;
    for (size_t l = 0; l < links_.size(); ++l) {
      if (unfixed[l] == 0) continue;
      double s = left[l] / unfixed[l];
      if (bottleneck < 0 || s < share) {
        bottleneck = int(l);
        share = s;
      }
    }
    if (bottleneck < 0) {
      // Flows without links (a zero-hop transfer) are not limited by any
      // link: they move at the fastest link's rate.
      double fastest = 1;
      for (double c : capacities_) fastest = std::max(fastest, c);
      for (auto& [id, f] : flows_)
        if (!fixed[id]) {
          f.rate = fastest;
          fixed[id] = true;
          --remainingFlows;
        }
      break;
    }
    for (auto& [id, f] : flows_) {
      if (fixed[id]) continue;
      if (!std::binary_search(f.links.begin(), f.links.end(), bottleneck)) continue;
      // Rounding may leave a link a hair below its exact share; never stop a flow.
      f.rate = std::max(share, capacities_[size_t(bottleneck)] * 1e-9);
      fixed[id] = true;
      --remainingFlows;
      for (int l : f.links) {
        left[size_t(l)] = std::max(0.0, left[size_t(l)] - share);
        --unfixed[size_t(l)];
      }
    }
  }
  std::fill(loads_.begin(), loads_.end(), 0.0);
  for (auto& [id, f] : flows_) {
    for (int l : f.links) loads_[size_t(l)] += f.rate;
    if (f.remaining <= kDrained) {
      f.finish = now_;
    } else {
      double exact = double(now_) + f.remaining / f.rate;
      f.finish = std::max(now_ + 1, int64_t(std::ceil(exact - 1e-12 * std::max(1.0, exact))));
    }
  }
}

double FlowNetwork::rate(int64_t id) const {
  auto it = flows_.find(id);
  return it == flows_.end() ? 0 : it->second.rate;
}

double FlowNetwork::remaining(int64_t id) const {
  auto it = flows_.find(id);
  return it == flows_.end() ? 0 : it->second.remaining;
}

int64_t FlowNetwork::finishCycle(int64_t id) const {
  auto it = flows_.find(id);
  return it == flows_.end() ? -1 : it->second.finish;
}

}  // namespace tpusim::sim::ici
