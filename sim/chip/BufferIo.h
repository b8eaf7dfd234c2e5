// Moving a program's named buffers between .npy arrays and chip memory.
//
// Inputs: an .npy array must have the buffer's shape and a matching dtype:
// f32 <- float32; s32 <- int32; s8 <- int8; u8 <- uint8; s16 <- int16;
// u16 <- uint16; pred <- bool or uint8; bf16 <- uint16 (the bf16 bits as they
// are) or float32 (each value rounded to bf16, round to nearest even; NaN
// becomes the canonical NaN). Elements are stored densely in C order at the
// buffer's address, 2 bytes per bf16 element.
// Without a file an input gets seeded random data: f32/bf16 uniform in
// [-1, 1) (bf16 rounded), integers uniform over a small range ([-8, 8] for
// s8/s16/s32, [0, 16) for unsigned), pred 0 or 1. The values depend only on
// the seed and the buffer's name. With RandomInputs::FanIn a float input of
// rank >= 2 is scaled like a weight initialised for its fan-in (LeCun): uniform
// in [-a, a) with a = sqrt(3 / fan_in), fan_in the product of all dimensions
// but the last, so x @ W keeps x's scale and a deep model stays well
// conditioned (what --check of a model wants); other inputs as above.
// Outputs: read back with the buffer's dtype; bf16 is written as uint16 bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Program.h"
#include "isa/support/Npy.h"
#include "sim/mem/ChipMemory.h"

namespace tpusim::sim {

// Bytes of `array` laid out as `buffer` expects; throws std::runtime_error
// naming the buffer and the mismatch.
std::vector<uint8_t> inputBytes(const isa::BufferDesc& buffer, const npy::Array& array,
                                const std::string& source);
enum class RandomInputs { Uniform, FanIn };
// "uniform" / "fan-in"; false for another name.
bool parseRandomInputs(const std::string& name, RandomInputs* out);
// Seeded random contents for `buffer`.
std::vector<uint8_t> randomBytes(const isa::BufferDesc& buffer, uint64_t seed,
                                 RandomInputs kind = RandomInputs::Uniform);
// Writes `bytes` (dense row-major) into the buffer's memory (core 0's VMEM/SMEM
// for those spaces), in the buffer's layout (isa::BufferDesc::pairRows).
void storeBuffer(mem::ChipMemory& memory, const isa::BufferDesc& buffer,
                 const std::vector<uint8_t>& bytes);
// Reads the buffer back as a (dense row-major) .npy array.
npy::Array loadBuffer(mem::ChipMemory& memory, const isa::BufferDesc& buffer);

}  // namespace tpusim::sim
