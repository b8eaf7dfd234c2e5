// HostArray <-> .npy (bf16 as uint16 bits, as tpusim reads and writes them),
// and seeded random inputs for kernels.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "isa/support/Npy.h"
#include "kernels/dsl/Interpret.h"

namespace tpusim::kernels::dsl {

npy::Array toNpy(const HostArray& a);
// Throws npy::NpyError when the file's dtype or shape does not fit `dtype`.
HostArray fromNpy(const npy::Array& a, llo::DType dtype, const std::string& name);
// Uniform values: floats in [-2, 2) (rounded to bf16 for bf16), ints in [-128, 127].
HostArray randomArray(const std::vector<int64_t>& shape, llo::DType dtype, std::mt19937_64& rng);
// Element i as a double (f32, bf16, s32, s8).
double valueAt(const HostArray& a, int64_t i);

}  // namespace tpusim::kernels::dsl
