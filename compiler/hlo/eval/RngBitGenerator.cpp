#include "compiler/hlo/eval/RngBitGenerator.h"

#include <fmt/format.h>

#include <cstring>

namespace tpusim::hlo::eval {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> x, std::array<uint32_t, 2> key) {
  // The multipliers and the key schedule's Weyl constants of Philox4x32.
  constexpr uint64_t kMulA = 0xD2511F53, kMulB = 0xCD9E8D57;
  constexpr uint32_t kWeylA = 0x9E3779B9, kWeylB = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = kMulA * x[0], p1 = kMulB * x[2];
    x = {uint32_t(p1 >> 32) ^ x[1] ^ key[0], uint32_t(p1), uint32_t(p0 >> 32) ^ x[3] ^ key[1],
         uint32_t(p0)};
    key = {key[0] + kWeylA, key[1] + kWeylB};
  }
  return x;
}

Literal rngBitGenerator(const Literal& state, std::string_view algorithm, ElemType valueType,
                        const std::vector<int64_t>& dims) {
  if (algorithm == "rng_three_fry")
    throw EvalError(
        "rng-bit-generator: rng_three_fry is not implemented (rng_philox and "
        "rng_default, read as Philox, are)");
  if (algorithm != "rng_default" && algorithm != "rng_philox")
    throw EvalError(fmt::format("rng-bit-generator: unknown algorithm '{}'", algorithm));
  if (state.isTuple() || state.type() != ElemType::U64 || state.rank() != 1 ||
      (state.numElements() != 2 && state.numElements() != 3))
    throw EvalError(
        fmt::format("rng-bit-generator: the Philox state must be u64[2] or u64[3], "
                    "not {}",
                    state.shapeString()));
  const int width = bitWidth(valueType);
  if (!isInteger(valueType) || (width != 32 && width != 64))
    throw EvalError(
        fmt::format("rng-bit-generator: values of {} are not generated (u32, s32, "
                    "u64 and s64 are)",
                    elemTypeName(valueType)));
  const uint64_t* s = state.data<uint64_t>();
  const bool three = state.numElements() == 3;
  const uint64_t key = s[0], lo = s[1], hi = three ? s[2] : s[0];
  const int64_t count = checkedElementCount(dims);
  const int64_t words = count * (width / 32);
  const int64_t blocks = (words + 3) / 4;
  Literal values = Literal::array(valueType, dims);
  std::vector<uint32_t> bits(size_t(blocks) * 4);
  for (int64_t i = 0; i < blocks; ++i) {
    const uint64_t cLo = lo + uint64_t(i);
    const uint64_t cHi = cLo < lo ? hi + 1 : hi;
    auto out = philox4x32({uint32_t(cLo), uint32_t(cLo >> 32), uint32_t(cHi), uint32_t(cHi >> 32)},
                          {uint32_t(key), uint32_t(key >> 32)});
    std::memcpy(&bits[size_t(i) * 4], out.data(), sizeof out);
  }
  // Little-endian words: a 64-bit element is (word 2j, word 2j + 1).
  std::memcpy(values.raw(), bits.data(), size_t(words) * 4);
  Literal newState = Literal::array(ElemType::U64, state.dims());
  uint64_t* n = newState.data<uint64_t>();
  const uint64_t nLo = lo + uint64_t(blocks);
  n[0] = key;
  n[1] = nLo;
  if (three) n[2] = nLo < lo ? hi + 1 : hi;
  std::vector<Literal> both;
  both.push_back(std::move(newState));
  both.push_back(std::move(values));
  return Literal::tuple(std::move(both));
}

}  // namespace tpusim::hlo::eval
