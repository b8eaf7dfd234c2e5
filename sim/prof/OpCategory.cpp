#include "sim/prof/OpCategory.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace tpusim::prof {
namespace {

bool isOneOf(const std::string& op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (op == n) return true;
  return false;
}

bool isMatmul(const std::string& op) { return isOneOf(op, {"dot", "convolution"}); }
bool isReduction(const std::string& op) {
  return isOneOf(op, {"reduce", "reduce-window", "reduce-precision-sum"});
}
bool isDynamic(const std::string& op) {
  return isOneOf(op, {"dynamic-slice", "dynamic-update-slice", "gather", "scatter"});
}
bool isFormatting(const std::string& op) {
  return isOneOf(op, {"copy", "transpose", "pad", "concatenate", "broadcast", "slice", "reshape",
                      "bitcast", "reverse", "iota", "copy-start", "copy-done", "tuple",
                      "get-tuple-element", "parameter", "constant"});
}
bool isCollective(const std::string& op) {
  return isOneOf(op, {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                      "collective-permute", "all-reduce-start", "all-reduce-done",
                      "all-gather-start", "all-gather-done", "collective-permute-start",
                      "collective-permute-done", "send", "recv", "send-done", "recv-done"});
}
bool isControl(const std::string& op) { return isOneOf(op, {"while", "conditional", "call"}); }

Category ofOpcode(const std::string& op) {
  if (isMatmul(op)) return Category::MatmulFusion;
  if (isReduction(op)) return Category::Reduction;
  if (isDynamic(op)) return Category::DynamicSlice;
  if (isFormatting(op)) return Category::DataFormatting;
  if (isCollective(op)) return Category::Collective;
  if (isControl(op)) return Category::ControlFlow;
  if (op == "custom-call") return Category::LibraryKernel;
  return Category::LoopFusion;
}

}  // namespace

Category categoryOf(const HloOpFacts& f) {
  if (f.opcode != "fusion") return ofOpcode(f.opcode);
  // A fusion is named by its most telling member: a dot makes it a matmul
  // fusion, then a reduction, an in-place update, a pure re-layout.
  const std::vector<std::string>& m = f.fusedOpcodes;
  auto any = [&](bool (*pred)(const std::string&)) {
    return std::any_of(m.begin(), m.end(), pred);
  };
  if (any(isMatmul)) return Category::MatmulFusion;
  if (any(isReduction)) return Category::Reduction;
  if (any(isDynamic)) return Category::DynamicSlice;
  if (!m.empty() && std::all_of(m.begin(), m.end(), isFormatting)) return Category::DataFormatting;
  return Category::LoopFusion;
}

Category categoryOfName(const std::string& name, bool usedMxu) {
  if (name.empty() || name[0] == '(') return Category::Other;
  // "dynamic-update-slice.3" -> "dynamic-update-slice"
  std::string prefix = name;
  size_t dot = prefix.find('.');
  if (dot != std::string::npos) {
    bool numeric = dot + 1 < prefix.size();
    for (size_t i = dot + 1; i < prefix.size(); ++i)
      numeric &= std::isdigit(static_cast<unsigned char>(prefix[i])) != 0;
    if (numeric) prefix = prefix.substr(0, dot);
  }
  // Fusions the passes make carry the prefix too ("fusion.multi_output.2").
  if (prefix == "fusion" || name.rfind("fusion.", 0) == 0)
    return usedMxu ? Category::MatmulFusion : Category::LoopFusion;
  static const std::set<std::string> kKnown = {"dot",           "convolution",
                                               "reduce",        "reduce-window",
                                               "dynamic-slice", "dynamic-update-slice",
                                               "gather",        "scatter",
                                               "copy",          "transpose",
                                               "pad",           "concatenate",
                                               "broadcast",     "slice",
                                               "reshape",       "all-reduce",
                                               "all-gather",    "reduce-scatter",
                                               "all-to-all",    "collective-permute",
                                               "while",         "conditional",
                                               "call",          "custom-call",
                                               "add",           "multiply",
                                               "subtract",      "divide",
                                               "exponential",   "tanh",
                                               "maximum",       "minimum",
                                               "convert",       "select",
                                               "compare",       "negate",
                                               "rsqrt",         "sqrt",
                                               "log",           "logistic"};
  if (kKnown.count(prefix)) return ofOpcode(prefix);
  return usedMxu ? Category::MatmulFusion : Category::LibraryKernel;
}

}  // namespace tpusim::prof
