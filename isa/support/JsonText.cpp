#include "isa/support/JsonText.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace tpusim::support {

namespace {
bool numberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}
}  // namespace

std::optional<JsonTextProblem> checkJsonText(std::string_view text, int maxDepth) {
  int depth = 0, line = 1;
  size_t lineStart = 0;
  auto problem = [&](size_t at, std::string message) {
    return JsonTextProblem{at, line, int(at - lineStart) + 1, std::move(message)};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n') {
          ++line;
          lineStart = i + 1;
        }
      }
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return problem(i, fmt::format("arrays and objects nested deeper than {} levels", maxDepth));
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i;
      while (end < text.size() && numberChar(text[end])) ++end;
      std::string token(text.substr(i, end - i));
      double v = std::strtod(token.c_str(), nullptr);
      if (std::isinf(v))
        return problem(i, fmt::format("the number {} does not fit in a double", token));
      i = end - 1;
    }
  }
  return std::nullopt;
}

}  // namespace tpusim::support
