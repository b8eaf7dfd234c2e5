#include "compiler/lower/buffers/LoweringOrder.h"

#include <algorithm>
#include <string>

namespace tpusim::lower {

using hlo::HloInstruction;
using hlo::HloOpcode;

namespace {

bool isCustomCall(const HloInstruction* i, const char* target) {
  return i->opcode() == HloOpcode::CustomCall && i->attrs().customCallTarget.value_or("") == target;
}

}  // namespace

std::vector<HloInstruction*> loweringOrder(const hlo::HloComputation& comp) {
  std::vector<HloInstruction*> order = comp.postOrder();
  auto position = [&](const HloInstruction* i) {
    return size_t(std::find(order.begin(), order.end(), i) - order.begin());
  };
  std::vector<HloInstruction*> dones;
  for (HloInstruction* i : order)
    if (isCustomCall(i, "tpusim$permute-done") && i->operandCount() == 2 &&
        isCustomCall(i->operand(0), "tpusim$permute-start"))
      dones.push_back(i);
  for (HloInstruction* done : dones) {
    HloInstruction* start = done->operand(0);
    size_t s = position(start), after = position(start->operand(0));
    if (s < order.size() && after < s) {
      order.erase(order.begin() + std::ptrdiff_t(s));
      order.insert(order.begin() + std::ptrdiff_t(after + 1), start);
    }
  }
  for (HloInstruction* done : dones) {
    order.erase(order.begin() + std::ptrdiff_t(position(done)));
    size_t first = order.size();
    for (HloInstruction* u : done->users()) first = std::min(first, position(u));
    order.insert(order.begin() + std::ptrdiff_t(first), done);
  }
  return order;
}

}  // namespace tpusim::lower
