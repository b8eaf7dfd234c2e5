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
      loads_(capacities_.size(), 0.0),
      linkIds_(capacities_.size()),
      isDirty_(capacities_.size(), 0),
      left_(capacities_.size(), 0.0),
      unfixed_(capacities_.size(), 0),
      version_(capacities_.size(), 0),
      linkSeen_(capacities_.size(), 0) {
  for (double c : capacities_)
    if (!(c > 0)) throw std::logic_error("FlowNetwork: link capacity must be > 0");
}

double FlowNetwork::fastest() const {
  double fastest = 1;
  for (double c : capacities_) fastest = std::max(fastest, c);
  return fastest;
}

int64_t FlowNetwork::add(int64_t now, std::vector<int> links, double bytes) {
  advanceTo(now);
  for (int l : links)
    if (l < 0 || l >= numLinks()) throw std::logic_error("FlowNetwork::add: no such link");
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  Flow f;
  f.id = nextId_++;
  f.links = std::move(links);
  f.remaining = bytes;
  // Flows without links (a zero-hop transfer) are not limited by any link:
  // they move at the fastest link's rate.
  if (f.links.empty()) f.rate = fastest();
  for (int l : f.links) {
    ++links_[size_t(l)].flows;
    linkIds_[size_t(l)].push_back(f.id);  // ids grow: each list stays ascending
    markDirty(l);
  }
  int64_t id = f.id;
  pos_.push_back(int(flows_.size()));
  flows_.push_back(std::move(f));
  ++rateUpdates_;
  pending_ = true;
  return id;
}

void FlowNetwork::advanceTo(int64_t now) {
  if (now < now_) throw std::logic_error("FlowNetwork::advanceTo: time went backwards");
  if (now == now_) return;
  settle();  // the rates of the changes at now_ move the bytes from there
  double dt = double(now - now_);
  for (Flow& f : flows_) {
    double moved = std::min(f.remaining, f.rate * dt);
    f.remaining -= moved;
    for (int l : f.links) links_[size_t(l)].bytes += moved;
  }
  now_ = now;
}

int64_t FlowNetwork::nextFinish() const {
  settle();
  int64_t first = -1;
  for (const Flow& f : flows_)
    if (first < 0 || f.finish < first) first = f.finish;
  return first;
}

std::vector<int64_t> FlowNetwork::takeFinished(int64_t now) {
  advanceTo(now);
  settle();
  std::vector<int64_t> done;
  size_t kept = 0;
  for (size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    if (f.finish <= now) {
      // The last fraction of a byte left during this cycle.
      for (int l : f.links) {
        links_[size_t(l)].bytes += f.remaining;
        std::vector<int64_t>& ids = linkIds_[size_t(l)];
        ids.erase(std::find(ids.begin(), ids.end(), f.id));
        markDirty(l);
      }
      pos_[size_t(f.id)] = -1;
      done.push_back(f.id);
    } else {
      if (kept != i) {
        pos_[size_t(f.id)] = int(kept);
        flows_[kept] = std::move(f);
      }
      ++kept;
    }
  }
  flows_.resize(kept);
  if (!done.empty()) {
    ++rateUpdates_;
    pending_ = true;
  }
  return done;
}

void FlowNetwork::markDirty(int link) {
  if (isDirty_[size_t(link)]) return;
  isDirty_[size_t(link)] = 1;
  dirty_.push_back(link);
}

const std::vector<double>& FlowNetwork::linkLoads() const {
  settle();
  if (loadsStale_) {
    std::fill(loads_.begin(), loads_.end(), 0.0);
    for (const Flow& f : flows_)
      for (int l : f.links) loads_[size_t(l)] += f.rate;
    loadsStale_ = false;
  }
  return loads_;
}

void FlowNetwork::recomputeRates() {
  pending_ = false;
  // The component of the changed links: every flow reachable from them
  // through shared links. Flows outside it keep their rates (the filling of
  // the whole network gives them the same ones).
  flowSeen_.assign(flows_.size(), 0);
  std::vector<int> compFlows, compLinks, stack;
  for (int l : dirty_) {
    isDirty_[size_t(l)] = 0;
    if (!linkSeen_[size_t(l)]) {
      linkSeen_[size_t(l)] = 1;
      stack.push_back(l);
    }
  }
  dirty_.clear();
  while (!stack.empty()) {
    int l = stack.back();
    stack.pop_back();
    compLinks.push_back(l);
    for (int64_t id : linkIds_[size_t(l)]) {
      const int i = int(indexOf(id));
      if (flowSeen_[size_t(i)]) continue;
      flowSeen_[size_t(i)] = 1;
      compFlows.push_back(i);
      for (int m : flows_[size_t(i)].links)
        if (!linkSeen_[size_t(m)]) {
          linkSeen_[size_t(m)] = 1;
          stack.push_back(m);
        }
    }
  }
  for (int l : compLinks) linkSeen_[size_t(l)] = 0;
  flowsRefilled_ += int64_t(compFlows.size());
  refill(compFlows, compLinks);

  loadsStale_ = true;
  for (Flow& f : flows_) {
    if (f.remaining <= kDrained) {
      f.finish = now_;
    } else {
      double exact = double(now_) + f.remaining / f.rate;
      f.finish = std::max(now_ + 1, int64_t(std::ceil(exact - 1e-12 * std::max(1.0, exact))));
    }
  }
}

void FlowNetwork::refill(const std::vector<int>& flows, const std::vector<int>& links) {
  // Progressive filling: repeatedly take the link whose remaining capacity,
  // shared by its unfixed flows, is smallest (ties: the lowest index); fix
  // those flows at that share. A heap of (share, link, version) finds it;
  // an entry whose link changed since it was pushed is stale.
  struct Entry {
    double share;
    int link, version;
    bool operator>(const Entry& o) const {
      return share != o.share ? share > o.share : link > o.link;
    }
  };
  fixed_.resize(flows_.size());
  for (int i : flows) {
    fixed_[size_t(i)] = 0;
    flows_[size_t(i)].rate = 0;
  }
  std::vector<Entry> heap;
  for (int l : links) {
    left_[size_t(l)] = capacities_[size_t(l)];
    unfixed_[size_t(l)] = int(linkIds_[size_t(l)].size());
    if (unfixed_[size_t(l)] > 0)
      heap.push_back({left_[size_t(l)] / unfixed_[size_t(l)], l, version_[size_t(l)]});
  }
  auto later = [](const Entry& a, const Entry& b) { return a > b; };
  std::make_heap(heap.begin(), heap.end(), later);
  std::vector<int> touched;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Entry e = heap.back();
    heap.pop_back();
    const size_t b = size_t(e.link);
    if (e.version != version_[b] || unfixed_[b] == 0) continue;
    const double share = e.share;
    touched.clear();
    for (int64_t id : linkIds_[b]) {
      const size_t i = indexOf(id);
      if (fixed_[i]) continue;
      Flow& f = flows_[i];
      // Rounding may leave a link a hair below its exact share; never stop a flow.
      f.rate = std::max(share, capacities_[b] * 1e-9);
      fixed_[i] = 1;
      for (int l : f.links) {
        left_[size_t(l)] = std::max(0.0, left_[size_t(l)] - share);
        --unfixed_[size_t(l)];
        if (!linkSeen_[size_t(l)]) {
          linkSeen_[size_t(l)] = 1;
          touched.push_back(l);
        }
      }
    }
    for (int l : touched) {
      linkSeen_[size_t(l)] = 0;
      ++version_[size_t(l)];
      if (unfixed_[size_t(l)] > 0) {
        heap.push_back({left_[size_t(l)] / unfixed_[size_t(l)], l, version_[size_t(l)]});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
}

const FlowNetwork::Flow* FlowNetwork::find(int64_t id) const {
  settle();
  if (id < 0 || size_t(id) >= pos_.size() || pos_[size_t(id)] < 0) return nullptr;
  return &flows_[indexOf(id)];
}

double FlowNetwork::rate(int64_t id) const {
  const Flow* f = find(id);
  return f ? f->rate : 0;
}

double FlowNetwork::remaining(int64_t id) const {
  const Flow* f = find(id);
  return f ? f->remaining : 0;
}

int64_t FlowNetwork::finishCycle(int64_t id) const {
  const Flow* f = find(id);
  return f ? f->finish : -1;
}

}  // namespace tpusim::sim::ici
