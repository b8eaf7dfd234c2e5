// Shared by the trace tests: the print/parse round trip every generated
// module must survive, a platform-independent random stream, random token
// ids, and a literal's elements as doubles.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/hlo/eval/Literal.h"
#include "traces/tracegen/LlamaConfig.h"

namespace tracetest {

// The path a trace file takes: printed, parsed back (as `fileName`), verified,
// and printed again byte for byte. Returns the parsed module.
inline std::unique_ptr<tpusim::hlo::HloModule> roundTrip(const tpusim::hlo::HloModule& m,
                                                         const std::string& fileName) {
  std::string text = tpusim::hlo::printModule(m);
  std::string error;
  auto module = tpusim::hlo::parseHloModule(text, &error, fileName);
  INFO(error);
  REQUIRE(module);
  tpusim::hlo::VerifierResult v = tpusim::hlo::verifyModule(*module);
  INFO(v.message());
  REQUIRE(v.ok());
  REQUIRE(tpusim::hlo::printModule(*module) == text);
  return module;
}

// SplitMix64: the same values on every platform and standard library.
struct Random {
  uint64_t state;
  double uniform() {  // [-1, 1)
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return double(z >> 11) / double(1ull << 52) - 1.0;
  }
};

// batch x seq token ids in [0, vocab).
inline std::vector<int64_t> randomTokens(const tpusim::traces::LlamaConfig& c, uint64_t seed) {
  Random rng{seed};
  std::vector<int64_t> t(static_cast<size_t>(c.batch * c.seq));
  for (int64_t& id : t) id = static_cast<int64_t>((rng.uniform() + 1) / 2 * double(c.vocab));
  return t;
}

inline std::vector<double> values(const tpusim::hlo::eval::Literal& l) {
  std::vector<double> v(static_cast<size_t>(l.numElements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = l.getDouble(static_cast<int64_t>(i));
  return v;
}

}  // namespace tracetest
