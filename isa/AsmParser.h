// The assembler's parser state, shared by the files that implement it:
// Assembler.cpp (lines, labels, end-of-file checks), AsmInstructions.cpp
// (bundles, ops, operands) and AsmDirectives.cpp (directives). Internal to
// the isa library; the interface is Assembler.h.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "isa/AsmLexer.h"
#include "isa/Assembler.h"

namespace tpusim::isa::detail {

using asmlex::Tok;
using asmlex::Token;

// One directive argument: positional (key empty) or key=value. A value is a
// word, a string, a [list] of words, or a pair word:word (space:address).
struct Arg {
  std::string key;
  int keyColumn = 0;
  enum Kind { Word, String, List, Pair } kind = Word;
  std::string text;
  int column = 0;
  std::vector<Token> list;
  std::string second;
  int secondColumn = 0;
};

struct Fixup {
  size_t bundle;
  int slot;
  int operand;
  std::string label;
  int line, column;
};

struct ParsedOp {
  Instruction inst;
  SlotKind kind;
  int explicitIndex = -1;
  int column = 0;
  std::vector<std::pair<int, Token>> labelOperands;  // operand index, label token
};

class AsmParser {
 public:
  AsmParser(std::string_view source, const std::string& file, const AssemblerOptions& options);
  // Parses every line, then the end-of-file checks; see assemble() in Assembler.h.
  bool run(Program* out, std::vector<Diagnostic>* diagnostics);

 private:
  void error(int line, int column, std::string message);
  void parseLine(int lineNo, std::string_view raw);
  void defineLabel(int lineNo, const Token& t);
  void finish();

  // Instructions (AsmInstructions.cpp).
  void parseBundle(int lineNo, const std::vector<Token>& toks, size_t i);
  // Parses toks[begin, end) as one op. Returns 1 for an op, 0 for `nop`, -1 on error.
  int parseOp(int lineNo, const std::vector<Token>& toks, size_t begin, size_t end, ParsedOp* op);
  bool parseSlotPrefix(int lineNo, const Token& t, const OpcodeInfo& info, ParsedOp* op);
  bool parseOperand(int lineNo, const OpcodeInfo& info, int k, const Token& t, ParsedOp* op);

  // Directives (AsmDirectives.cpp).
  // Parses the arguments after a directive word; false on a syntax error (reported).
  bool parseArgs(int lineNo, const std::vector<Token>& toks, size_t i, std::vector<Arg>* args);
  // Checks keyed arguments against `allowed` (no duplicates, no unknown keys).
  bool checkKeys(int lineNo, const std::string& directive, const std::vector<Arg>& args,
                 size_t positional, std::initializer_list<const char*> allowed);
  const Arg* find(const std::vector<Arg>& args, const char* key);
  bool wordInt(int lineNo, const std::string& text, int column, const char* what, int64_t min,
               int64_t max, int64_t* out);
  bool argInt(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max, int64_t* out);
  bool argName(int lineNo, const Arg& a, const char* what, std::string* out);
  bool argList(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max,
               std::vector<int64_t>* out);
  bool argSpace(int lineNo, const std::string& text, int column, MemorySpace* out);
  void parseDirective(int lineNo, const std::vector<Token>& toks, size_t i);
  void chipDirective(int lineNo, const Token& d, const std::vector<Arg>& args);
  void bufferDirective(int lineNo, const std::vector<Arg>& args);
  // Appends the values args[from..] to `bytes`, as words or bytes.
  bool dataValues(int lineNo, const std::vector<Arg>& args, size_t from, bool words,
                  std::vector<uint8_t>* bytes);
  void dataDirective(int lineNo, const Token& d, const std::vector<Arg>& args);
  void dataContinuation(int lineNo, const Token& d, const std::vector<Arg>& args);
  void dmaDirective(int lineNo, const std::vector<Arg>& args);
  void symbolDirective(int lineNo, const Token& d, const std::vector<Arg>& args);
  void opDirective(int lineNo, const Token& d, const std::vector<Arg>& args);
  void endopDirective(int lineNo, const Token& d, const std::vector<Arg>& args);
  void costDirective(int lineNo, const std::vector<Arg>& args);

  struct OpenOp {
    size_t index;
    int line, column;
  };
  struct NumericTarget {
    uint32_t value;
    int line, column;
  };

  std::string file_;
  AssemblerOptions options_;
  std::vector<std::string_view> lines_;
  Program prog_;
  std::map<std::string, std::pair<uint32_t, int>> labels_;  // name -> bundle, line
  std::vector<Fixup> fixups_;
  std::vector<NumericTarget> numericTargets_;
  std::vector<std::pair<int, int>> bundleLines_;  // line, column of each bundle
  std::vector<std::pair<int, int>> symbolLines_;
  std::vector<OpenOp> openOps_, explicitRanges_;
  int currentData_ = -1;
  int chipLine_ = 0;
  std::vector<Diagnostic> diags_;
  int errors_ = 0;
  bool stopped_ = false;
};

}  // namespace tpusim::isa::detail
