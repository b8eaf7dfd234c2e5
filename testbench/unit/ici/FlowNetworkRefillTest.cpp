// FlowNetwork's refill of only the changed component (sim/ici/FlowNetwork):
// held to the whole-network progressive filling it replaced, bit for bit,
// over random flows, and shown to touch only the flows joined to a change.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "sim/ici/FlowNetwork.h"

using tpusim::sim::ici::FlowNetwork;

namespace {

// The slow, obvious twin: every change refills every flow, scanning all
// links for the tightest and all flows for those on it.
class WholeNetwork {
 public:
  explicit WholeNetwork(std::vector<double> caps) : caps_(std::move(caps)) {}
  int64_t add(int64_t now, std::vector<int> links, double bytes) {
    advanceTo(now);
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
    flows_[next_] = {std::move(links), bytes, 0, 0};
    fill();
    return next_++;
  }
  void advanceTo(int64_t now) {
    double dt = double(now - now_);
    for (auto& [id, f] : flows_) f.remaining -= std::min(f.remaining, f.rate * dt);
    now_ = now;
  }
  std::vector<int64_t> takeFinished(int64_t now) {
    advanceTo(now);
    std::vector<int64_t> done;
    for (auto it = flows_.begin(); it != flows_.end();)
      if (it->second.finish <= now) {
        done.push_back(it->first);
        it = flows_.erase(it);
      } else {
        ++it;
      }
    if (!done.empty()) fill();
    return done;
  }
  struct Flow {
    std::vector<int> links;
    double remaining, rate;
    int64_t finish;
  };
  std::map<int64_t, Flow> flows_;

 private:
  void fill() {
    std::vector<double> left = caps_;
    std::vector<int> unfixed(caps_.size(), 0);
    std::map<int64_t, bool> fixed;
    for (auto& [id, f] : flows_) {
      fixed[id] = false;
      for (int l : f.links) ++unfixed[size_t(l)];
    }
    size_t open = flows_.size();
    while (open > 0) {
      int b = -1;
      double share = 0;
      for (size_t l = 0; l < caps_.size(); ++l)
        if (unfixed[l] > 0 && (b < 0 || left[l] / unfixed[l] < share)) {
          b = int(l);
          share = left[l] / unfixed[l];
        }
      for (auto& [id, f] : flows_) {
        if (fixed[id] || !std::binary_search(f.links.begin(), f.links.end(), b)) continue;
        f.rate = std::max(share, caps_[size_t(b)] * 1e-9);
        fixed[id] = true;
        --open;
        for (int l : f.links) {
          left[size_t(l)] = std::max(0.0, left[size_t(l)] - share);
          --unfixed[size_t(l)];
        }
      }
    }
    for (auto& [id, f] : flows_) {
      if (f.remaining <= 1e-6) {
        f.finish = now_;
      } else {
        double exact = double(now_) + f.remaining / f.rate;
        f.finish = std::max(now_ + 1, int64_t(std::ceil(exact - 1e-12 * std::max(1.0, exact))));
      }
    }
  }
  std::vector<double> caps_;
  int64_t now_ = 0, next_ = 0;
};

}  // namespace

TEST_CASE("refilling the changed component equals refilling every flow, bit for bit",
          "[ici][flow]") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const int links = 4 + int(rng() % 40);
    std::vector<double> caps(static_cast<size_t>(links));
    // Few distinct capacities, so shares tie often (ties go to the lowest link).
    for (double& c : caps) c = std::vector<double>{30.0, 30.0, 20.0, 7.5, 45.0}[rng() % 5];
    FlowNetwork net(caps);
    WholeNetwork ref(caps);
    int64_t now = 0;
    for (int step = 0; step < 300; ++step) {
      if (rng() % 3 != 0 || net.activeFlows() == 0) {
        std::vector<int> path;
        for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) path.push_back(int(rng() % links));
        double bytes = double(1 + rng() % 20000) / (1 + rng() % 3);
        if (rng() % 2) now += int64_t(rng() % 50);
        REQUIRE(net.add(now, path, bytes) == ref.add(now, path, bytes));
      } else {
        now = net.nextFinish();
        REQUIRE(net.takeFinished(now) == ref.takeFinished(now));
      }
      REQUIRE(net.activeFlows() == int(ref.flows_.size()));
      // Unread changes pile up (one recomputation for several at one cycle).
      if (rng() % 4 != 0) continue;
      for (const auto& [id, f] : ref.flows_) {
        REQUIRE(net.rate(id) == f.rate);
        REQUIRE(net.remaining(id) == f.remaining);
        REQUIRE(net.finishCycle(id) == f.finish);
      }
    }
  }
}

TEST_CASE("a change refills only the flows that share links with it", "[ici][flow]") {
  // Links 0-1 and 2-3 carry two separate groups; a flow into group 0-1
  // refills that group alone, and a finish there leaves group 2-3 as it was.
  FlowNetwork net(4, 30.0);
  net.add(0, {0, 1}, 3000);
  net.add(0, {1}, 6000);
  int64_t before = net.flowsRefilled();
  net.add(0, {2, 3}, 9000);
  CHECK(net.flowsRefilled() - before == 1);
  before = net.flowsRefilled();
  net.add(0, {3}, 9000);
  CHECK(net.flowsRefilled() - before == 2);
  before = net.flowsRefilled();
  CHECK(net.takeFinished(net.nextFinish()).size() == 1);  // {0, 1} at 15 B/cycle: 200
  CHECK(net.flowsRefilled() - before == 1);               // the {1} flow alone
  CHECK(net.rate(1) == 30.0);
}

TEST_CASE("several flows added at one cycle are refilled once, when a rate is read",
          "[ici][flow]") {
  FlowNetwork net(1, 30.0);
  for (int k = 0; k < 4; ++k) net.add(100, {0}, 3000);
  CHECK(net.rateUpdates() == 4);    // four changes to the set of flows
  CHECK(net.flowsRefilled() == 4);  // one refill of the four, not 1 + 2 + 3 + 4
  CHECK(net.rate(3) == 7.5);
  CHECK(net.nextFinish() == 500);
}
