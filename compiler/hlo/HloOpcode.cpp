#include "compiler/hlo/HloOpcode.h"

#include <string>
#include <unordered_map>

namespace tpusim::hlo {
namespace {

constexpr std::string_view kNames[] = {
#define TPUSIM_HLO_OPCODE_NAME(e, s) s,
    TPUSIM_HLO_OPCODE_LIST(TPUSIM_HLO_OPCODE_NAME)
#undef TPUSIM_HLO_OPCODE_NAME
};

}  // namespace

int opcodeCount() { return static_cast<int>(sizeof(kNames) / sizeof(kNames[0])); }

std::string_view opcodeName(HloOpcode op) {
  auto i = static_cast<size_t>(op);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

std::optional<HloOpcode> parseOpcode(std::string_view name) {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string_view, HloOpcode>;
    for (int i = 0; i < opcodeCount(); ++i) (*m)[kNames[i]] = static_cast<HloOpcode>(i);
    return m;
  }();
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

bool isElementwiseUnary(HloOpcode op) {
  switch (op) {
    case HloOpcode::Abs:
    case HloOpcode::Cbrt:
    case HloOpcode::Ceil:
    case HloOpcode::Convert:
    case HloOpcode::Copy:
    case HloOpcode::Cosine:
    case HloOpcode::CountLeadingZeros:
    case HloOpcode::Erf:
    case HloOpcode::Exp:
    case HloOpcode::Expm1:
    case HloOpcode::Floor:
    case HloOpcode::Imag:
    case HloOpcode::IsFinite:
    case HloOpcode::Log:
    case HloOpcode::Log1p:
    case HloOpcode::Logistic:
    case HloOpcode::Negate:
    case HloOpcode::Not:
    case HloOpcode::PopulationCount:
    case HloOpcode::Real:
    case HloOpcode::ReducePrecision:
    case HloOpcode::RoundNearestAfz:
    case HloOpcode::RoundNearestEven:
    case HloOpcode::Rsqrt:
    case HloOpcode::Sign:
    case HloOpcode::Sine:
    case HloOpcode::Sqrt:
    case HloOpcode::Tan:
    case HloOpcode::Tanh:
      return true;
    default:
      return false;
  }
}

bool isElementwiseBinary(HloOpcode op) {
  switch (op) {
    case HloOpcode::Add:
    case HloOpcode::And:
    case HloOpcode::Atan2:
    case HloOpcode::Compare:
    case HloOpcode::Complex:
    case HloOpcode::Divide:
    case HloOpcode::Maximum:
    case HloOpcode::Minimum:
    case HloOpcode::Multiply:
    case HloOpcode::Or:
    case HloOpcode::Power:
    case HloOpcode::Remainder:
    case HloOpcode::ShiftLeft:
    case HloOpcode::ShiftRightArithmetic:
    case HloOpcode::ShiftRightLogical:
    case HloOpcode::StochasticConvert:
    case HloOpcode::Subtract:
    case HloOpcode::Xor:
      return true;
    default:
      return false;
  }
}

bool isElementwise(HloOpcode op) {
  return isElementwiseUnary(op) || isElementwiseBinary(op) || op == HloOpcode::Select ||
         op == HloOpcode::Clamp;
}

bool isCollective(HloOpcode op) {
  switch (op) {
    case HloOpcode::AllGather:
    case HloOpcode::AllGatherStart:
    case HloOpcode::AllGatherDone:
    case HloOpcode::AllReduce:
    case HloOpcode::AllReduceStart:
    case HloOpcode::AllReduceDone:
    case HloOpcode::AllToAll:
    case HloOpcode::RaggedAllToAll:
    case HloOpcode::ReduceScatter:
    case HloOpcode::CollectiveBroadcast:
    case HloOpcode::CollectivePermute:
    case HloOpcode::CollectivePermuteStart:
    case HloOpcode::CollectivePermuteDone:
      return true;
    default:
      return false;
  }
}

}  // namespace tpusim::hlo
