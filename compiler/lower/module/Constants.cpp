#include "compiler/lower/module/Constants.h"

#include <fmt/format.h>

#include "compiler/lower/CannotLower.h"
#include "compiler/lower/module/Names.h"
#include "isa/support/Numerics.h"

namespace tpusim::lower {

namespace {

void put(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(uint8_t(v >> (8 * b)));
}

}  // namespace

std::vector<uint8_t> constantBytes(const hlo::HloInstruction& constant,
                                   const std::vector<int64_t>& tupleIndex) {
  using hlo::PrimitiveType;
  const hlo::Literal* lit = constant.literal();
  if (!lit) throw CannotLower::of(constant, "the constant has no literal");
  for (int64_t i : tupleIndex) {
    if (i < 0 || size_t(i) >= lit->elements.size())
      throw CannotLower::of(constant, fmt::format("the literal has no tuple element {}", i));
    lit = &lit->elements[size_t(i)];
  }
  if (lit->elided)
    throw CannotLower::of(constant,
                          "the literal is elided ({...}): its values are not in the HLO text");
  const hlo::Shape& shape = constant.shape().isTuple() ? lit->shape : constant.shape();
  int64_t n = shape.elementCount();
  if (lit->size() != n)
    throw CannotLower::of(constant,
                          fmt::format("the literal has {} values for {} elements", lit->size(), n));
  std::vector<uint8_t> out;
  switch (shape.type) {
    case PrimitiveType::F32:
      out.reserve(size_t(n) * 4);
      for (int64_t i = 0; i < n; ++i) put(out, bitsOf(float(lit->getDouble(i))), 4);
      return out;
    case PrimitiveType::BF16:
      for (int64_t i = 0; i < n; ++i) put(out, f32ToBf16Bits(float(lit->getDouble(i))), 2);
      return out;
    case PrimitiveType::F16:
      for (int64_t i = 0; i < n; ++i) put(out, f32ToF16Bits(float(lit->getDouble(i))), 2);
      return out;
    case PrimitiveType::S64:
    case PrimitiveType::U64:
    case PrimitiveType::U32:
    case PrimitiveType::S32:
    case PrimitiveType::S16:
    case PrimitiveType::U16:
    case PrimitiveType::S8:
    case PrimitiveType::U8: {
      int bytes = hlo::bitWidth(shape.type) / 8;
      for (int64_t i = 0; i < n; ++i) put(out, uint64_t(lit->getInt(i)), bytes);
      return out;
    }
    case PrimitiveType::Pred:
      for (int64_t i = 0; i < n; ++i) out.push_back(lit->getInt(i) != 0 ? 1 : 0);
      return out;
    default:
      throw CannotLower::of(
          constant, fmt::format("a constant of type {}: {}", hlo::primitiveTypeName(shape.type),
                                unsupportedBufferType(shape.type)));
  }
}

}  // namespace tpusim::lower
