// Truncated and byte-flipped .npy files must give an NpyError, never a crash
// (run under ASan + UBSan in CI through the "sanitize" label).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "isa/support/Npy.h"

using namespace tpusim::npy;

namespace {

// Parses and returns true if parsing succeeded; NpyError counts as handled.
bool parses(const std::vector<uint8_t>& bytes) {
  try {
    Array a = parse(bytes.data(), bytes.size(), "fuzz.npy");
    // A successful parse must describe exactly the data it holds.
    REQUIRE(a.data.size() == static_cast<size_t>(a.numElements()) * dtypeSize(a.dtype));
    return true;
  } catch (const NpyError&) {
    return false;
  }
}

std::vector<std::vector<uint8_t>> seeds() {
  std::vector<std::vector<uint8_t>> out;
  Array a = makeArray(DType::F32, {2, 3});
  out.push_back(serialize(a));
  out.push_back(serialize(makeArray(DType::S64, {})));
  out.push_back(serialize(makeArray(DType::Bool, {4, 0})));
  out.push_back(serialize(makeArray(DType::U16, {1, 1, 5})));
  return out;
}

}  // namespace

TEST_CASE("npy fuzz: every truncation is rejected cleanly", "[npy][fuzz]") {
  for (const auto& file : seeds()) {
    CHECK(parses(file));
    for (size_t n = 0; n < file.size(); ++n) {
      std::vector<uint8_t> cut(file.begin(), file.begin() + n);
      CHECK_FALSE(parses(cut));
    }
  }
}

TEST_CASE("npy fuzz: random byte flips never crash", "[npy][fuzz]") {
  std::mt19937 rng(1234);
  int accepted = 0;
  for (const auto& file : seeds()) {
    std::uniform_int_distribution<size_t> pos(0, file.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int iter = 0; iter < 3000; ++iter) {
      auto m = file;
      int flips = 1 + iter % 4;
      for (int f = 0; f < flips; ++f) m[pos(rng)] = static_cast<uint8_t>(byte(rng));
      accepted += parses(m);
    }
  }
  // Most mutations land in padding or data and are still valid files.
  CHECK(accepted > 0);
}
