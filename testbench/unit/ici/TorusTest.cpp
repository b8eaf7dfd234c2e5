// Slices of the pod (sim/ici/Torus): device ids, links, wraparound only where
// the preset says a dimension wraps, dimension-order routes, and the errors of
// a --topology that does not fit the preset.
#include <catch2/catch.hpp>

#include "isa/target/ChipLoader.h"
#include "sim/ici/Torus.h"

using tpusim::sim::ici::Torus;

namespace {
tpusim::target::IciConfig ici(const char* preset) { return tpusim::target::loadChip(preset).ici; }

std::string errorOf(const std::string& text, const char* preset) {
  try {
    Torus::parse(text, ici(preset));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("device ids are row-major, the last dimension fastest", "[ici][torus]") {
  Torus t = Torus::parse("2x4", ici("v5e"));
  CHECK(t.numChips() == 8);
  CHECK(t.coords(5) == std::vector<int>{1, 1});
  CHECK(t.chipAt({1, 3}) == 7);
  Torus c = Torus::parse("2x2x2", ici("v4"));
  CHECK(c.coords(6) == std::vector<int>{1, 1, 0});
}

TEST_CASE("v5e wraps only a dimension of 16 chips", "[ici][torus]") {
  Torus small = Torus::parse("4x4", ici("v5e"));
  CHECK(!small.wraps(0));
  CHECK(!small.wraps(1));
  // Corner to corner without wraparound: 3 + 3 hops.
  CHECK(small.route(0, 15).size() == 6);
  CHECK(small.neighbour(0, 1, 1) == -1);  // no link off the edge
  Torus pod = Torus::parse("16x16", ici("v5e"));
  CHECK(pod.wraps(0));
  CHECK(pod.wraps(1));
  // With wraparound the short way round: (0,0) -> (15,15) is 1 + 1 hops.
  CHECK(pod.route(0, 255).size() == 2);
  Torus line = Torus::parse("1x16", ici("v5e"));
  CHECK(!line.wraps(0));
  CHECK(line.wraps(1));
  CHECK(line.route(0, 15).size() == 1);
}

TEST_CASE("v4 wraps a dimension of whole 4x4x4 cubes", "[ici][torus]") {
  Torus t = Torus::parse("4x4x2", ici("v4"));
  CHECK(t.wraps(0));
  CHECK(t.wraps(1));
  CHECK(!t.wraps(2));
  CHECK(t.route(t.chipAt({0, 0, 0}), t.chipAt({3, 0, 0})).size() == 1);
}

TEST_CASE("routes go dimension by dimension over existing links", "[ici][torus]") {
  Torus t = Torus::parse("2x4", ici("v5e"));
  std::vector<int> path = t.route(t.chipAt({0, 0}), t.chipAt({1, 2}));
  REQUIRE(path.size() == 3);
  CHECK(t.link(path[0]).dim == 0);
  CHECK(t.link(path[1]).dim == 1);
  CHECK(t.link(path[2]).dim == 1);
  CHECK(t.link(path[1]).chip == t.chipAt({1, 0}));
  for (int l : path) CHECK(t.linkExists(l));
  CHECK(t.route(3, 3).empty());
  // A chip has at most the preset's links.
  int links = 0;
  for (int l = 0; l < t.numLinkSlots(); ++l) links += t.linkExists(l);
  CHECK(links == 2 * (2 * 1 * 4 / 2) + 2 * (2 * 3));  // dim 0: 4 pairs, dim 1: 2 rows x 3 pairs
}

TEST_CASE("a --topology that does not fit the preset is a clear error", "[ici][torus]") {
  CHECK_THAT(errorOf("2x2x2", "v5e"),
             Catch::Contains("3 dimension(s), but the preset's ICI is a 2d_torus"));
  CHECK_THAT(errorOf("2x4", "v4"), Catch::Contains("the preset's ICI is a 3d_torus"));
  CHECK_THAT(errorOf("32x2", "v5e"),
             Catch::Contains("dimension 0 has 32 chips, more than the preset's pod has (16"));
  CHECK_THAT(errorOf("2by4", "v5e"), Catch::Contains("expected chips per dimension joined by 'x'"));
  CHECK_THAT(errorOf("2x", "v5e"), Catch::Contains("expected chips per dimension"));
  CHECK_THAT(errorOf("0x4", "v5e"), Catch::Contains("dimension 0 has no chips"));
  CHECK_THAT(errorOf("2x-4", "v5e"), Catch::Contains("expected chips per dimension"));
}
