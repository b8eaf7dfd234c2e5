#include "compiler/lower/buffers/InputOutputAlias.h"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

#include "compiler/hlo/HloComputation.h"

namespace tpusim::lower {
namespace {

// A cursor over the attribute's text; every step skips blanks first.
struct Cursor {
  const std::string& text;
  size_t at = 0;

  void skip() {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  }
  bool eat(char c) {
    skip();
    if (at < text.size() && text[at] == c) {
      ++at;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c))
      throw std::invalid_argument(
          fmt::format("input_output_alias={}: expected '{}' at character {}", text, c, at + 1));
  }
  int64_t number() {
    skip();
    size_t start = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    if (start == at || at - start > 9)
      throw std::invalid_argument(
          fmt::format("input_output_alias={}: expected a number at character {}", text, start + 1));
    return std::stoll(text.substr(start, at - start));
  }
  // "{1, 2}" or "{}".
  std::vector<int64_t> indexList() {
    std::vector<int64_t> out;
    expect('{');
    if (eat('}')) return out;
    do out.push_back(number());
    while (eat(','));
    expect('}');
    return out;
  }
  std::string word() {
    skip();
    size_t start = at;
    while (at < text.size() && (std::isalnum(static_cast<unsigned char>(text[at])) ||
                                text[at] == '-' || text[at] == '_'))
      ++at;
    return text.substr(start, at - start);
  }
};

}  // namespace

std::vector<InputOutputAlias> inputOutputAliases(const hlo::HloModule& module) {
  std::optional<std::string> text = module.headerAttribute("input_output_alias");
  std::vector<InputOutputAlias> out;
  if (!text) return out;
  Cursor c{*text};
  c.expect('{');
  if (c.eat('}')) return out;
  do {
    InputOutputAlias a;
    a.outputIndex = c.indexList();
    c.expect(':');
    c.expect('(');
    a.parameter = c.number();
    c.expect(',');
    std::vector<int64_t> parameterIndex = c.indexList();
    if (c.eat(',')) c.word();  // may-alias / must-alias: either lets the output share
    c.expect(')');
    const hlo::HloComputation* entry = module.entry();
    if (entry && a.parameter >= entry->parameterCount())
      throw std::invalid_argument(
          fmt::format("input_output_alias={}: parameter {} does not exist (the entry has {})",
                      *text, a.parameter, entry->parameterCount()));
    if (parameterIndex.empty()) out.push_back(std::move(a));
  } while (c.eat(','));
  c.expect('}');
  return out;
}

std::optional<int64_t> donatedParameter(const std::vector<InputOutputAlias>& aliases,
                                        const std::vector<int64_t>& outputIndex) {
  for (const InputOutputAlias& a : aliases)
    if (a.outputIndex == outputIndex) return a.parameter;
  return std::nullopt;
}

}  // namespace tpusim::lower
