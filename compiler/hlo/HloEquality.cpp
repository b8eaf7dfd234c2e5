#include "compiler/hlo/HloEquality.h"

#include <fmt/format.h>

namespace tpusim::hlo {
namespace {

bool failWith(std::string* why, std::string message) {
  if (why) *why = std::move(message);
  return false;
}

std::vector<std::string> calledNames(const CalledComputations& c) {
  std::vector<std::string> names;
  for (const HloComputation* comp : c.computations) names.push_back(comp ? comp->name() : "");
  return names;
}

bool attrsEqual(const HloInstruction::Attributes& a, const HloInstruction::Attributes& b,
                std::string* why) {
#define TPUSIM_CMP(field) \
  if (!(a.field == b.field)) return failWith(why, #field " differs");
  TPUSIM_CMP(dimensions)
  TPUSIM_CMP(slice)
  TPUSIM_CMP(dot)
  TPUSIM_CMP(direction)
  TPUSIM_CMP(padding)
  TPUSIM_CMP(window)
  TPUSIM_CMP(literal)
  TPUSIM_CMP(parameterNumber)
  TPUSIM_CMP(replicaGroups)
  TPUSIM_CMP(channelId)
  TPUSIM_CMP(customCallTarget)
  TPUSIM_CMP(backendConfig)
  TPUSIM_CMP(sharding)
  TPUSIM_CMP(frontendAttributes)
  TPUSIM_CMP(metadata)
  TPUSIM_CMP(generic)
#undef TPUSIM_CMP
  if (a.calls.size() != b.calls.size()) return failWith(why, "called computations differ");
  for (size_t i = 0; i < a.calls.size(); ++i)
    if (a.calls[i].key != b.calls[i].key || a.calls[i].braced != b.calls[i].braced ||
        calledNames(a.calls[i]) != calledNames(b.calls[i]))
      return failWith(why, fmt::format("called computations ({}) differ", a.calls[i].key));
  return true;
}

}  // namespace

bool instructionsEqual(const HloInstruction& a, const HloInstruction& b, std::string* why) {
  std::string where = "instruction %" + a.name();
  if (a.name() != b.name()) return failWith(why, where + ": names differ");
  if (a.opcode() != b.opcode()) return failWith(why, where + ": opcodes differ");
  if (a.shape() != b.shape())
    return failWith(
        why, where + ": shapes differ: " + a.shape().toString() + " vs " + b.shape().toString());
  if (a.operandCount() != b.operandCount()) return failWith(why, where + ": operand counts differ");
  for (int64_t i = 0; i < a.operandCount(); ++i)
    if (a.operand(i)->name() != b.operand(i)->name())
      return failWith(why, fmt::format("{}: operand {} differs", where, i));
  std::string detail;
  if (!attrsEqual(a.attrs(), b.attrs(), &detail)) return failWith(why, where + ": " + detail);
  return true;
}

bool modulesEqual(const HloModule& a, const HloModule& b, std::string* why) {
  if (a.name() != b.name()) return failWith(why, "module names differ");
  if (a.headerAttributes() != b.headerAttributes())
    return failWith(why, "module header attributes differ");
  if ((a.entry() ? a.entry()->name() : "") != (b.entry() ? b.entry()->name() : ""))
    return failWith(why, "entry computations differ");
  if (a.computations().size() != b.computations().size())
    return failWith(why, "computation counts differ");
  for (const auto& ca : a.computations()) {
    const HloComputation* cb = b.findComputation(ca->name());
    if (!cb) return failWith(why, "computation " + ca->name() + " is missing");
    std::string where = "computation %" + ca->name();
    if (ca->instructionCount() != cb->instructionCount())
      return failWith(why, where + ": instruction counts differ");
    if ((ca->root() ? ca->root()->name() : "") != (cb->root() ? cb->root()->name() : ""))
      return failWith(why, where + ": roots differ");
    for (const auto& ia : ca->instructions()) {
      const HloInstruction* ib = cb->findInstruction(ia->name());
      if (!ib) return failWith(why, where + ": instruction %" + ia->name() + " is missing");
      std::string detail;
      if (!instructionsEqual(*ia, *ib, &detail)) return failWith(why, where + ": " + detail);
    }
  }
  return true;
}

}  // namespace tpusim::hlo
