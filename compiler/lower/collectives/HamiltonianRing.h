// One bidirectional ring over a Hamiltonian cycle of a whole 2-D slice, as
// the kernel library's ring_all_reduce runs it (kernels/lib/Collectives.h),
// for the grid all-gather and the grid reduce-scatter on slices where that
// beats the per-dimension rings.
//
// Why: without wraparound the per-dimension rings are lines, and a line's end
// link carries (m - 1) / m of a phase's data one way. With the parts split
// evenly over the dimensions, an R x C slice with R != C loads the longer
// dimension's end links more than the other's (v5e 2x4: 9/16 of V against
// 5/16), while a ring of all n chips, half of the data each way round,
// loads every link (n - 1) / 2n of V (2x4: 7/16) and is one hop per step
// when one side is even. On square slices both are equal (2x2: 3/8, 4x4:
// 15/32): there the reduce-scatter keeps the grid, the all-gather takes the
// ring where its estimate is lower (its phases do not wait for each other).
#pragma once

#include <optional>
#include <vector>

#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

// Member slots (row-major over the slice) in the order of a cycle of one-hop
// steps, when the groups are the whole 2-D slice (gridDims spans both of its
// dimensions), neither dimension wraps and one side is even; empty otherwise.
std::vector<int> hamiltonianCycle(const std::vector<int>& slice, const std::vector<int>& gridDims,
                                  const target::IciConfig& ici);

// The busiest link direction's share of V (bytes of the gathered or
// scattered array) in the per-dimension algorithm: part j (1 / D of V) moves
// along the dimensions in the order j, j + 1, ...; a phase along a line
// loads its end link with (m - 1) / m of what the phase moves, along a ring
// half that per direction; each phase moves 1 / m of the one before.
double gridBusiestLinkShare(const std::vector<int>& slice, const std::vector<int>& gridDims,
                            const target::IciConfig& ici);

// The same for one bidirectional ring of n chips: (n - 1) / 2n.
double ringBusiestLinkShare(int n);

// A grid primitive's plan (GridGather or GridReduce) as that ring: slice
// {n}, gridDims {0}, ringOrder the cycle; with both algorithms' busiest link
// shares and the cycles the grid's share takes over one link. nullopt
// without a cycle.
template <typename Grid>
struct RingView {
  Grid ring;
  double ringShare = 0, gridShare = 0, gridLinkCycles = 0;
};
template <typename Grid>
std::optional<RingView<Grid>> hamiltonianView(const Grid& g, const target::ChipConfig& chip) {
  std::vector<int> order = hamiltonianCycle(g.slice, g.gridDims, chip.ici);
  if (order.empty() || !g.ringOrder.empty()) return std::nullopt;
  const int n = int(order.size());
  RingView<Grid> v{g, ringBusiestLinkShare(n), gridBusiestLinkShare(g.slice, g.gridDims, chip.ici),
                   0};
  v.gridLinkCycles = v.gridShare * double(n) * double(g.chunk) /
                     (chip.ici.link_bytes_per_second / chip.core.clock_hz);
  v.ring.slice = {n};
  v.ring.gridDims = {0};
  v.ring.ringOrder = std::move(order);
  return v;
}

}  // namespace tpusim::lower
