// How a dot of f32 operands is computed on a TPU's MXU, from the dot's
// precision attributes (XLA's PrecisionConfig and the newer `algorithm=`):
//   DEFAULT (or no attribute)  one pass: operands rounded to bf16, products
//                              accumulated in f32;
//   HIGH                       bf16_3x: each operand split into a bf16 high part
//                              and a bf16 low part (x - hi), three passes
//                              (hi*hi + hi*lo + lo*hi);
//   HIGHEST                    bf16_6x: three bf16 parts per operand, six passes
//                              (the products with a combined order <= 2): about
//                              f32 accuracy.
// The dot uses the higher of its two operands' precisions, as XLA's TPU backend
// does. `algorithm=dot_bf16_bf16_f32[_x3|_x6]` names the pass count directly;
// dot_f32_f32_f32 is taken as HIGHEST. Dots of other operand types (bf16, s8)
// are exact on the MXU and keep one pass.
// Parsed from the text form: operand_precision={highest,default} (new XLA) or
// precision_config={HIGHEST,DEFAULT} (older dumps).
#pragma once

#include <string>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::hlo {

enum class DotPasses { One = 1, Three = 3, Six = 6 };

// The bf16 passes an f32 x f32 dot takes on the MXU (One for non-f32 operands).
DotPasses mxuDotPasses(const HloInstruction& dot);

}  // namespace tpusim::hlo
