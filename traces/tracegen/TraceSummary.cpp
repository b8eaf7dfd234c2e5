#include "traces/tracegen/TraceSummary.h"

#include <fmt/format.h>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::traces {

namespace {

int64_t bytesOf(const hlo::Shape& s) {
  if (s.isTuple()) {
    int64_t total = 0;
    for (const hlo::Shape& e : s.tupleShapes) total += bytesOf(e);
    return total;
  }
  return s.elementCount() * ((hlo::bitWidth(s.type) + 7) / 8);
}

}  // namespace

TraceSummary summarize(const LlamaTrace& trace) {
  TraceSummary s;
  for (const auto& comp : trace.module->computations())
    for (const auto& inst : comp->instructions()) {
      ++s.instructions;
      if (inst->opcode() != hlo::HloOpcode::Dot) continue;
      ++s.dots;
      int64_t contracted = 1;
      for (int64_t d : inst->attrs().dot.lhsContracting)
        contracted *= inst->operand(0)->shape().dims.at(static_cast<size_t>(d));
      s.dotFlops += 2 * inst->shape().elementCount() * contracted;
    }
  const auto params = trace.module->entry()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string& name = trace.parameterNames.at(i);
    int64_t bytes = bytesOf(params[i]->shape());
    if (name.rfind("params[", 0) == 0)
      s.weightBytes += bytes;
    else if (name.rfind("cache[", 0) == 0)
      s.cacheBytes += bytes;
    else if (name.rfind("opt_state.", 0) == 0)
      s.optimizerBytes += bytes;
    else
      s.inputBytes += bytes;
  }
  s.outputBytes = bytesOf(trace.module->entry()->root()->shape());
  return s;
}

std::string formatSummary(const TraceSummary& s) {
  std::string out =
      fmt::format("instructions {}\ndots {}\ndot_flops {}\nweight_bytes {}\nkv_cache_bytes {}\n",
                  s.instructions, s.dots, s.dotFlops, s.weightBytes, s.cacheBytes);
  if (s.optimizerBytes) out += fmt::format("optimizer_state_bytes {}\n", s.optimizerBytes);
  return out + fmt::format("input_bytes {}\noutput_bytes {}\n", s.inputBytes, s.outputBytes);
}

}  // namespace tpusim::traces
