#include "compiler/lower/collectives/SpmdPlan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

namespace tpusim::lower {

using hlo::HloInstruction;

namespace {

int64_t devicesNamed(const hlo::HloModule& module) {
  int64_t n = 1;
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions()) {
      if (inst->attrs().replicaGroups)
        for (const auto& g : inst->attrs().replicaGroups->expand())
          for (int64_t id : g) n = std::max(n, id + 1);
      if (const hlo::NamedAttr* pairs = inst->findGeneric("source_target_pairs"))
        for (const auto& p : pairs->value.lists)
          for (int64_t id : p) n = std::max(n, id + 1);
    }
  return n;
}

}  // namespace

std::vector<int> coordsOf(int64_t id, const std::vector<int>& dims) {
  std::vector<int> c(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    c[k] = int(id % dims[k]);
    id /= dims[k];
  }
  return c;
}

int64_t spmdDeviceCount(const hlo::HloModule& module) {
  if (module.replicaCount() > 1 && module.numPartitions() > 1)
    throw std::invalid_argument(fmt::format(
        "module '{}' has replica_count={} and num_partitions={}: SPMD programs with both "
        "replicas and partitions are not supported (one of them must be 1)",
        module.name(), module.replicaCount(), module.numPartitions()));
  // The header's count when it has one (an id beyond it is the collective's
  // error); else the devices the collectives name.
  const int64_t declared = std::max(module.replicaCount(), module.numPartitions());
  if (declared > 1) return declared;
  return std::max(int64_t{1}, devicesNamed(module));
}

DeviceGroups collectiveGroups(const HloInstruction& inst, int64_t devices) {
  DeviceGroups groups;
  if (inst.attrs().replicaGroups) groups = inst.attrs().replicaGroups->expand();
  if (groups.empty() || (groups.size() == 1 && groups[0].empty())) {
    std::vector<int64_t> all(size_t(devices), 0);
    std::iota(all.begin(), all.end(), 0);
    return {all};
  }
  std::vector<int> seen(size_t(devices), 0);
  for (const auto& g : groups) {
    if (g.size() != groups[0].size())
      throw std::invalid_argument(
          fmt::format("replica_groups of different sizes ({} and {})", groups[0].size(), g.size()));
    for (int64_t id : g) {
      if (id < 0 || id >= devices)
        throw std::invalid_argument(
            fmt::format("replica_groups name device {} of {} devices", id, devices));
      if (seen[size_t(id)]++)
        throw std::invalid_argument(fmt::format("device {} is in two replica_groups", id));
    }
  }
  for (int64_t d = 0; d < devices; ++d)
    if (!seen[size_t(d)])
      throw std::invalid_argument(fmt::format("device {} is in none of the replica_groups", d));
  return groups;
}

std::vector<std::pair<int64_t, int64_t>> permutePairs(const HloInstruction& inst, int64_t devices) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::vector<int> asSource(size_t(devices), 0), asTarget(size_t(devices), 0);
  if (const hlo::NamedAttr* pairs = inst.findGeneric("source_target_pairs"))
    for (const auto& p : pairs->value.lists) {
      if (p.size() != 2)
        throw std::invalid_argument("source_target_pairs entries must be {source,target}");
      for (int64_t id : p)
        if (id < 0 || id >= devices)
          throw std::invalid_argument(
              fmt::format("source_target_pairs name device {} of {} devices", id, devices));
      if (asSource[size_t(p[0])]++)
        throw std::invalid_argument(fmt::format("device {} is a source twice", p[0]));
      if (asTarget[size_t(p[1])]++)
        throw std::invalid_argument(fmt::format("device {} is a target twice", p[1]));
      out.emplace_back(p[0], p[1]);
    }
  return out;
}

std::vector<int> spmdSlice(int64_t devices, const target::IciConfig& ici) {
  std::vector<int64_t> pod = ici.podDims();
  if (pod.empty())
    throw std::invalid_argument(fmt::format("ici.pod_shape '{}' is malformed", ici.pod_shape));
  // Every factorization of `devices` into pod.size() dimensions that fits;
  // the most square one (smallest largest dimension, then sorted ascending).
  std::vector<int> best, cur(pod.size(), 1);
  std::function<void(size_t, int64_t)> search = [&](size_t k, int64_t left) {
    if (k + 1 == pod.size()) {
      if (left > pod[k]) return;
      cur[k] = int(left);
      int mx = *std::max_element(cur.begin(), cur.end());
      if (best.empty() || mx < *std::max_element(best.begin(), best.end()) ||
          (mx == *std::max_element(best.begin(), best.end()) && cur < best))
        best = cur;
      return;
    }
    for (int64_t f = 1; f <= std::min(left, pod[k]); ++f)
      if (left % f == 0) {
        cur[k] = int(f);
        search(k + 1, left / f);
      }
  };
  search(0, devices);
  if (best.empty())
    throw std::invalid_argument(
        fmt::format("{} devices do not fit in the pod {} of the preset", devices, ici.pod_shape));
  return best;
}

std::string sliceText(const std::vector<int>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

bool sliceWraps(int size, const target::IciConfig& ici) {
  return size > 2 && ici.wrap_multiple > 0 && size % ici.wrap_multiple == 0;
}

int64_t sliceHops(int64_t a, int64_t b, const std::vector<int>& dims,
                  const target::IciConfig& ici) {
  std::vector<int> ca = coordsOf(a, dims), cb = coordsOf(b, dims);
  int64_t hops = 0;
  for (size_t k = 0; k < dims.size(); ++k) {
    int d = std::abs(ca[k] - cb[k]);
    hops += sliceWraps(dims[k], ici) ? std::min(d, dims[k] - d) : d;
  }
  return hops;
}

std::vector<int64_t> ringOrder(const std::vector<int64_t>& group, const std::vector<int>& dims) {
  // Snake key: coordinates where every dimension after the first runs
  // backwards when the coordinates before it sum to an odd number.
  auto key = [&](int64_t id) {
    std::vector<int> c = coordsOf(id, dims), k(c.size());
    int parity = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      k[i] = parity % 2 ? dims[i] - 1 - c[i] : c[i];
      parity += k[i];
    }
    return k;
  };
  std::vector<int64_t> out = group;
  std::stable_sort(out.begin(), out.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
  return out;
}

const char* algorithmName(CollectiveAlgorithm a) {
  return a == CollectiveAlgorithm::Ring ? "ring" : "one-shot";
}

AlgorithmChoice chooseReductionAlgorithm(uint64_t bytes, const std::vector<int64_t>& group,
                                         const std::vector<int>& dims, bool splittable,
                                         const target::ChipConfig& chip) {
  AlgorithmChoice c;
  const target::IciConfig& ici = chip.ici;
  const double n = double(group.size());
  const double lat = double(ici.latency_cycles);
  const double linkBytesPerCycle = ici.link_bytes_per_second / chip.core.clock_hz;
  // Links out of the slice's corner chip (the fewest): 2 per wrapping
  // dimension, 1 per other dimension of more than one chip.
  int64_t cornerLinks = 0;
  for (int d : dims) cornerLinks += d < 2 ? 0 : sliceWraps(d, ici) ? 2 : 1;
  const double links = double(std::max<int64_t>(1, std::min(cornerLinks, ici.links)));
  int64_t devices = 1, diameter = 0, farthest = 0, ringHop = 0;
  for (int d : dims) devices *= d;
  for (int64_t a = 0; a < devices; ++a)
    for (int64_t b = 0; b < devices; ++b) diameter = std::max(diameter, sliceHops(a, b, dims, ici));
  std::vector<int64_t> ring = ringOrder(group, dims);
  for (size_t i = 0; i < ring.size(); ++i) {
    ringHop = std::max(ringHop, sliceHops(ring[i], ring[(i + 1) % ring.size()], dims, ici));
    for (int64_t b : group) farthest = std::max(farthest, sliceHops(ring[i], b, dims, ici));
  }
  const double sync = double(diameter) * lat;
  auto oneShot = [&](double b) {
    return sync + (n - 1) * b / (links * linkBytesPerCycle) + double(farthest) * lat;
  };
  c.oneShotCycles = oneShot(double(bytes));
  c.ringCycles = (n - 1) * (sync + double(bytes) / n / linkBytesPerCycle + double(ringHop) * lat) +
                 oneShot(double(bytes) / n);
  if (group.size() > 2 && splittable && c.ringCycles < c.oneShotCycles)
    c.algorithm = CollectiveAlgorithm::Ring;
  return c;
}

}  // namespace tpusim::lower

namespace tpusim::lower {

int64_t busiestLinkTransfers(const DeviceGroups& groups, const std::vector<int>& dims,
                             const target::IciConfig& ici) {
  std::map<std::tuple<int64_t, size_t, int>, int64_t> load;  // (chip, dimension, direction)
  int64_t busiest = 0;
  for (const auto& g : groups)
    for (int64_t a : g)
      for (int64_t b : g) {
        if (a == b) continue;
        std::vector<int> c = coordsOf(a, dims), to = coordsOf(b, dims);
        for (size_t k = 0; k < dims.size(); ++k) {
          int n = dims[k], fwd = ((to[k] - c[k]) % n + n) % n;
          int dir = to[k] > c[k] ? 1 : -1;
          if (sliceWraps(n, ici)) dir = fwd <= n - fwd ? 1 : -1;
          while (c[k] != to[k]) {
            int64_t here = 0;
            for (size_t e = 0; e < dims.size(); ++e) here = here * dims[e] + c[e];
            busiest = std::max(busiest, ++load[{here, k, dir}]);
            c[k] = ((c[k] + dir) % n + n) % n;
          }
        }
      }
  return busiest;
}

double oneShotGatherCycles(uint64_t bytes, const DeviceGroups& groups, const std::vector<int>& dims,
                           const target::ChipConfig& chip) {
  const target::IciConfig& ici = chip.ici;
  const double linkBytesPerCycle = ici.link_bytes_per_second / chip.core.clock_hz;
  int64_t devices = 1, diameter = 0;
  for (int d : dims) devices *= d;
  for (int64_t a = 0; a < devices; ++a)
    for (int64_t b = 0; b < devices; ++b) diameter = std::max(diameter, sliceHops(a, b, dims, ici));
  return double(2 * diameter * ici.latency_cycles) +
         double(busiestLinkTransfers(groups, dims, ici)) * double(bytes) / linkBytesPerCycle;
}

}  // namespace tpusim::lower
