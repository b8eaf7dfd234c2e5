// IEEE binary16 (f16) <-> f32 conversions for the evaluator. f16 arithmetic is
// done in f32 and rounded back after every op (round to nearest even), as XLA
// does; NaN becomes the quiet NaN 0x7E00 with the sign kept.
#pragma once

#include <cstdint>

#include "isa/support/Numerics.h"

namespace tpusim::hlo::eval {

// The conversions live in isa/support/Numerics.h (the simulator's host I/O
// and random inputs use them too).
using tpusim::f16BitsToF32;
using tpusim::f32ToF16Bits;
using tpusim::roundToF16;

}  // namespace tpusim::hlo::eval
