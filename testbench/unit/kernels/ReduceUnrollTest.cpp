// A lane reduction over many row tiles holds several row tiles per loop body:
// each tile ends in a serial chain (its column tiles folded, an XLU lane
// reduction, the store), and one tile per body left the XLUs idle for most
// of each iteration.
#include <catch2/catch.hpp>

#include <functional>
#include <sstream>
#include <string>

#include "kernels/dsl/PallasCall.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// XLU lane reductions in the blocks of --dump-machine text whose label starts with `prefix`.
int reductionsIn(const std::string& machine, const std::string& prefix) {
  std::istringstream in(machine);
  std::string line;
  bool inside = false;
  int n = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ') {
      inside = line.rfind(prefix, 0) == 0;
      continue;
    }
    if (inside &&
        (line.find("xlu.sum") != std::string::npos || line.find("xlu.max") != std::string::npos))
      ++n;
  }
  return n;
}

}  // namespace

namespace {
int rowMaxReductions(const std::function<Array(const Array&)>& f) {
  CallConfig c;
  c.name = "row_max";
  c.out_shapes = {{{256, 1}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({256, 256}, map)};
  c.out_specs = {BlockSpec({256, 1}, map)};
  auto k = pallas_call([&](Ref x, Ref o) { o.store(max(f(x.load()), 1)); }, c)
               .trace({{{256, 256}, F32, "x"}});
  codegen::CompiledKernel ck = testing::checkSimAgainstInterpret(*k, "v6e", 5).compiled;
  INFO(ck.machineText);
  return reductionsIn(ck.machineText, "loop");
}
}  // namespace

TEST_CASE("a lane reduction's row loop holds 8 row tiles per iteration") {
  CHECK(rowMaxReductions([](const Array& x) { return x * x; }) == 8);
}

TEST_CASE("a small lane reduction with a transcendental holds 16 row tiles per iteration") {
  // The tail after the last exp (folds, XLU reduction, store) is spread over twice the tiles.
  CHECK(rowMaxReductions([](const Array& x) { return exp(x); }) == 16);
}
