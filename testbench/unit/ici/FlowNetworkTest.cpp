// The ICI link model alone (sim/ici/FlowNetwork): flows added and removed,
// rates recomputed max-min fairly, finish cycles from bytes and rates.
#include <catch2/catch.hpp>

#include "sim/ici/FlowNetwork.h"

using tpusim::sim::ici::FlowNetwork;

TEST_CASE("one flow finishes after bytes / bandwidth", "[ici][flow]") {
  FlowNetwork net(4, 30.0);
  int64_t f = net.add(100, {0, 1, 2}, 3000);
  CHECK(net.rate(f) == 30.0);
  CHECK(net.finishCycle(f) == 200);
  CHECK(net.nextFinish() == 200);
  CHECK(net.takeFinished(199).empty());
  CHECK(net.takeFinished(200) == std::vector<int64_t>{f});
  CHECK(net.activeFlows() == 0);
  CHECK(net.nextFinish() == -1);
  for (int l : {0, 1, 2}) CHECK(net.linkStats(l).bytes == Approx(3000));
  CHECK(net.linkStats(3).bytes == 0);
}

TEST_CASE("a partial cycle rounds the finish up", "[ici][flow]") {
  FlowNetwork net(1, 30.0);
  int64_t f = net.add(0, {0}, 3001);
  CHECK(net.finishCycle(f) == 101);
}

TEST_CASE("two flows on one link share it and take twice as long", "[ici][flow]") {
  FlowNetwork net(2, 30.0);
  int64_t a = net.add(0, {0}, 3000);
  int64_t b = net.add(0, {0}, 3000);
  CHECK(net.rate(a) == 15.0);
  CHECK(net.rate(b) == 15.0);
  CHECK(net.finishCycle(a) == 200);
  CHECK(net.finishCycle(b) == 200);
  CHECK(net.takeFinished(200).size() == 2);
  CHECK(net.linkStats(0).bytes == Approx(6000));
}

TEST_CASE("a flow that ends gives its share back", "[ici][flow]") {
  FlowNetwork net(1, 30.0);
  int64_t a = net.add(0, {0}, 1500);  // alone it would take 50 cycles
  int64_t b = net.add(0, {0}, 6000);
  // Shared: 15 B/cycle each; a ends at 100 having moved 1500, b has 4500 left.
  CHECK(net.finishCycle(a) == 100);
  CHECK(net.takeFinished(100) == std::vector<int64_t>{a});
  CHECK(net.rate(b) == 30.0);
  CHECK(net.remaining(b) == Approx(4500));
  CHECK(net.finishCycle(b) == 250);
  int64_t updates = net.rateUpdates();
  net.advanceTo(200);  // no change in the set of flows: no recomputation
  CHECK(net.rateUpdates() == updates);
  CHECK(net.finishCycle(b) == 250);
}

TEST_CASE("a flow added later slows the first one down from then on", "[ici][flow]") {
  FlowNetwork net(1, 30.0);
  int64_t a = net.add(0, {0}, 6000);  // 200 cycles alone
  net.add(100, {0}, 6000);            // a has 3000 left, now at 15 B/cycle
  CHECK(net.remaining(a) == Approx(3000));
  CHECK(net.finishCycle(a) == 300);
}

TEST_CASE("max-min fairness: a flow limited elsewhere leaves its share to others", "[ici][flow]") {
  // Links 0 and 1; flows x: {0, 1}, y: {1}, z: {0}, w: {0}. Link 0 has three
  // flows (10 each), so x gets 10 and y takes the other 20 of link 1.
  FlowNetwork net(2, 30.0);
  int64_t x = net.add(0, {0, 1}, 1000);
  int64_t y = net.add(0, {1}, 1000);
  int64_t z = net.add(0, {0}, 1000);
  int64_t w = net.add(0, {0}, 1000);
  CHECK(net.rate(x) == Approx(10));
  CHECK(net.rate(z) == Approx(10));
  CHECK(net.rate(w) == Approx(10));
  CHECK(net.rate(y) == Approx(20));
}

TEST_CASE("the same calls give the same cycles", "[ici][flow]") {
  auto run = [] {
    FlowNetwork net(3, 7.0);
    std::vector<int64_t> finishes;
    net.add(0, {0, 1}, 12345);
    net.add(3, {1, 2}, 999);
    net.add(7, {2}, 5000);
    while (net.activeFlows() > 0) {
      int64_t t = net.nextFinish();
      for (int64_t id : net.takeFinished(t)) finishes.push_back(id * 1000000 + t);
    }
    return finishes;
  };
  CHECK(run() == run());
}

TEST_CASE("a slower resource on the path holds every flow through it down", "[ici][flow]") {
  // Links 0 and 1 at 30 B/cycle lead into resource 2 (a receiver's ingress)
  // that absorbs 20 B/cycle: the two flows share it, 10 B/cycle each.
  FlowNetwork net(std::vector<double>{30.0, 30.0, 20.0});
  CHECK(net.capacity(2) == 20.0);
  int64_t a = net.add(0, {0, 2}, 3000);
  CHECK(net.rate(a) == 20.0);  // alone: the receiver's rate, below the link's
  int64_t b = net.add(0, {1, 2}, 3000);
  CHECK(net.rate(a) == 10.0);
  CHECK(net.rate(b) == 10.0);
  CHECK(net.finishCycle(a) == 300);
  // A third flow on link 0 to elsewhere takes what the receiver leaves.
  int64_t c = net.add(0, {0}, 3000);
  CHECK(net.rate(c) == 20.0);
  CHECK(net.finishCycle(c) == 150);
  CHECK(net.takeFinished(300).size() == 3);
  CHECK(net.linkStats(2).bytes == Approx(6000));
}
