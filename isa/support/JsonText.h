// Limits every JSON text a tool reads is held to before a JSON library sees
// it: nesting depth (a preset nested 100,000 arrays deep must be an error, not
// quadratic memory and a stack overflow) and numbers a double can hold (1e999
// is an error naming its line and column, not an uncaught exception).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tpusim::support {

// Deeper than any preset or backend_config needs (presets nest 3 levels).
constexpr int kMaxJsonDepth = 64;

struct JsonTextProblem {
  size_t offset = 0;  // byte offset of the offending token
  int line = 1, col = 1;
  std::string message;  // e.g. "arrays and objects nested deeper than 64 levels"
};

// The first violation of the limits in `text`, or nullopt. Does not check the
// rest of the grammar (the JSON parser does); strings are skipped correctly.
std::optional<JsonTextProblem> checkJsonText(std::string_view text, int maxDepth = kMaxJsonDepth);

}  // namespace tpusim::support
