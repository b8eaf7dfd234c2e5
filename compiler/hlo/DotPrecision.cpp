#include "compiler/hlo/DotPrecision.h"

#include <algorithm>
#include <cctype>

namespace tpusim::hlo {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The highest precision named in "{highest,default}" (any case, any spacing).
DotPasses fromPrecisionList(const std::string& text) {
  const std::string t = lower(text);
  if (t.find("highest") != std::string::npos) return DotPasses::Six;
  if (t.find("high") != std::string::npos) return DotPasses::Three;
  return DotPasses::One;
}

}  // namespace

DotPasses mxuDotPasses(const HloInstruction& dot) {
  if (dot.operandCount() < 2) return DotPasses::One;
  for (int i = 0; i < 2; ++i)
    if (dot.operand(i)->shape().type != PrimitiveType::F32) return DotPasses::One;
  if (const NamedAttr* a = dot.findGeneric("algorithm")) {
    const std::string alg = lower(a->value.toString());
    if (alg.find("x6") != std::string::npos || alg.find("f32_f32_f32") != std::string::npos)
      return DotPasses::Six;
    if (alg.find("x3") != std::string::npos || alg.find("tf32") != std::string::npos)
      return DotPasses::Three;
    if (alg.find("bf16_bf16_f32") != std::string::npos) return DotPasses::One;
  }
  DotPasses p = DotPasses::One;
  for (const char* key : {"operand_precision", "precision_config"})
    if (const NamedAttr* a = dot.findGeneric(key))
      p = std::max(p, fromPrecisionList(a->value.toString()));
  return p;
}

}  // namespace tpusim::hlo
