#include "compiler/lower/buffers/LoweringOrder.h"

#include "compiler/lower/buffers/ShapeBytes.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;

namespace {

bool isCustomCall(const HloInstruction* i, const char* target) {
  return i->opcode() == HloOpcode::CustomCall && i->attrs().customCallTarget.value_or("") == target;
}

bool isAsyncStart(const HloInstruction* i) {
  return isCustomCall(i, "tpusim$permute-start") || isCustomCall(i, "tpusim$all-gather-start") ||
         isCustomCall(i, "tpusim$ring-permute-start");
}

bool isAsyncDone(const HloInstruction* i) {
  return (isCustomCall(i, "tpusim$permute-done") || isCustomCall(i, "tpusim$all-gather-done")) &&
         i->operandCount() == 2 && isAsyncStart(i->operand(0));
}

// Estimated cycles: an async start's transfer, other work's HBM traffic.
double transferCycles(const HloInstruction* start, const target::ChipConfig& chip) {
  const double bytes = double(shapeBytes(start->shape()));
  return bytes / chip.ici.linkBytesPerCycle(chip.core.clock_hz) + double(chip.ici.latency_cycles);
}
double workCycles(const HloInstruction* i, const target::ChipConfig& chip) {
  switch (i->opcode()) {  // no code of their own
    case HloOpcode::Parameter:
    case HloOpcode::Constant:
    case HloOpcode::Reshape:
    case HloOpcode::Bitcast:
    case HloOpcode::Tuple:
    case HloOpcode::GetTupleElement:
      return 0;
    default:
      break;
  }
  double bytes = i->shape().isArray() ? double(shapeBytes(i->shape())) : 0;
  for (const HloInstruction* op : i->operands())
    if (op->shape().isArray()) bytes += double(shapeBytes(op->shape()));
  return bytes / (chip.hbmPeakBytesPerSecond() / chip.core.clock_hz);
}

// Edges (reader, update) that make each dynamic-update-slice come after the
// other readers of the array it updates, where the post order has a reader
// after it and the reader does not depend on the update: then buffer
// assignment can update the array in place (it does only for an operand's
// last reader) instead of copying it. XLA's copy insertion adds the same
// control edges.
std::vector<std::pair<HloInstruction*, HloInstruction*>> updateAfterReaders(
    const std::vector<HloInstruction*>& order,
    const std::unordered_map<const HloInstruction*, size_t>& position) {
  std::vector<std::pair<HloInstruction*, HloInstruction*>> edges;
  for (HloInstruction* update : order) {
    if (update->opcode() != HloOpcode::DynamicUpdateSlice) continue;
    const HloInstruction* array = update->operand(0);
    for (HloInstruction* reader : array->users()) {
      if (reader == update || !position.count(reader) || position.at(reader) < position.at(update))
        continue;
      // Does the reader depend on the update? Then the array must be copied.
      std::vector<const HloInstruction*> stack{reader};
      std::set<const HloInstruction*> seen;
      bool dependent = false;
      while (!stack.empty() && !dependent) {
        const HloInstruction* i = stack.back();
        stack.pop_back();
        if (!seen.insert(i).second || position.at(i) < position.at(update)) continue;
        for (const HloInstruction* op : i->operands()) {
          if (op == update) dependent = true;
          if (position.count(op)) stack.push_back(op);
        }
      }
      if (!dependent) edges.push_back({reader, update});
    }
  }
  return edges;
}

}  // namespace

namespace {
std::vector<HloInstruction*> loweringOrderOf(const hlo::HloComputation& comp,
                                             const target::ChipConfig* chip, bool updatesLast);
}

std::vector<HloInstruction*> loweringOrder(const hlo::HloComputation& comp,
                                           const target::ChipConfig* chip) {
  return loweringOrderOf(comp, chip, true);
}

namespace {
std::vector<HloInstruction*> loweringOrderOf(const hlo::HloComputation& comp,
                                             const target::ChipConfig* chip, bool updatesLast) {
  std::vector<HloInstruction*> order = comp.postOrder();
  int pairs = 0;
  for (HloInstruction* i : order) pairs += isAsyncDone(i);
  std::unordered_map<const HloInstruction*, size_t> position;
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  const auto extraEdges = updatesLast ? updateAfterReaders(order, position)
                                      : std::vector<std::pair<HloInstruction*, HloInstruction*>>{};
  if (pairs == 0 && extraEdges.empty()) return order;
  const bool spread = chip && pairs > 1;
  // A list schedule over the post order: a ready start first, then the
  // earliest ready instruction of the post order that is not a done, a done
  // only when nothing else is ready. Without pairs or extra edges it is the
  // post order.
  std::unordered_map<const HloInstruction*, int64_t> waiting;  // unscheduled operands
  std::unordered_map<const HloInstruction*, std::vector<HloInstruction*>> users;
  for (HloInstruction* i : order) {
    std::vector<const HloInstruction*> seen;
    for (const HloInstruction* op : i->operands()) {
      if (!position.count(op) || std::find(seen.begin(), seen.end(), op) != seen.end()) continue;
      seen.push_back(op);
      ++waiting[i];
      users[op].push_back(i);
    }
  }
  for (auto& [reader, update] : extraEdges) {
    ++waiting[update];
    users[reader].push_back(update);
  }
  // (class, position): class 0 a start, 1 other work, 2 a done.
  using Key = std::pair<int, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  std::set<size_t> heldDones;  // spreading: the ready dones (below)
  auto push = [&](HloInstruction* i) {
    if (spread && isAsyncDone(i))
      heldDones.insert(position[i]);
    else
      ready.push({isAsyncStart(i) ? 0 : isAsyncDone(i) ? 2 : 1, position[i]});
  };
  // Only a done some later start needs is worth lowering early (the last
  // pair's waits for the transfer whatever the estimate says).
  std::unordered_map<const HloInstruction*, bool> feedsStart;
  for (size_t k = order.size(); k-- > 0;)
    for (HloInstruction* u : users[order[k]])
      if (isAsyncStart(u) || feedsStart[u]) feedsStart[order[k]] = true;
  for (HloInstruction* i : order)
    if (waiting[i] == 0) push(i);
  // Spreading: per pair in flight, the transfer left to cover; its done,
  // once ready, waits aside (by position) until that is covered (and a later
  // start needs it) or nothing but dones is left. Starts go first, then
  // covered dones, then work.
  std::unordered_map<const HloInstruction*, double> uncovered;  // start -> cycles
  std::vector<HloInstruction*> out;
  while (!ready.empty() || !heldDones.empty()) {
    HloInstruction* i = nullptr;
    if (ready.empty() || ready.top().first != 0)
      for (size_t k : heldDones)
        if (feedsStart[order[k]] && uncovered[order[k]->operand(0)] <= 0) {
          i = order[k];
          heldDones.erase(k);
          break;
        }
    if (!i && !ready.empty()) {
      i = order[ready.top().second];
      ready.pop();
    }
    if (!i) {  // only dones left: the earliest
      i = order[*heldDones.begin()];
      heldDones.erase(heldDones.begin());
    }
    out.push_back(i);
    if (spread) {
      if (isAsyncStart(i)) {
        uncovered[i] = transferCycles(i, *chip);
      } else if (isAsyncDone(i)) {
        uncovered.erase(i->operand(0));
      } else {
        const double w = workCycles(i, *chip);
        for (auto& [start, left] : uncovered) left -= w;
      }
    }
    for (HloInstruction* u : users[i])
      if (--waiting[u] == 0) push(u);
  }
  // Extra edges that close a cycle (updates waiting on each other's
  // readers) leave instructions unscheduled: keep the post order then.
  if (out.size() != order.size()) return pairs == 0 ? order : loweringOrderOf(comp, chip, false);
  return out;
}
}  // namespace

}  // namespace tpusim::lower
