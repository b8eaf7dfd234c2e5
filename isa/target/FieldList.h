// A flat description of every parameter of a config struct: dotted path, type,
// unit, doc, limits and the current value as text. The documentation printer,
// the source-coverage check and tools that list parameters use it.
#pragma once

#include <string>
#include <vector>

#include "isa/target/ChipConfig.h"

namespace tpusim::target {

enum class FieldType { Int, Double, Bool, String };
const char* fieldTypeName(FieldType t);

struct FieldInfo {
  std::string path;  // "hbm.tRCD"
  FieldType type;
  std::string unit;
  std::string doc;
  Range range;        // numeric fields only; min > max = none
  std::string value;  // the value formatted as it is written to JSON
};

std::vector<FieldInfo> listFields(const ChipConfig& chip);

// True when every parameter and the metadata (name, description, test_preset,
// sources) are equal; otherwise names the first difference in *difference.
bool sameConfig(const ChipConfig& a, const ChipConfig& b, std::string* difference = nullptr);

// The name in `known` closest to `name` (a typo, a transposition, another case),
// or "" when none is close enough to suggest.
std::string closestName(const std::string& name, const std::vector<std::string>& known);

// Formats a double the shortest way that reads back exactly (1.5e9 -> "1500000000").
std::string formatDouble(double x);

}  // namespace tpusim::target
