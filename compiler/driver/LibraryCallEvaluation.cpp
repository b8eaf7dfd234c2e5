#include "compiler/driver/LibraryCallEvaluation.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <optional>

#include "compiler/hlo/eval/CustomCalls.h"
#include "compiler/lower/fusion/LibraryCall.h"
#include "isa/Program.h"
#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/Trace.h"
#include "kernels/lib/Registry.h"

namespace tpusim::driver {

namespace {

using hlo::eval::ElemType;
using hlo::eval::EvalError;
using hlo::eval::Literal;
using kernels::llo::DType;

// The evaluator's element type for a kernel array's dtype; the element types
// library kernels take (bf16, f32, s8, s32) map one to one.
std::optional<ElemType> elemTypeOf(DType t) {
  switch (t) {
    case DType::F32:
      return ElemType::F32;
    case DType::Bf16:
      return ElemType::BF16;
    case DType::S32:
      return ElemType::S32;
    case DType::S8:
      return ElemType::S8;
    default:
      return std::nullopt;
  }
}

// A literal's elements as a host array (one element per 32-bit word, in its low bits).
kernels::dsl::HostArray toHostArray(const Literal& lit, const kernels::llo::ArrayOperand& a) {
  kernels::dsl::HostArray h;
  h.shape = a.shape;
  h.dtype = a.dtype;
  h.words.resize(static_cast<size_t>(lit.numElements()));
  for (size_t i = 0; i < h.words.size(); ++i) {
    switch (lit.type()) {
      case ElemType::F32:
        std::memcpy(&h.words[i], lit.data<float>() + i, 4);
        break;
      case ElemType::BF16:
        h.words[i] = lit.data<uint16_t>()[i];
        break;
      case ElemType::S32:
        h.words[i] = static_cast<uint32_t>(lit.data<int32_t>()[i]);
        break;
      case ElemType::S8:
        h.words[i] = static_cast<uint8_t>(lit.data<int8_t>()[i]);
        break;
      default:
        break;  // rejected by the caller
    }
  }
  return h;
}

Literal fromHostArray(const kernels::dsl::HostArray& h, ElemType type,
                      const std::vector<int64_t>& dims) {
  Literal lit = Literal::array(type, dims);
  for (size_t i = 0; i < h.words.size(); ++i) {
    switch (type) {
      case ElemType::F32:
        std::memcpy(lit.data<float>() + i, &h.words[i], 4);
        break;
      case ElemType::BF16:
        lit.data<uint16_t>()[i] = static_cast<uint16_t>(h.words[i]);
        break;
      case ElemType::S32:
        lit.data<int32_t>()[i] = static_cast<int32_t>(h.words[i]);
        break;
      case ElemType::S8:
        lit.data<int8_t>()[i] = static_cast<int8_t>(h.words[i] & 0xFF);
        break;
      default:
        break;
    }
  }
  return lit;
}

// The evaluator has no chip: library calls are built for the default target
// (TargetInfo::defaults(), 128x128 MXUs) and interpreted with its MXU size, so
// they compute what tpuc's code computes on such a chip (v5e). On a chip with
// other MXUs the compiled call accumulates its dots in that chip's order.
const kernels::codegen::TargetInfo& evaluationTarget() {
  static const kernels::codegen::TargetInfo target = kernels::codegen::TargetInfo::defaults();
  return target;
}

Literal runLibraryCall(const hlo::HloInstruction& call, const std::vector<const Literal*>& args) {
  const std::string target = call.attrs().customCallTarget.value_or("");
  auto fail = [&](const std::string& why) -> EvalError {
    return EvalError(fmt::format("custom-call target \"{}\": {}", target, why));
  };
  std::unique_ptr<kernels::llo::Kernel> kernel;
  try {
    kernel = lower::buildLibraryCallKernel(call, evaluationTarget()).trace();
  } catch (const lower::LibraryCallError& e) {
    throw EvalError(e.what());
  } catch (const kernels::dsl::Error& e) {
    throw fail(e.what());
  }
  if (kernel->inputs.size() != args.size())
    throw fail(fmt::format("the library kernel takes {} inputs, the call has {} operands",
                           kernel->inputs.size(), args.size()));
  std::vector<kernels::dsl::HostArray> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const kernels::llo::ArrayOperand& a = kernel->inputs[i];
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    std::optional<ElemType> want = elemTypeOf(a.dtype);
    if (args[i]->isTuple() || !want || *want != args[i]->type() || args[i]->numElements() != n ||
        !a.strides.empty())
      throw fail(fmt::format("operand {} is {} but the library kernel reads {}{}", i,
                             args[i]->shapeString(), isa::dtypeName(a.dtype),
                             kernels::llo::shapeStr(a.shape)));
    inputs.push_back(toHostArray(*args[i], a));
  }
  kernels::dsl::InterpretResult run;
  try {
    kernels::dsl::InterpretOptions options;
    options.mxuSize = evaluationTarget().mxuSize;
    run = kernels::dsl::interpret(*kernel, inputs, options);
  } catch (const kernels::llo::InterpretError& e) {
    throw fail(fmt::format("interpret mode: {}", e.what()));
  }
  if (!run.races.empty()) throw fail(fmt::format("interpret mode: {}", run.races.front()));
  std::vector<hlo::Shape> results =
      call.shape().isTuple() ? call.shape().tupleShapes : std::vector<hlo::Shape>{call.shape()};
  if (results.size() != run.outputs.size())
    throw fail(fmt::format("the library kernel has {} outputs, the call {}", run.outputs.size(),
                           results.size()));
  std::vector<Literal> values;
  for (size_t j = 0; j < results.size(); ++j) {
    std::optional<ElemType> type = elemTypeOf(run.outputs[j].dtype);
    if (!results[j].isArray() || !type || run.outputs[j].size() != results[j].elementCount() ||
        hlo::eval::elemTypeName(*type) != hlo::primitiveTypeName(results[j].type))
      throw fail(fmt::format("result {} is {} but the library kernel writes {}", j,
                             results[j].toString(false), isa::dtypeName(run.outputs[j].dtype)));
    values.push_back(fromHostArray(run.outputs[j], *type, results[j].dims));
  }
  if (!call.shape().isTuple()) return std::move(values.front());
  return Literal::tuple(std::move(values));
}

}  // namespace

void registerLibraryCallsForEvaluation() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const kernels::lib::KernelEntry& e : kernels::lib::registeredKernels())
      if (!e.spmd) hlo::eval::registerCustomCall("tpu." + e.name, runLibraryCall);
  });
}

}  // namespace tpusim::driver
