#include "compiler/lower/collectives/HamiltonianRing.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/lower/collectives/SpmdPlan.h"
#include "kernels/lib/Collectives.h"

namespace tpusim::lower {

std::vector<int> hamiltonianCycle(const std::vector<int>& slice, const std::vector<int>& gridDims,
                                  const target::IciConfig& ici) {
  if (slice.size() != 2 || gridDims.size() != 2) return {};
  const int r = slice[0], c = slice[1];
  if (r < 2 || c < 2 || (r % 2 != 0 && c % 2 != 0)) return {};
  if (sliceWraps(r, ici) || sliceWraps(c, ici)) return {};
  // The kernel library's cycle; every step (and the closing one) must be one hop.
  std::vector<int> order = kernels::lib::ringOrder(r * c, fmt::format("{}x{}", r, c));
  for (size_t i = 0; i < order.size(); ++i)
    if (sliceHops(order[i], order[(i + 1) % order.size()], slice, ici) != 1) return {};
  return order;
}

double gridBusiestLinkShare(const std::vector<int>& slice, const std::vector<int>& gridDims,
                            const target::IciConfig& ici) {
  const int parts = int(gridDims.size());
  std::map<int, double> load;
  for (int j = 0; j < parts; ++j) {
    double moved = 1.0 / parts;
    for (int p = 0; p < parts; ++p) {
      const int dim = gridDims[size_t((j + p) % parts)];
      const double m = slice[size_t(dim)];
      load[dim] += moved * (m - 1) / m / (sliceWraps(int(m), ici) ? 2 : 1);
      moved /= m;
    }
  }
  double busiest = 0;
  for (auto& [d, l] : load) busiest = std::max(busiest, l);
  return busiest;
}

double ringBusiestLinkShare(int n) { return double(n - 1) / (2.0 * n); }

}  // namespace tpusim::lower
