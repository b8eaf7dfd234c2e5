#include "compiler/lower/module/Names.h"

#include <fmt/format.h>

namespace tpusim::lower {

std::optional<isa::DType> bufferDType(hlo::PrimitiveType t) {
  using hlo::PrimitiveType;
  switch (t) {
    case PrimitiveType::F32:
      return isa::DType::F32;
    case PrimitiveType::BF16:
      return isa::DType::Bf16;
    case PrimitiveType::S32:
      return isa::DType::S32;
    case PrimitiveType::S8:
      return isa::DType::S8;
    case PrimitiveType::U8:
      return isa::DType::U8;
    case PrimitiveType::S16:
      return isa::DType::S16;
    case PrimitiveType::U16:
      return isa::DType::U16;
    case PrimitiveType::Pred:
      return isa::DType::Pred;
    case PrimitiveType::F16:
      return isa::DType::F16;
    case PrimitiveType::U32:
      return isa::DType::U32;
    case PrimitiveType::S64:
      return isa::DType::S64;
    case PrimitiveType::U64:
      return isa::DType::U64;
    default:
      return std::nullopt;
  }
}

std::string unsupportedBufferType(hlo::PrimitiveType t) {
  if (t == hlo::PrimitiveType::F64)
    return "f64 cannot be emulated: the chip computes in f32 at most (convert to f32 before the "
           "computation)";
  return fmt::format(
      "the chip's buffers hold f32, bf16, f16, s32, u32, s64, u64, s16, u16, s8, "
      "u8 and pred, not {}",
      hlo::primitiveTypeName(t));
}

std::string unescapeMetadata(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() &&
        (text[i + 1] == '\'' || text[i + 1] == '"' || text[i + 1] == '\\')) {
      out += text[++i];
      continue;
    }
    out += text[i];
  }
  return out;
}

std::string parameterBufferName(const hlo::HloInstruction& parameter) {
  std::string opName = unescapeMetadata(parameter.attrs().metadata.opName);
  return opName.empty() ? parameter.name() : opName;
}

std::string outputBufferName(const std::vector<int64_t>& tupleIndex) {
  std::string name = "out";
  for (int64_t i : tupleIndex) name += fmt::format(".{}", i);
  return name;
}

std::string BufferNames::claim(const std::string& preferred, const std::string& fallback) {
  if (!preferred.empty() && taken_.insert(preferred).second) return preferred;
  if (taken_.insert(fallback).second) return fallback;
  for (int n = 2;; ++n) {
    std::string name = fmt::format("{}.{}", fallback, n);
    if (taken_.insert(name).second) return name;
  }
}

}  // namespace tpusim::lower
