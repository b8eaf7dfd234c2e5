#include "compiler/lower/buffers/LoweringOrder.h"

#include <algorithm>
#include <functional>
#include <queue>
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
  return isCustomCall(i, "tpusim$permute-start") || isCustomCall(i, "tpusim$all-gather-start");
}

bool isAsyncDone(const HloInstruction* i) {
  return (isCustomCall(i, "tpusim$permute-done") || isCustomCall(i, "tpusim$all-gather-done")) &&
         i->operandCount() == 2 && isAsyncStart(i->operand(0));
}

}  // namespace

std::vector<HloInstruction*> loweringOrder(const hlo::HloComputation& comp) {
  std::vector<HloInstruction*> order = comp.postOrder();
  bool async = false;
  for (HloInstruction* i : order) async |= isAsyncDone(i);
  if (!async) return order;
  // A list schedule over the post order: a ready start first, then the
  // earliest ready instruction of the post order that is not a done, a done
  // only when nothing else is ready. Without pairs it is the post order.
  std::unordered_map<const HloInstruction*, size_t> position;
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
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
  // (class, position): class 0 a start, 1 other work, 2 a done.
  using Key = std::pair<int, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  auto push = [&](HloInstruction* i) {
    ready.push({isAsyncStart(i) ? 0 : isAsyncDone(i) ? 2 : 1, position[i]});
  };
  for (HloInstruction* i : order)
    if (waiting[i] == 0) push(i);
  std::vector<HloInstruction*> out;
  while (!ready.empty()) {
    HloInstruction* i = order[ready.top().second];
    ready.pop();
    out.push_back(i);
    for (HloInstruction* u : users[i])
      if (--waiting[u] == 0) push(u);
  }
  return out;
}

}  // namespace tpusim::lower
