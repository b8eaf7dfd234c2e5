// The bytes of a `constant` instruction as the program stores it in an HBM data
// segment: dense row-major, little-endian, f32 as IEEE bits, bf16 rounded to
// nearest even (2 bytes), integers wrapped to their width, pred one byte 0/1.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::lower {

// The bytes of leaf `tupleIndex` of `constant`'s literal. Throws CannotLower
// for an elided literal (`constant({...})`: the values are not in the text)
// or an element type the chip has no buffers for.
std::vector<uint8_t> constantBytes(const hlo::HloInstruction& constant,
                                   const std::vector<int64_t>& tupleIndex);

}  // namespace tpusim::lower
