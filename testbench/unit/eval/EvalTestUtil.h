// Helpers for evaluator tests: parse HLO text, make literals, run.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/eval/Evaluator.h"

namespace evaltest {

using tpusim::hlo::eval::ElemType;
using tpusim::hlo::eval::Literal;

inline std::unique_ptr<tpusim::hlo::HloModule> parse(const std::string& text) {
  std::string err;
  auto m = tpusim::hlo::parseHloModule(text, &err, "test.hlo");
  INFO(err);
  REQUIRE(m);
  return m;
}

inline Literal lit(ElemType t, std::vector<int64_t> dims, std::vector<double> values) {
  Literal l = Literal::array(t, std::move(dims));
  REQUIRE(static_cast<int64_t>(values.size()) == l.numElements());
  for (size_t i = 0; i < values.size(); ++i) l.setDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

inline std::vector<double> values(const Literal& l) {
  std::vector<double> v;
  for (int64_t i = 0; i < l.numElements(); ++i) v.push_back(l.getDouble(i));
  return v;
}

// Evaluates `text` on one replica and returns the result.
inline Literal run(const std::string& text, const std::vector<Literal>& args) {
  auto m = parse(text);
  return tpusim::hlo::eval::evaluate(*m, args);
}

}  // namespace evaltest
