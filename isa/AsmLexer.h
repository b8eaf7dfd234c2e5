// Splits one line of assembly into tokens (comments already removed by
// stripComment). Internal to the assembler.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpusim::isa::asmlex {

enum class Tok {
  Word,      // identifiers, mnemonics, numbers, registers: [A-Za-z0-9_.$%+\-/]+
  String,    // "..." with escapes; text holds the unescaped value
  Slot,      // @valu1; text holds "valu1"
  Comma,     // ,
  Equals,    // =
  Colon,     // :
  LBracket,  // [
  RBracket,  // ]
  OpSep,     // ;;
};

struct Token {
  Tok kind;
  std::string text;
  int column;  // 1-based byte column in the line
};

// The line without its comment (`//` or `#` outside a quoted string).
std::string_view stripComment(std::string_view line);

// Tokenizes `line`; on a lexical error returns false with *error and *errorColumn.
bool tokenize(std::string_view line, std::vector<Token>* tokens, std::string* error,
              int* errorColumn);

const char* tokenName(Tok kind);

}  // namespace tpusim::isa::asmlex
