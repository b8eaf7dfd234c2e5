#include "isa/AsmLexer.h"

#include <cctype>

namespace tpusim::isa::asmlex {

namespace {
bool isWordChar(char c) {
  return std::isalnum(uint8_t(c)) || c == '_' || c == '.' || c == '$' || c == '%' || c == '+' ||
         c == '-' || c == '/';
}
int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

const char* tokenName(Tok kind) {
  switch (kind) {
    case Tok::Word:
      return "a word";
    case Tok::String:
      return "a string";
    case Tok::Slot:
      return "a slot prefix";
    case Tok::Comma:
      return "','";
    case Tok::Equals:
      return "'='";
    case Tok::Colon:
      return "':'";
    case Tok::LBracket:
      return "'['";
    case Tok::RBracket:
      return "']'";
    case Tok::OpSep:
      return "';;'";
  }
  return "?";
}

std::string_view stripComment(std::string_view line) {
  bool inString = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '#' || (c == '/' && i + 1 < line.size() && line[i + 1] == '/')) {
      return line.substr(0, i);
    }
  }
  return line;
}

bool tokenize(std::string_view line, std::vector<Token>* tokens, std::string* error,
              int* errorColumn) {
  tokens->clear();
  size_t i = 0;
  auto fail = [&](size_t at, std::string message) {
    *error = std::move(message);
    *errorColumn = int(at) + 1;
    return false;
  };
  while (i < line.size()) {
    char c = line[i];
    int column = int(i) + 1;
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == ',' || c == '=' || c == ':' || c == '[' || c == ']') {
      Tok kind = c == ','   ? Tok::Comma
                 : c == '=' ? Tok::Equals
                 : c == ':' ? Tok::Colon
                 : c == '[' ? Tok::LBracket
                            : Tok::RBracket;
      tokens->push_back({kind, std::string(1, c), column});
      ++i;
    } else if (c == ';') {
      if (i + 1 >= line.size() || line[i + 1] != ';')
        return fail(i, "expected ';;' between the ops of a bundle");
      tokens->push_back({Tok::OpSep, ";;", column});
      i += 2;
    } else if (c == '@') {
      size_t j = i + 1;
      while (j < line.size() && isWordChar(line[j])) ++j;
      if (j == i + 1) return fail(i, "expected a slot name after '@' (e.g. @valu1)");
      tokens->push_back({Tok::Slot, std::string(line.substr(i + 1, j - i - 1)), column});
      i = j;
    } else if (c == '"') {
      std::string value;
      size_t j = i + 1;
      for (;;) {
        if (j >= line.size()) return fail(i, "missing '\"' at the end of the string");
        char d = line[j];
        if (d == '"') break;
        if (d != '\\') {
          value += d;
          ++j;
          continue;
        }
        if (j + 1 >= line.size()) return fail(j, "'\\' at the end of the line");
        char e = line[j + 1];
        if (e == 'n') {
          value += '\n';
          j += 2;
        } else if (e == 't') {
          value += '\t';
          j += 2;
        } else if (e == '\\' || e == '"') {
          value += e;
          j += 2;
        } else if (e == 'x' && j + 3 < line.size() && hexValue(line[j + 2]) >= 0 &&
                   hexValue(line[j + 3]) >= 0) {
          value += char(hexValue(line[j + 2]) * 16 + hexValue(line[j + 3]));
          j += 4;
        } else {
          return fail(j, "unknown escape in string (use \\\\, \\\", \\n, \\t or \\xHH)");
        }
      }
      tokens->push_back({Tok::String, value, column});
      i = j + 1;
    } else if (isWordChar(c)) {
      size_t j = i;
      while (j < line.size() && isWordChar(line[j])) ++j;
      tokens->push_back({Tok::Word, std::string(line.substr(i, j - i)), column});
      i = j;
    } else {
      uint8_t u = uint8_t(c);
      return fail(i, u >= 0x20 && u < 0x7f
                         ? std::string("unexpected character '") + c + "'"
                         : "unexpected byte 0x" + std::string(1, "0123456789abcdef"[u >> 4]) +
                               "0123456789abcdef"[u & 15]);
    }
  }
  return true;
}

}  // namespace tpusim::isa::asmlex
