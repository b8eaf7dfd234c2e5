// The SPMD view of a module and of the slice it runs on: how many devices,
// which device is in which group of a collective, the slice's shape (the most
// square one of the preset's torus that holds the devices), hop counts, ring
// orders, and the algorithm a collective gets (one-shot or ring) from a cost
// estimate over the preset's ICI fields. Plain functions, no code generation.
//
// Device ids: as the reference evaluator (compiler/hlo/eval/Collectives.h)
// runs a module, N devices each both replica and partition, N the largest of
// replica_count, num_partitions and the ids replica_groups /
// source_target_pairs name. Ids in replica_groups are device ids whatever
// channel_id / use_global_device_ids say; that is XLA's meaning whenever one
// of replica_count and num_partitions is 1 (cross-replica groups of a
// replica-only module, cross-partition or flattened groups of a
// partition-only one). A module with both above 1 is refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/hlo/HloModule.h"
#include "isa/target/ChipConfig.h"

namespace tpusim::lower {

using DeviceGroups = std::vector<std::vector<int64_t>>;

// Devices a module runs on (1: not SPMD): its replica_count or
// num_partitions, else (neither above 1) the most any collective names. Throws
// std::invalid_argument for a module with replica_count > 1 and
// num_partitions > 1.
int64_t spmdDeviceCount(const hlo::HloModule& module);

// The groups of a collective over `devices`: replica_groups expanded (list or
// iota form), an empty list meaning one group of every device. Throws
// std::invalid_argument when an id is out of range, a device is in two groups
// or in none, or the groups differ in size.
DeviceGroups collectiveGroups(const hlo::HloInstruction& inst, int64_t devices);

// source_target_pairs as (source, target); throws std::invalid_argument when a
// device is a source or a target twice, or an id is out of range.
std::vector<std::pair<int64_t, int64_t>> permutePairs(const hlo::HloInstruction& inst,
                                                      int64_t devices);

// The slice a program for `devices` chips runs on: the most square shape of
// the preset's torus dimensions that holds exactly `devices` chips and fits
// in ici.pod_shape ({devices} on a 1-D fit). Throws std::invalid_argument
// when none fits.
std::vector<int> spmdSlice(int64_t devices, const target::IciConfig& ici);
std::string sliceText(const std::vector<int>& dims);  // "2x4"

// The coordinates of device `id` on the slice (row-major, the last dimension fastest).
std::vector<int> coordsOf(int64_t id, const std::vector<int>& dims);

// Does dimension `size` of a slice have wraparound links (sim/ici/Torus.h's rule)?
bool sliceWraps(int size, const target::IciConfig& ici);
// Hops of a dimension-ordered route from device a to b on the slice.
int64_t sliceHops(int64_t a, int64_t b, const std::vector<int>& dims, const target::IciConfig& ici);

// `group` reordered so that consecutive members (and the last and the first)
// are as few hops apart as the slice allows: members in snake order over the
// slice's coordinates (rows alternate direction), which is a cycle of 1-hop
// steps on a whole 2-D slice with an even number of rows.
std::vector<int64_t> ringOrder(const std::vector<int64_t>& group, const std::vector<int>& dims);

// The most transfers of a one-shot exchange within every group (each member
// to each other, dimension-ordered routes) that share one link direction.
int64_t busiestLinkTransfers(const DeviceGroups& groups, const std::vector<int>& dims,
                             const target::IciConfig& ici);
// Estimated cycles of the one-shot all-gather of `bytes` per member: a
// barrier and the farthest hop (2 x the slice's diameter in hops), plus the
// busiest link's transfers one after the other.
double oneShotGatherCycles(uint64_t bytes, const DeviceGroups& groups, const std::vector<int>& dims,
                           const target::ChipConfig& chip);

enum class CollectiveAlgorithm { OneShot, Ring };
const char* algorithmName(CollectiveAlgorithm a);

struct AlgorithmChoice {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::OneShot;
  double oneShotCycles = 0, ringCycles = 0;  // the estimates compared
};

// The algorithm for a reduction (all-reduce, reduce-scatter) of `bytes` per
// device over `group`: the one-shot exchange (every member sends its whole
// operand to every other, one synchronization, then a local reduction) or the
// ring (n - 1 reduce-scatter steps of bytes / n to the ring neighbour, each
// synchronized, then a one-shot all-gather of the reduced chunks). Estimates
// (cycles): a synchronization (a barrier of every device) costs the slice's largest hop count x
// ici.latency_cycles; one-shot: sync + (n - 1) x bytes over the chip's
// outgoing links (the slice's corner chip's: 2 per wrapping dimension, 1 per
// other) + the farthest member's hops; ring:
// (n - 1) x (sync + bytes / n over one link + the ring's longest hop) + the
// all-gather's one-shot cost for bytes / n. The ring also needs the element
// count to split into n chunks (`splittable`).
AlgorithmChoice chooseReductionAlgorithm(uint64_t bytes, const std::vector<int64_t>& group,
                                         const std::vector<int>& dims, bool splittable,
                                         const target::ChipConfig& chip);

}  // namespace tpusim::lower
