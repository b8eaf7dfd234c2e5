// Custom-calls to library kernels: custom_call_target="tpu.NAME" calls the
// kernel NAME of kernels/lib/Registry.h. Its parameters come from the operand
// shapes (rows / cols / dtype of a norm or softmax, m / n / k of a matmul,
// bh / seq_q / seq_k / head_dim of flash attention and its backward), then from the call's
// backend_config when it is a JSON object (e.g. {"eps": 1e-5, "causal": true}),
// which also sets anything the shapes do not give. The kernel's arrays are
// views of the operands: each must have the operand's element type and count.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>

#include "compiler/lower/fusion/FusionLoweringInternal.h"
#include "compiler/lower/fusion/LibraryCall.h"
#include "isa/support/JsonText.h"
#include "kernels/lib/Registry.h"

namespace tpusim::lower {
namespace detail {

namespace {

constexpr const char* kPrefix = "tpu.";

int64_t leading(const hlo::Shape& s, int64_t keep) {
  int64_t p = 1;
  for (int64_t i = 0; i + keep < s.rank(); ++i) p *= s.dims[static_cast<size_t>(i)];
  return p;
}
int64_t dimFromEnd(const hlo::Shape& s, int64_t k) {
  return s.rank() >= k ? s.dims[static_cast<size_t>(s.rank() - k)] : 1;
}
std::string s(int64_t v) { return std::to_string(v); }

// Parameters the operand shapes determine, per library kernel.
std::map<std::string, std::string> shapeParams(const std::string& kernel,
                                               const HloInstruction& call) {
  std::map<std::string, std::string> p;
  if (call.operandCount() == 0) return p;
  const hlo::Shape& x = call.operand(0)->shape();
  std::string dtype(hlo::primitiveTypeName(x.type));
  if (kernel == "rms_norm" || kernel == "layer_norm" || kernel == "softmax") {
    int64_t rows = leading(x, 1), cols = dimFromEnd(x, 1);
    p = {{"rows", s(rows)}, {"cols", s(cols)}};
    if (kernel != "softmax") p["dtype"] = dtype;
    int64_t br = dividingBlock(rows, 8, 256);
    p["block_rows"] = s(br > 0 ? br : rows);
  } else if (kernel == "matmul" && call.operandCount() == 2) {
    const hlo::Shape& y = call.operand(1)->shape();
    p = {{"m", s(leading(x, 1))},
         {"k", s(dimFromEnd(x, 1))},
         {"n", s(dimFromEnd(y, 1))},
         {"dtype", dtype}};
  } else if ((kernel == "flash_attention" || kernel == "attention_forward") &&
             call.operandCount() == 3) {
    const hlo::Shape& k = call.operand(1)->shape();
    p = {{"bh", s(leading(x, 2))},
         {"seq_q", s(dimFromEnd(x, 2))},
         {"seq_k", s(dimFromEnd(k, 2))},
         {"head_dim", s(dimFromEnd(x, 1))}};
    if (call.shape().isArray())
      p["out_dtype"] = std::string(hlo::primitiveTypeName(call.shape().type));
  } else if (kernel == "attention_backward" && call.operandCount() == 4 && call.shape().isTuple() &&
             !call.shape().tupleShapes.empty()) {
    const hlo::Shape& k = call.operand(1)->shape();
    p = {{"bh", s(leading(x, 2))},
         {"seq_q", s(dimFromEnd(x, 2))},
         {"seq_k", s(dimFromEnd(k, 2))},
         {"head_dim", s(dimFromEnd(x, 1))},
         {"out_dtype", std::string(hlo::primitiveTypeName(call.shape().tupleShapes[0].type))}};
  }
  return p;
}

}  // namespace

}  // namespace detail

bool isLibraryCallTarget(const std::string& target) {
  return target.rfind(detail::kPrefix, 0) == 0;
}

kernels::lib::LibraryKernel buildLibraryCallKernel(const hlo::HloInstruction& call,
                                                   const kernels::codegen::TargetInfo& chip) {
  const std::string target = call.attrs().customCallTarget.value_or("");
  if (!isLibraryCallTarget(target))
    throw LibraryCallError(
        fmt::format("custom-call target \"{}\" is not a library kernel "
                    "(tpu.NAME)",
                    target));
  const std::string name = target.substr(std::string(detail::kPrefix).size());
  try {
    const kernels::lib::KernelEntry& entry = kernels::lib::findKernel(name);
    std::map<std::string, std::string> params = detail::shapeParams(name, call);
    if (call.attrs().backendConfig) {
      std::string text = hlo::unescapeHloString(call.attrs().backendConfig->text);
      if (auto bad = support::checkJsonText(text))
        throw LibraryCallError(
            fmt::format("custom-call target \"{}\": backend_config: {}", target, bad->message));
      nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_object())
        for (auto it = j.begin(); it != j.end(); ++it)
          params[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
    }
    // Only the parameters the kernel declares (shape-derived extras are dropped).
    std::map<std::string, std::string> known;
    for (const auto& spec : entry.params)
      if (params.count(spec.name)) known[spec.name] = params[spec.name];
    kernels::lib::LibraryKernel lk = kernels::lib::buildKernel(name, known, &chip);
    // A collective kernel talks to the other chips itself; tpuc does not place
    // such kernels in an SPMD module yet (docs/compiler.md, "Not yet").
    if (lk.devices > 1)
      throw LibraryCallError(fmt::format(
          "custom-call target \"{}\": an SPMD library kernel (remote copies over {} chips) "
          "cannot be called from HLO yet",
          target, lk.devices));
    return lk;
  } catch (const kernels::lib::RegistryError& e) {
    throw LibraryCallError(fmt::format("custom-call target \"{}\": {}", target, e.what()));
  } catch (const kernels::dsl::Error& e) {
    throw LibraryCallError(fmt::format(
        "custom-call target \"{}\": the library kernel rejects the shapes: {}", target, e.what()));
  }
}

namespace detail {

bool isLibraryCall(const HloInstruction& inst) {
  if (inst.opcode() != hlo::HloOpcode::CustomCall || !inst.attrs().customCallTarget) return false;
  return isLibraryCallTarget(*inst.attrs().customCallTarget);
}

LoweredKernel lowerLibraryCall(const ComputeGraph& g, const kernels::codegen::TargetInfo& chip) {
  const HloInstruction& call = *g.inst;
  const std::string target = *call.attrs().customCallTarget;
  std::optional<kernels::lib::LibraryKernel> lk;
  try {
    lk.emplace(buildLibraryCallKernel(call, chip));
  } catch (const LibraryCallError& e) {
    g.fail(call, e.what());
  }
  LoweredKernel out;
  out.notes = lk->notes;
  try {
    out.kernel = lk->trace();
  } catch (const dsl::Error& e) {
    g.fail(call, fmt::format("custom-call target \"{}\": {}", target, e.what()));
  }
  // The kernel's arrays must be views of the operands and of the result.
  const auto& ins = out.kernel->inputs;
  if (static_cast<int64_t>(ins.size()) != call.operandCount())
    g.fail(call, fmt::format("custom-call target \"{}\": the library kernel takes {} inputs, the "
                             "call has {} operands",
                             target, ins.size(), call.operandCount()));
  auto sameArray = [&](const kernels::llo::ArrayOperand& a, const hlo::Shape& sh) {
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    return sh.isArray() && n == sh.elementCount() &&
           memoryType(dslType(g, call, sh.type)) == a.dtype;
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    const hlo::Shape& sh = call.operand(static_cast<int64_t>(i))->shape();
    if (!sameArray(ins[i], sh))
      g.fail(call, fmt::format("custom-call target \"{}\": operand {} is {} but the library "
                               "kernel reads {}{}",
                               target, i, sh.toString(false), isa::dtypeName(ins[i].dtype),
                               kernels::llo::shapeStr(ins[i].shape)));
    out.inputOperand.push_back(static_cast<int64_t>(i));
  }
  const auto& outs = out.kernel->outputs;
  std::vector<hlo::Shape> results;
  if (call.shape().isTuple())
    results = call.shape().tupleShapes;
  else
    results = {call.shape()};
  if (outs.size() != results.size())
    g.fail(call, fmt::format("custom-call target \"{}\": the library kernel has {} outputs, the "
                             "call {}",
                             target, outs.size(), results.size()));
  for (size_t j = 0; j < outs.size(); ++j) {
    if (!sameArray(outs[j], results[j]))
      g.fail(call, fmt::format("custom-call target \"{}\": result {} is {} but the library kernel "
                               "writes {}{}",
                               target, j, results[j].toString(false), isa::dtypeName(outs[j].dtype),
                               kernels::llo::shapeStr(outs[j].shape)));
    out.outputIndex.push_back(call.shape().isTuple() ? std::vector<int64_t>{static_cast<int64_t>(j)}
                                                     : std::vector<int64_t>{});
  }
  out.kernel->name = call.name();
  const hlo::OpMetadata& m = call.attrs().metadata;
  out.kernel->loc = {m.sourceFile, m.sourceLine ? static_cast<int>(*m.sourceLine) : 0};
  return out;
}

}  // namespace detail
}  // namespace tpusim::lower
