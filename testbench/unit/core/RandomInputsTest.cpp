// Seeded random inputs must not change: cycle goldens of data-dependent
// programs (gathers) and every --check run depend on them. The reference here
// is the distribution-per-element form the generator was first written in.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "isa/support/Numerics.h"
#include "sim/chip/BufferIo.h"
#include "sim/chip/Mt64Blocks.h"

using namespace tpusim;
using isa::DType;

namespace {

uint64_t nameHash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<uint8_t> referenceBytes(const isa::BufferDesc& b, uint64_t seed, float bound) {
  std::mt19937_64 rng(seed ^ nameHash(b.name));
  size_t n = 1;
  for (int64_t d : b.shape) n *= size_t(d);
  size_t width = size_t(isa::dtypeBytes(b.dtype));
  std::vector<uint8_t> out(n * width);
  std::uniform_real_distribution<float> real(-bound, bound);
  std::uniform_int_distribution<int> small(-8, 8), unsignedSmall(0, 15), bit(0, 1);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = 0;
    switch (b.dtype) {
      case DType::F32:
        v = bitsOf(real(rng));
        break;
      case DType::Bf16:
        v = f32ToBf16Bits(real(rng));
        break;
      case DType::F16:
        v = f32ToF16Bits(real(rng));
        break;
      case DType::S64:
        v = uint64_t(int64_t(small(rng)));
        break;
      case DType::S32:
      case DType::S16:
      case DType::S8:
        v = uint32_t(small(rng));
        break;
      case DType::U8:
      case DType::U16:
      case DType::U32:
      case DType::U64:
        v = uint32_t(unsignedSmall(rng));
        break;
      case DType::Pred:
        v = uint32_t(bit(rng));
        break;
    }
    std::memcpy(&out[i * width], &v, width);
  }
  return out;
}

}  // namespace

TEST_CASE("seeded random inputs are the per-element distribution draws, every dtype",
          "[random-inputs]") {
  const DType types[] = {DType::F32, DType::Bf16, DType::F16, DType::S64, DType::S32, DType::S16,
                         DType::S8,  DType::U8,   DType::U16, DType::U32, DType::U64, DType::Pred};
  for (DType t : types)
    for (uint64_t seed : {0ull, 1ull, 0x9e3779b97f4a7c15ull}) {
      isa::BufferDesc b;
      b.name = "params['w']";
      b.dtype = t;
      b.shape = {37, 129};
      INFO(isa::dtypeName(t) << " seed " << seed);
      CHECK(sim::randomBytes(b, seed) == referenceBytes(b, seed, 1.0f));
      // Fan-in scaling: a = sqrt(3 / 37) for a rank-2 float input.
      CHECK(sim::randomBytes(b, seed, sim::RandomInputs::FanIn) ==
            referenceBytes(b, seed, float(std::sqrt(3.0 / 37.0))));
    }
}

TEST_CASE("Mt64Blocks gives the std::mt19937_64 sequence, word by word and in blocks",
          "[random-inputs]") {
  for (uint64_t seed : {0ull, 5489ull, 0xdeadbeefcafef00dull, ~0ull}) {
    std::mt19937_64 reference(seed);
    sim::Mt64Blocks blocks(seed);
    for (int i = 0; i < 1000; ++i) REQUIRE(blocks() == reference());
    // take() continues the same sequence across block ends.
    for (size_t want : {1u, 7u, 311u, 312u, 1000u}) {
      size_t count = 0;
      const uint64_t* words = blocks.take(want, &count);
      REQUIRE(count >= 1);
      REQUIRE(count <= want);
      for (size_t j = 0; j < count; ++j) REQUIRE(words[j] == reference());
    }
  }
}
