// rng-bit-generator as XLA's RngBitGeneratorExpander defines it for Philox
// (RNG_PHILOX; tpusim also reads rng_default as Philox, the expander's default:
// the bits of rng_default are back-end defined, so this is tpusim's choice).
//   - state u64[2]: key = state[0], 128-bit counter = (state[1] low, state[0] high);
//     state u64[3]: key = state[0], counter = (state[1] low, state[2] high);
//   - counter + i (i = 0 .. ceil(n/4) - 1) goes through Philox4x32-10 with the
//     key's two words; output element 4i + c is word c of block i (u32, s32);
//     64-bit outputs take two words per element (low word first), from
//     2n words;
//   - the new state is the key and the counter advanced by the number of blocks
//     (for u64[2], only the counter's low 64 bits are kept).
// ThreeFry is not implemented: a clear error.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "compiler/hlo/eval/Literal.h"

namespace tpusim::hlo::eval {

// One Philox4x32-10 block (Random123's counter-based generator).
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// The (new state, values) tuple of rng-bit-generator(state) producing `valueType[dims]`.
// `algorithm` is the attribute's spelling (rng_default, rng_philox, rng_three_fry).
Literal rngBitGenerator(const Literal& state, std::string_view algorithm, ElemType valueType,
                        const std::vector<int64_t>& dims);

}  // namespace tpusim::hlo::eval
