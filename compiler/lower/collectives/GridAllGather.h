// The all-gather of large chunks along dimension 0 (the primitive the
// spmd-collectives pass leaves) as pipelined neighbour-to-neighbour rings,
// one per slice dimension the group spans, all of them busy at once:
//
//  - each chunk is cut into D parts (D = the dimensions the group spans);
//    part j is gathered along the dimensions in the order j, j + 1, ... (mod
//    D), so at any time each part uses a different dimension's links;
//  - along a wrapping dimension (a ring) both directions carry the part's
//    whole block half way round (an even ring's opposite chip gets half of
//    it each way): n / 2 hops per block instead of n - 1 for the same bytes
//    per link (the Hamiltonian ring keeps half a part each way all round);
//    along one without wraparound (a line) every block travels both ways to
//    the ends;
//  - a block is forwarded as soon as it has arrived (a flag per stream counts
//    arrivals), straight from the result buffer of one chip into the same
//    addresses of its neighbour: no copies, no barrier per step;
//  - a chip starts once each neighbour has signalled that it is ready (its
//    result buffer is free): a `sync.remote` to each neighbour instead of a
//    barrier over the slice;
//  - with link flags (synchronous, per-dimension rings): a ring's blocks
//    that take several hops' time on the wire go in pieces, each forwarded
//    once it has arrived, and sends are paced per link (each counts on its
//    (dimension, direction)'s flag and waits until the link's previous piece
//    has left), so a piece arrives while the next ones are on the wire and a
//    step no longer waits for the whole block and a hop; every phase of a
//    part goes in its last phase's piece count (even), so a later phase's
//    piece q reads only the earlier phases' pieces q (the same byte range of
//    each chunk) and goes right after their last arrival.
//
// The groups must be whole sub-grids of the slice (members along the
// dimensions they span, in row-major order), the case of replica_groups={}
// and of the row / column groups of tensor parallelism; other groups keep the
// one-shot exchange (CollectiveLowering.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/lower/control/ControlCode.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

constexpr int kMaxGridGatherDims = 3;
// One arrival flag per (part, phase, direction).
constexpr int kGridGatherStreamFlags = 2 * kMaxGridGatherDims * kMaxGridGatherDims;

struct GridGatherFlags {
  int ready = 0, sent = 0, local = 0;
  int firstStream = 0;  // firstStream - i for stream i
  // firstLink - l: the sent flag of link l (2 x grid dimension index +
  // (direction < 0)); -1: none, the sends are not paced (whole blocks).
  int firstLink = -1;
};

struct GridGather {
  DeviceGroups groups;
  std::vector<int> slice;     // the slice's dimensions
  std::vector<int> gridDims;  // slice dimensions the groups span (gridGatherDims)
  uint64_t chunk = 0;         // bytes per member
  uint64_t operand = 0, result = 0;
  // Set: one ring over the members in this order (slots, a Hamiltonian cycle:
  // HamiltonianRing.h); slice is then {members} and gridDims {0}, and a
  // device's coordinate is its position in the ring. The functions below
  // take it themselves where it beats the grid.
  std::vector<int> ringOrder;
};

// The slice dimensions every group spans when each group is a whole sub-grid
// of the slice in row-major order (at most kMaxGridGatherDims of them);
// nullopt otherwise.
std::optional<std::vector<int>> gridGatherDims(const DeviceGroups& groups,
                                               const std::vector<int>& slice);

// Can the plan be emitted (32-bit addresses, every part at least 2 bytes)?
bool gridAllGatherFits(const GridGather& g);

// Estimated cycles (the slowest part's phases: steps x (hop + block / link)).
double gridAllGatherCycles(const GridGather& g, const target::ChipConfig& chip);

void emitGridAllGather(ControlCode& code, const GridGather& g, const target::ChipConfig& chip,
                       const GridGatherFlags& flags);

// The same in two parts, for an async start: emits the handshake and the
// first sends (nothing that waits for another chip's blocks), and returns
// what emits the rest (at the done: it reloads chip.id, as the work between
// the parts uses the registers, copies the own chunk, forwards the blocks).
// The first blocks' transfers overlap that work; the forwarding needs the
// scalar unit.
std::function<void(ControlCode&)> beginGridAllGather(ControlCode& code, const GridGather& g,
                                                     const target::ChipConfig& chip,
                                                     const GridGatherFlags& flags);

}  // namespace tpusim::lower
