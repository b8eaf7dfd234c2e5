#include "isa/Assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "isa/AsmLexer.h"
#include "isa/AsmSyntax.h"
#include "isa/Encoder.h"
#include "isa/Rules.h"

namespace tpusim::isa {

using asmlex::Tok;
using asmlex::Token;

std::string formatDiagnostic(const Diagnostic& d) {
  std::string out;
  if (d.line > 0 && d.column > 0)
    out = fmt::format("{}:{}:{}: error: {}\n", d.file, d.line, d.column, d.message);
  else if (d.line > 0)
    out = fmt::format("{}:{}: error: {}\n", d.file, d.line, d.message);
  else
    out = fmt::format("{}: error: {}\n", d.file, d.message);
  if (d.line > 0) {
    out += d.sourceLine + "\n";
    if (d.column > 0) {
      // Keep tabs so the caret lines up under the source as the terminal shows it.
      for (int i = 0; i + 1 < d.column && i < int(d.sourceLine.size()); ++i)
        out += d.sourceLine[i] == '\t' ? '\t' : ' ';
      out += "^\n";
    }
  }
  return out;
}

namespace {

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

int levenshtein(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = int(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = int(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + int(a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string suggestMnemonic(std::string_view word) {
  std::string_view best;
  int bestDistance = 3;
  for (int i = 1; i < kNumOpcodes; ++i) {
    int d = levenshtein(word, kOpcodeTable[i].mnemonic);
    if (d < bestDistance) {
      bestDistance = d;
      best = kOpcodeTable[i].mnemonic;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

class Assembler {
 public:
  Assembler(std::string_view source, const std::string& file, const AssemblerOptions& options)
      : file_(file), options_(options) {
    size_t start = 0;
    while (start <= source.size()) {
      size_t end = source.find('\n', start);
      if (end == std::string_view::npos) end = source.size();
      std::string_view line = source.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      if (end == source.size()) break;
      start = end + 1;
    }
  }

  bool run(Program* out, std::vector<Diagnostic>* diagnostics) {
    for (size_t i = 0; i < lines_.size() && !stopped_; ++i) parseLine(int(i) + 1, lines_[i]);
    if (!stopped_) finish();
    // End-of-file checks (labels, targets) find errors out of line order.
    std::stable_sort(diags_.begin(), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      int la = a.line ? a.line : INT32_MAX, lb = b.line ? b.line : INT32_MAX;
      return la != lb ? la < lb : a.column < b.column;
    });
    for (Diagnostic& d : diags_) diagnostics->push_back(std::move(d));
    if (errors_ > 0) return false;
    *out = std::move(prog_);
    return true;
  }

 private:
  void error(int line, int column, std::string message) {
    if (stopped_) return;
    Diagnostic d;
    d.file = file_;
    d.line = line;
    d.column = column;
    d.message = std::move(message);
    if (line > 0) d.sourceLine = std::string(lines_[line - 1]);
    diags_.push_back(std::move(d));
    if (++errors_ >= options_.maxErrors) {
      Diagnostic stop;
      stop.file = file_;
      stop.message = fmt::format("too many errors ({}), stopping", errors_);
      diags_.push_back(std::move(stop));
      stopped_ = true;
    }
  }

  void parseLine(int lineNo, std::string_view raw) {
    std::string_view text = asmlex::stripComment(raw);
    std::vector<Token> toks;
    std::string lexError;
    int lexColumn = 0;
    if (!asmlex::tokenize(text, &toks, &lexError, &lexColumn)) {
      error(lineNo, lexColumn, lexError);
      return;
    }
    size_t i = 0;
    // Leading labels: word ':'.
    while (i + 1 < toks.size() && toks[i].kind == Tok::Word && toks[i + 1].kind == Tok::Colon) {
      defineLabel(lineNo, toks[i]);
      i += 2;
    }
    if (i == toks.size()) return;
    if (toks[i].kind == Tok::Word && toks[i].text[0] == '.' &&
        !syntax::isFloatLiteral(toks[i].text)) {
      parseDirective(lineNo, toks, i);
      return;
    }
    currentData_ = -1;
    parseBundle(lineNo, toks, i);
  }

  void defineLabel(int lineNo, const Token& t) {
    if (!syntax::isIdentifier(t.text)) {
      error(lineNo, t.column, fmt::format("'{}' is not a valid label name", t.text));
      return;
    }
    auto [it, inserted] = labels_.insert({t.text, {uint32_t(prog_.code.size()), lineNo}});
    if (!inserted)
      error(lineNo, t.column,
            fmt::format("label '{}' is already defined on line {}", t.text, it->second.second));
  }

  // ---- instructions --------------------------------------------------------

  void parseBundle(int lineNo, const std::vector<Token>& toks, size_t i) {
    std::vector<ParsedOp> ops;
    bool ok = true;
    while (i < toks.size()) {
      size_t end = i;
      while (end < toks.size() && toks[end].kind != Tok::OpSep) ++end;
      if (end == i) {
        error(lineNo, toks[i].column, "expected an op before ';;'");
        ok = false;
      } else {
        ParsedOp op;
        int r = parseOp(lineNo, toks, i, end, &op);
        if (r < 0) ok = false;
        if (r > 0) ops.push_back(std::move(op));
      }
      i = end;
      if (i < toks.size()) {
        ++i;  // ';;'
        if (i == toks.size()) {
          error(lineNo, toks[i - 1].column, "expected an op after ';;'");
          ok = false;
        }
      }
    }
    if (!ok) {
      prog_.code.emplace_back();  // keep bundle numbering (labels) right for later errors
      bundleLines_.push_back({lineNo, 0});
      return;
    }
    Bundle b;
    std::vector<int> placedColumn(kNumSlotInstances, 0);
    std::vector<int> slotOf(ops.size(), -1);
    // Ops with an explicit slot claim it first; the others take the first free
    // slot of their kind in written order.
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].explicitIndex < 0) continue;
      int s = firstSlotInstance(ops[k].kind) + ops[k].explicitIndex;
      if (!b.slots[s].empty()) {
        error(lineNo, ops[k].column,
              fmt::format("slot {} is already used by '{}'", slotInstanceName(s),
                          b.slots[s].info().mnemonic));
        ok = false;
        continue;
      }
      b.slots[s] = ops[k].inst;
      slotOf[k] = s;
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      if (ops[k].explicitIndex >= 0) continue;
      int first = firstSlotInstance(ops[k].kind), count = slotInfo(ops[k].kind).count;
      int s = first;
      while (s < first + count && !b.slots[s].empty()) ++s;
      if (s == first + count) {
        error(lineNo, ops[k].column,
              fmt::format("no free {} slot for '{}' (a bundle has {} {} slot{})",
                          slotInfo(ops[k].kind).name, ops[k].inst.info().mnemonic, count,
                          slotInfo(ops[k].kind).name, count == 1 ? "" : "s"));
        ok = false;
        continue;
      }
      b.slots[s] = ops[k].inst;
      slotOf[k] = s;
    }
    // Bundle rules, reported at the op that breaks them.
    std::vector<std::pair<RegisterRef, size_t>> writes;
    int branchOp = -1;
    for (size_t k = 0; k < ops.size(); ++k) {
      for (const RegisterRef& reg : writtenRegisters(ops[k].inst)) {
        for (const auto& [earlier, by] : writes)
          if (earlier == reg) {
            error(lineNo, ops[k].column,
                  fmt::format("register {} is written twice in one bundle (also by '{}')",
                              registerName(reg), ops[by].inst.info().mnemonic));
            ok = false;
          }
        writes.push_back({reg, k});
      }
      if (isBranch(ops[k].inst.op)) {
        if (branchOp >= 0) {
          error(lineNo, ops[k].column,
                fmt::format("two branches in one bundle (also '{}'); at most one is allowed",
                            ops[branchOp].inst.info().mnemonic));
          ok = false;
        } else {
          branchOp = int(k);
        }
      }
    }
    size_t index = prog_.code.size();
    for (size_t k = 0; k < ops.size(); ++k)
      for (const auto& [operand, tok] : ops[k].labelOperands)
        if (slotOf[k] >= 0)
          fixups_.push_back({index, slotOf[k], operand, tok.text, lineNo, tok.column});
    prog_.code.push_back(ok ? b : Bundle{});
    bundleLines_.push_back({lineNo, ops.empty() ? 1 : ops[0].column});
  }

  // Parses toks[begin, end) as one op. Returns 1 for an op, 0 for `nop`, -1 on error.
  int parseOp(int lineNo, const std::vector<Token>& toks, size_t begin, size_t end, ParsedOp* op) {
    size_t i = begin;
    const Token* slotTok = nullptr;
    if (toks[i].kind == Tok::Slot) slotTok = &toks[i++];
    if (i == end || toks[i].kind != Tok::Word) {
      error(lineNo, i == end ? toks[i - 1].column : toks[i].column, "expected an opcode");
      return -1;
    }
    const Token& mn = toks[i++];
    op->column = slotTok ? slotTok->column : mn.column;
    if (mn.text == "nop") {
      if (slotTok) error(lineNo, slotTok->column, "'nop' takes no slot");
      if (i != end) error(lineNo, toks[i].column, "'nop' takes no operands");
      return slotTok || i != end ? -1 : 0;
    }
    std::optional<Opcode> opcode = opcodeFromMnemonic(mn.text);
    if (!opcode) {
      error(lineNo, mn.column,
            fmt::format("unknown opcode '{}'{}", mn.text, suggestMnemonic(mn.text)));
      return -1;
    }
    const OpcodeInfo& info = opcodeInfo(*opcode);
    op->inst.op = *opcode;
    op->kind = info.slot;
    if (slotTok && !parseSlotPrefix(lineNo, *slotTok, info, op)) return -1;

    // Operands: word (',' word)*
    std::vector<const Token*> operands;
    bool expectOperand = true;
    for (; i < end; ++i) {
      const Token& t = toks[i];
      if (expectOperand && t.kind == Tok::Word) {
        operands.push_back(&t);
        expectOperand = false;
      } else if (!expectOperand && t.kind == Tok::Comma) {
        expectOperand = true;
      } else {
        error(lineNo, t.column,
              fmt::format("expected {} in the operands of '{}', found {}",
                          expectOperand ? "an operand" : "',' or ';;'", info.mnemonic,
                          t.kind == Tok::Word || t.kind == Tok::String
                              ? "'" + t.text + "'"
                              : std::string(asmlex::tokenName(t.kind))));
        return -1;
      }
    }
    if (expectOperand && !operands.empty()) {
      error(lineNo, toks[end - 1].column, "expected an operand after ','");
      return -1;
    }
    if (int(operands.size()) != info.numOperands) {
      std::string expected;
      for (int k = 0; k < info.numOperands; ++k)
        expected += (k ? ", " : "") + describeOperand(info.operands[k]);
      error(lineNo,
            operands.size() > size_t(info.numOperands) ? operands[info.numOperands]->column
                                                       : mn.column,
            fmt::format("'{}' takes {} operand{}{}, got {}", info.mnemonic, info.numOperands,
                        info.numOperands == 1 ? "" : "s",
                        expected.empty() ? "" : " (" + expected + ")", operands.size()));
      return -1;
    }
    bool ok = true;
    for (int k = 0; k < info.numOperands; ++k)
      ok &= parseOperand(lineNo, info, k, *operands[k], op);
    return ok ? 1 : -1;
  }

  bool parseSlotPrefix(int lineNo, const Token& t, const OpcodeInfo& info, ParsedOp* op) {
    for (int k = 0; k < kNumSlotKinds; ++k) {
      std::string_view name = slotInfo(SlotKind(k)).name;
      if (t.text.compare(0, name.size(), name) != 0) continue;
      std::string rest = t.text.substr(name.size());
      int64_t index;
      if (rest.empty() || !std::isdigit(uint8_t(rest[0])) || !syntax::parseInteger(rest, &index))
        continue;
      if (SlotKind(k) != info.slot) {
        error(lineNo, t.column,
              fmt::format("'{}' cannot go in slot @{} (it needs a {} slot)", info.mnemonic, t.text,
                          slotInfo(info.slot).name));
        return false;
      }
      if (index >= slotInfo(info.slot).count) {
        error(lineNo, t.column,
              fmt::format("slot @{} does not exist (a bundle has {} {} slots, @{}0..@{}{})", t.text,
                          slotInfo(info.slot).count, name, name, name,
                          slotInfo(info.slot).count - 1));
        return false;
      }
      op->explicitIndex = int(index);
      return true;
    }
    error(lineNo, t.column,
          fmt::format("unknown slot '@{}' (slots are named like @scalar0, @valu1, @vld2)", t.text));
    return false;
  }

  bool parseOperand(int lineNo, const OpcodeInfo& info, int k, const Token& t, ParsedOp* op) {
    OperandKind kind = info.operands[k];
    const OperandInfo& oi = operandInfo(kind);
    OperandRange range = operandRange(kind);
    auto expected = [&] {
      error(lineNo, t.column,
            fmt::format("operand {} of '{}' must be {}, got '{}'", k + 1, info.mnemonic,
                        describeOperandWithArticle(kind), t.text));
      return false;
    };
    switch (oi.cls) {
      case OperandClass::Simm:
      case OperandClass::Uimm: {
        int64_t v;
        if (!syntax::parseInteger(t.text, &v)) {
          if (syntax::isFloatLiteral(t.text)) {
            error(lineNo, t.column,
                  fmt::format("operand {} of '{}' must be an integer ({}); only 32-bit "
                              "immediates take float literals",
                              k + 1, info.mnemonic, describeOperand(kind)));
            return false;
          }
          return expected();
        }
        if (v < range.min || v > range.max) {
          error(lineNo, t.column,
                fmt::format("immediate {} is out of range for operand {} of '{}', {}", t.text,
                            k + 1, info.mnemonic, describeOperandWithArticle(kind)));
          return false;
        }
        op->inst.operands[k] = v;
        return true;
      }
      case OperandClass::Imm32: {
        int64_t v;
        uint32_t bits;
        if (syntax::parseInteger(t.text, &v)) {
          if (v < INT32_MIN || v > int64_t(UINT32_MAX)) {
            error(lineNo, t.column,
                  fmt::format("immediate {} does not fit in 32 bits (operand {} of '{}')", t.text,
                              k + 1, info.mnemonic));
            return false;
          }
          op->inst.operands[k] = int64_t(uint32_t(v));
          return true;
        }
        if (syntax::isFloatLiteral(t.text)) {
          if (!syntax::parseFloatLiteral(t.text, &bits)) {
            error(lineNo, t.column,
                  fmt::format("float literal {} is out of the f32 range", t.text));
            return false;
          }
          op->inst.operands[k] = int64_t(bits);
          return true;
        }
        return expected();
      }
      case OperandClass::Target: {
        int64_t v;
        if (syntax::parseInteger(t.text, &v)) {
          if (v < 0 || v > int64_t(UINT32_MAX)) {
            error(lineNo, t.column, fmt::format("branch target {} is not a bundle number", t.text));
            return false;
          }
          op->inst.operands[k] = v;
          if (options_.checkTargets) numericTargets_.push_back({uint32_t(v), lineNo, t.column});
          return true;
        }
        if (!syntax::isIdentifier(t.text)) return expected();
        op->labelOperands.push_back({k, t});
        return true;
      }
      default: {
        // Registers and unit indices: prefix followed by a decimal index.
        const std::string& s = t.text;
        bool digits = s.size() > oi.prefix.size() && s.size() <= oi.prefix.size() + 9 &&
                      s.compare(0, oi.prefix.size(), oi.prefix) == 0;
        for (size_t c = oi.prefix.size(); digits && c < s.size(); ++c)
          digits = std::isdigit(uint8_t(s[c]));
        if (!digits) return expected();
        int64_t v = std::atoll(s.c_str() + oi.prefix.size());
        if (v > range.max) {
          error(lineNo, t.column,
                fmt::format("{} does not exist: operand {} of '{}' must be {}", s, k + 1,
                            info.mnemonic, describeOperandWithArticle(kind)));
          return false;
        }
        op->inst.operands[k] = v;
        return true;
      }
    }
  }

  // ---- directives ----------------------------------------------------------

  // Parses the arguments after a directive word; false on a syntax error (reported).
  bool parseArgs(int lineNo, const std::vector<Token>& toks, size_t i, std::vector<Arg>* args) {
    while (i < toks.size()) {
      if (toks[i].kind == Tok::Comma) {
        ++i;
        continue;
      }
      Arg arg;
      if (toks[i].kind == Tok::Word && i + 1 < toks.size() && toks[i + 1].kind == Tok::Equals) {
        arg.key = toks[i].text;
        arg.keyColumn = toks[i].column;
        i += 2;
        if (i == toks.size()) {
          error(lineNo, toks[i - 1].column, fmt::format("expected a value after '{}='", arg.key));
          return false;
        }
      }
      const Token& t = toks[i];
      arg.column = t.column;
      if (t.kind == Tok::LBracket) {
        arg.kind = Arg::List;
        ++i;
        bool expectValue = true;
        for (;;) {
          if (i == toks.size()) {
            error(lineNo, t.column, "missing ']' at the end of the list");
            return false;
          }
          if (toks[i].kind == Tok::RBracket) break;
          if (expectValue && toks[i].kind == Tok::Word) {
            arg.list.push_back(toks[i]);
            expectValue = false;
          } else if (!expectValue && toks[i].kind == Tok::Comma) {
            expectValue = true;
          } else {
            error(lineNo, toks[i].column, "expected a number or ']' in the list");
            return false;
          }
          ++i;
        }
        ++i;
      } else if (t.kind == Tok::Word || t.kind == Tok::String) {
        arg.kind = t.kind == Tok::Word ? Arg::Word : Arg::String;
        arg.text = t.text;
        ++i;
        if (t.kind == Tok::Word && i + 1 < toks.size() && toks[i].kind == Tok::Colon &&
            toks[i + 1].kind == Tok::Word) {
          arg.kind = Arg::Pair;
          arg.second = toks[i + 1].text;
          arg.secondColumn = toks[i + 1].column;
          i += 2;
        }
      } else {
        error(lineNo, t.column, fmt::format("unexpected {}", asmlex::tokenName(t.kind)));
        return false;
      }
      args->push_back(std::move(arg));
    }
    return true;
  }

  // Checks keyed arguments against `allowed` (no duplicates, no unknown keys).
  bool checkKeys(int lineNo, const std::string& directive, const std::vector<Arg>& args,
                 size_t positional, std::initializer_list<const char*> allowed) {
    std::set<std::string> seen;
    bool ok = true;
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      if (i < positional) {
        if (!a.key.empty()) {
          error(lineNo, a.keyColumn,
                fmt::format("'{}' expects {} positional argument{} before key=value arguments",
                            directive, positional, positional == 1 ? "" : "s"));
          return false;
        }
        continue;
      }
      if (a.key.empty()) {
        error(lineNo, a.column,
              fmt::format("unexpected argument for '{}' (expected key=value)", directive));
        ok = false;
        continue;
      }
      bool known = false;
      for (const char* k : allowed) known |= a.key == k;
      std::string keys;
      for (const char* k : allowed) keys += (keys.empty() ? "" : ", ") + std::string(k);
      if (!known) {
        error(lineNo, a.keyColumn,
              fmt::format("unknown key '{}' for '{}' (expected: {})", a.key, directive, keys));
        ok = false;
      } else if (!seen.insert(a.key).second) {
        error(lineNo, a.keyColumn, fmt::format("key '{}' given twice", a.key));
        ok = false;
      }
    }
    if (args.size() < positional) {
      error(lineNo, 0,
            fmt::format("'{}' expects {} positional argument{}", directive, positional,
                        positional == 1 ? "" : "s"));
      return false;
    }
    return ok;
  }

  const Arg* find(const std::vector<Arg>& args, const char* key) {
    for (const Arg& a : args)
      if (a.key == key) return &a;
    return nullptr;
  }

  bool wordInt(int lineNo, const std::string& text, int column, const char* what, int64_t min,
               int64_t max, int64_t* out) {
    int64_t v;
    if (!syntax::parseInteger(text, &v)) {
      error(lineNo, column, fmt::format("{} must be an integer, got '{}'", what, text));
      return false;
    }
    if (v < min || v > max) {
      error(lineNo, column, fmt::format("{} {} is out of range ({}..{})", what, text, min, max));
      return false;
    }
    *out = v;
    return true;
  }

  bool argInt(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max, int64_t* out) {
    if (a.kind != Arg::Word) {
      error(lineNo, a.column, fmt::format("{} must be an integer", what));
      return false;
    }
    return wordInt(lineNo, a.text, a.column, what, min, max, out);
  }

  bool argName(int lineNo, const Arg& a, const char* what, std::string* out) {
    if (a.kind == Arg::String || (a.kind == Arg::Word && syntax::isIdentifier(a.text))) {
      *out = a.text;
      return true;
    }
    error(lineNo, a.column,
          fmt::format("{} must be an identifier or a \"quoted string\", got '{}'", what, a.text));
    return false;
  }

  bool argList(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max,
               std::vector<int64_t>* out) {
    if (a.kind != Arg::List) {
      error(lineNo, a.column, fmt::format("{} must be a list like [1, 2]", what));
      return false;
    }
    for (const Token& t : a.list) {
      int64_t v;
      if (!wordInt(lineNo, t.text, t.column, what, min, max, &v)) return false;
      out->push_back(v);
    }
    return true;
  }

  bool argSpace(int lineNo, const std::string& text, int column, MemorySpace* out) {
    if (memorySpaceFromName(text, out)) return true;
    error(lineNo, column,
          fmt::format("unknown memory space '{}' (expected hbm, vmem or smem)", text));
    return false;
  }

  void parseDirective(int lineNo, const std::vector<Token>& toks, size_t i) {
    const Token& d = toks[i];
    std::vector<Arg> args;
    if (!parseArgs(lineNo, toks, i + 1, &args)) return;
    const std::string& name = d.text;
    bool continuesData = name == ".words" || name == ".bytes";
    if (!continuesData) currentData_ = -1;
    if (name == ".chip")
      chipDirective(lineNo, d, args);
    else if (name == ".buffer")
      bufferDirective(lineNo, args);
    else if (name == ".data")
      dataDirective(lineNo, d, args);
    else if (continuesData)
      dataContinuation(lineNo, d, args);
    else if (name == ".dma_descriptor")
      dmaDirective(lineNo, args);
    else if (name == ".symbol")
      symbolDirective(lineNo, d, args);
    else if (name == ".op")
      opDirective(lineNo, d, args);
    else if (name == ".endop")
      endopDirective(lineNo, d, args);
    else if (name == ".cost")
      costDirective(lineNo, args);
    else
      error(lineNo, d.column,
            fmt::format("unknown directive '{}' (expected .chip, .buffer, .data, .words, .bytes, "
                        ".dma_descriptor, .symbol, .op, .endop or .cost)",
                        name));
  }

  void chipDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (args.size() != 1 || !args[0].key.empty()) {
      error(lineNo, d.column, "'.chip' takes one argument, the chip preset name");
      return;
    }
    std::string chip;
    if (!argName(lineNo, args[0], "the chip name", &chip)) return;
    if (chipLine_) {
      error(lineNo, d.column, fmt::format("'.chip' is already given on line {}", chipLine_));
      return;
    }
    chipLine_ = lineNo;
    prog_.chip = chip;
  }

  void bufferDirective(int lineNo, const std::vector<Arg>& args) {
    if (!checkKeys(lineNo, ".buffer", args, 1, {"shape", "dtype", "space", "addr", "role", "size"}))
      return;
    BufferDesc buf;
    if (!argName(lineNo, args[0], "the buffer name", &buf.name)) return;
    const Arg* shape = find(args, "shape");
    const Arg* dtype = find(args, "dtype");
    const Arg* addr = find(args, "addr");
    for (auto [arg, key] : {std::pair{shape, "shape"}, {dtype, "dtype"}, {addr, "addr"}})
      if (!arg) {
        error(lineNo, args[0].column, fmt::format("buffer '{}' needs {}=", buf.name, key));
        return;
      }
    if (!argList(lineNo, *shape, "a dimension", 0, INT64_MAX, &buf.shape)) return;
    if (dtype->kind != Arg::Word || !dtypeFromName(dtype->text, &buf.dtype)) {
      error(lineNo, dtype->column,
            fmt::format("unknown dtype '{}' (expected f32, bf16, s32, s8, u8, s16, u16 or pred)",
                        dtype->text));
      return;
    }
    if (const Arg* space = find(args, "space"))
      if (!argSpace(lineNo, space->text, space->column, &buf.space)) return;
    int64_t v;
    if (!argInt(lineNo, *addr, "the address", 0, INT64_MAX, &v)) return;
    buf.address = uint64_t(v);
    if (const Arg* role = find(args, "role"))
      if (!bufferRoleFromName(role->text, &buf.role)) {
        error(lineNo, role->column,
              fmt::format("unknown role '{}' (expected input, output, scratch or constant)",
                          role->text));
        return;
      }
    uint64_t bytes = uint64_t(dtypeBytes(buf.dtype));
    for (int64_t dim : buf.shape) {
      if (dim != 0 && bytes > uint64_t(INT64_MAX) / uint64_t(dim)) {
        error(lineNo, shape->column, "the buffer's size overflows 64 bits");
        return;
      }
      bytes *= uint64_t(dim);
    }
    buf.sizeBytes = bytes;
    if (const Arg* size = find(args, "size")) {
      if (!argInt(lineNo, *size, "the size", 0, INT64_MAX, &v)) return;
      if (uint64_t(v) < bytes) {
        error(lineNo, size->column,
              fmt::format("size={} is smaller than the {} bytes the shape needs", v, bytes));
        return;
      }
      buf.sizeBytes = uint64_t(v);
    }
    if (buf.address > UINT64_MAX - buf.sizeBytes) {
      error(lineNo, addr->column, "the buffer's end address overflows 64 bits");
      return;
    }
    for (const BufferDesc& other : prog_.buffers) {
      if (other.name == buf.name) {
        error(lineNo, args[0].column, fmt::format("buffer '{}' is already defined", buf.name));
        return;
      }
      if (other.space == buf.space && buf.sizeBytes && other.sizeBytes &&
          buf.address < other.address + other.sizeBytes &&
          other.address < buf.address + buf.sizeBytes) {
        error(lineNo, addr->column,
              fmt::format(
                  "buffer '{}' [0x{:x}, 0x{:x}) overlaps buffer '{}' [0x{:x}, 0x{:x}) in {}",
                  buf.name, buf.address, buf.address + buf.sizeBytes, other.name, other.address,
                  other.address + other.sizeBytes, memorySpaceName(buf.space)));
        return;
      }
    }
    prog_.buffers.push_back(std::move(buf));
  }

  // Appends the values args[from..] to `bytes`, as words or bytes.
  bool dataValues(int lineNo, const std::vector<Arg>& args, size_t from, bool words,
                  std::vector<uint8_t>* bytes) {
    for (size_t i = from; i < args.size(); ++i) {
      const Arg& a = args[i];
      if (!a.key.empty() || a.kind != Arg::Word) {
        error(lineNo, a.column, "expected a number");
        return false;
      }
      int64_t v;
      uint32_t bits;
      if (words) {
        if (syntax::parseInteger(a.text, &v)) {
          if (v < INT32_MIN || v > int64_t(UINT32_MAX)) {
            error(lineNo, a.column, fmt::format("word {} does not fit in 32 bits", a.text));
            return false;
          }
          bits = uint32_t(v);
        } else if (!syntax::parseFloatLiteral(a.text, &bits)) {
          error(lineNo, a.column,
                fmt::format("expected an integer or float literal, got '{}'", a.text));
          return false;
        }
        for (int b = 0; b < 4; ++b) bytes->push_back(uint8_t(bits >> (8 * b)));
      } else {
        if (!wordInt(lineNo, a.text, a.column, "a byte", -128, 255, &v)) return false;
        bytes->push_back(uint8_t(v));
      }
    }
    return true;
  }

  void dataDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (args.size() < 3 || args[2].kind != Arg::Word ||
        (args[2].text != "words" && args[2].text != "bytes")) {
      error(
          lineNo, d.column,
          "expected '.data SPACE, ADDRESS, words V, ...' or '.data SPACE, ADDRESS, bytes V, ...'");
      return;
    }
    DataSegment seg;
    if (!argSpace(lineNo, args[0].text, args[0].column, &seg.space)) return;
    int64_t addr;
    if (!argInt(lineNo, args[1], "the address", 0, INT64_MAX, &addr)) return;
    seg.address = uint64_t(addr);
    if (!dataValues(lineNo, args, 3, args[2].text == "words", &seg.bytes)) return;
    prog_.data.push_back(std::move(seg));
    currentData_ = int(prog_.data.size()) - 1;
  }

  void dataContinuation(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (currentData_ < 0) {
      error(lineNo, d.column, fmt::format("'{}' must follow a '.data' line", d.text));
      return;
    }
    dataValues(lineNo, args, 0, d.text == ".words", &prog_.data[currentData_].bytes);
  }

  void dmaDirective(int lineNo, const std::vector<Arg>& args) {
    if (!checkKeys(lineNo, ".dma_descriptor", args, 1,
                   {"src", "dst", "inner", "counts", "src_strides", "dst_strides", "chip"}))
      return;
    int64_t word;
    if (!argInt(lineNo, args[0], "the SMEM word address", 0, INT64_MAX / 4, &word)) return;
    DmaDescriptor desc;
    for (auto [key, space, address] : {std::tuple{"src", &desc.src, &desc.srcAddr},
                                       std::tuple{"dst", &desc.dst, &desc.dstAddr}}) {
      const Arg* a = find(args, key);
      if (!a || a->kind != Arg::Pair) {
        error(lineNo, a ? a->column : args[0].column,
              fmt::format("'.dma_descriptor' needs {}=SPACE:ADDRESS (e.g. hbm:0x0)", key));
        return;
      }
      if (!argSpace(lineNo, a->text, a->column, space)) return;
      int64_t v;
      if (!wordInt(lineNo, a->second, a->secondColumn, "the address", 0, INT64_MAX, &v)) return;
      *address = uint64_t(v);
    }
    const Arg* inner = find(args, "inner");
    if (!inner) {
      error(lineNo, args[0].column, "'.dma_descriptor' needs inner=BYTES");
      return;
    }
    int64_t v;
    if (!argInt(lineNo, *inner, "inner", 1, UINT32_MAX, &v)) return;
    desc.innerBytes = uint32_t(v);
    std::vector<int64_t> counts, srcStrides, dstStrides;
    if (const Arg* a = find(args, "counts"))
      if (!argList(lineNo, *a, "a count", 1, UINT32_MAX, &counts)) return;
    if (const Arg* a = find(args, "src_strides"))
      if (!argList(lineNo, *a, "a source stride", 0, UINT32_MAX, &srcStrides)) return;
    if (const Arg* a = find(args, "dst_strides"))
      if (!argList(lineNo, *a, "a destination stride", 0, UINT32_MAX, &dstStrides)) return;
    if (counts.size() > 3 || srcStrides.size() != counts.size() ||
        dstStrides.size() != counts.size()) {
      error(lineNo, args[0].column,
            fmt::format("'.dma_descriptor' takes up to 3 outer counts and as many source and "
                        "destination strides (got {} counts, {} src_strides, {} dst_strides)",
                        counts.size(), srcStrides.size(), dstStrides.size()));
      return;
    }
    desc.numDims = int(counts.size()) + 1;
    for (size_t k = 0; k < counts.size(); ++k) {
      desc.counts[k] = uint32_t(counts[k]);
      desc.srcStrides[k] = uint32_t(srcStrides[k]);
      desc.dstStrides[k] = uint32_t(dstStrides[k]);
    }
    if (const Arg* a = find(args, "chip")) {
      if (!argInt(lineNo, *a, "chip", 0, 0xFFFF, &v)) return;
      desc.dstChip = uint16_t(v);
    }
    DataSegment seg;
    seg.space = MemorySpace::Smem;
    seg.address = uint64_t(word) * 4;
    for (uint32_t w : desc.pack())
      for (int b = 0; b < 4; ++b) seg.bytes.push_back(uint8_t(w >> (8 * b)));
    prog_.data.push_back(std::move(seg));
  }

  void symbolDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (args.empty() || args.size() > 2 || !args[0].key.empty() ||
        (args.size() == 2 && !args[1].key.empty())) {
      error(lineNo, d.column, "expected '.symbol NAME' or '.symbol NAME, BUNDLE'");
      return;
    }
    Symbol sym;
    if (!argName(lineNo, args[0], "the symbol name", &sym.name)) return;
    sym.bundle = uint32_t(prog_.code.size());
    if (args.size() == 2) {
      int64_t v;
      if (!argInt(lineNo, args[1], "the bundle number", 0, UINT32_MAX, &v)) return;
      sym.bundle = uint32_t(v);
    }
    for (const Symbol& other : prog_.symbols)
      if (other.name == sym.name) {
        error(lineNo, args[0].column, fmt::format("symbol '{}' is already defined", sym.name));
        return;
      }
    symbolLines_.push_back({lineNo, args[0].column});
    prog_.symbols.push_back(std::move(sym));
  }

  void opDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (!checkKeys(lineNo, ".op", args, 1, {"hlo", "file", "line", "begin", "end"})) return;
    DebugEntry e;
    if (!argName(lineNo, args[0], "the op name", &e.opName)) return;
    for (auto [key, field] : {std::pair{"hlo", &e.hloInstruction}, {"file", &e.sourceFile}})
      if (const Arg* a = find(args, key)) {
        if (a->kind != Arg::Word && a->kind != Arg::String) {
          error(lineNo, a->column, fmt::format("{}= must be a word or a \"quoted string\"", key));
          return;
        }
        *field = a->text;
      }
    int64_t v;
    if (const Arg* a = find(args, "line")) {
      if (!argInt(lineNo, *a, "the line", 0, UINT32_MAX, &v)) return;
      e.sourceLine = uint32_t(v);
    }
    const Arg* begin = find(args, "begin");
    const Arg* end = find(args, "end");
    if (bool(begin) != bool(end)) {
      error(lineNo, d.column,
            "'.op' takes both begin= and end=, or neither (then '.endop' ends it)");
      return;
    }
    if (begin) {
      int64_t b, en;
      if (!argInt(lineNo, *begin, "begin", 0, UINT32_MAX, &b) ||
          !argInt(lineNo, *end, "end", b, UINT32_MAX, &en))
        return;
      e.begin = uint32_t(b);
      e.end = uint32_t(en);
      explicitRanges_.push_back({prog_.debugMap.size(), lineNo, d.column});
    } else {
      e.begin = uint32_t(prog_.code.size());
      openOps_.push_back({prog_.debugMap.size(), lineNo, d.column});
    }
    prog_.debugMap.push_back(std::move(e));
  }

  void endopDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
    if (!args.empty()) {
      error(lineNo, args[0].column, "'.endop' takes no arguments");
      return;
    }
    if (openOps_.empty()) {
      error(lineNo, d.column, "'.endop' without an open '.op'");
      return;
    }
    prog_.debugMap[openOps_.back().index].end = uint32_t(prog_.code.size());
    openOps_.pop_back();
  }

  void costDirective(int lineNo, const std::vector<Arg>& args) {
    if (!checkKeys(lineNo, ".cost", args, 1,
                   {"flops", "hbm_read", "hbm_write", "vmem_read", "vmem_write"}))
      return;
    CostEntry c;
    if (!argName(lineNo, args[0], "the op name", &c.opName)) return;
    if (const Arg* a = find(args, "flops")) {
      char* endp = nullptr;
      c.flops = a->kind == Arg::Word ? std::strtod(a->text.c_str(), &endp) : -1;
      if (a->kind != Arg::Word || *endp != '\0' || !std::isfinite(c.flops) || c.flops < 0 ||
          a->text.empty()) {
        error(lineNo, a->column, "flops= must be a finite number >= 0");
        return;
      }
    }
    for (auto [key, field] : {std::pair{"hbm_read", &c.hbmBytesRead},
                              {"hbm_write", &c.hbmBytesWritten},
                              {"vmem_read", &c.vmemBytesRead},
                              {"vmem_write", &c.vmemBytesWritten}})
      if (const Arg* a = find(args, key)) {
        int64_t v;
        if (!argInt(lineNo, *a, key, 0, INT64_MAX, &v)) return;
        *field = uint64_t(v);
      }
    prog_.costs.push_back(std::move(c));
  }

  // ---- end of file ---------------------------------------------------------

  void finish() {
    size_t n = prog_.code.size();
    for (const OpenOp& o : openOps_)
      error(o.line, o.column,
            fmt::format("'.op {}' is never closed by '.endop'", prog_.debugMap[o.index].opName));
    for (const OpenOp& o : explicitRanges_)
      if (prog_.debugMap[o.index].end > n)
        error(o.line, o.column,
              fmt::format("'.op' range ends at bundle {}, past the end of the program ({} "
                          "bundles)",
                          prog_.debugMap[o.index].end, n));
    for (size_t i = 0; i < prog_.symbols.size(); ++i)
      if (prog_.symbols[i].bundle >= n)
        error(symbolLines_[i].first, symbolLines_[i].second,
              fmt::format("symbol '{}' names bundle {}, but the program has {} bundle{}",
                          prog_.symbols[i].name, prog_.symbols[i].bundle, n, n == 1 ? "" : "s"));
    for (const NumericTarget& t : numericTargets_)
      if (t.value >= n)
        error(t.line, t.column,
              fmt::format("branch target {} is past the end of the program ({} bundle{})", t.value,
                          n, n == 1 ? "" : "s"));
    for (const Fixup& f : fixups_) {
      auto it = labels_.find(f.label);
      if (it == labels_.end()) {
        error(f.line, f.column, fmt::format("undefined label '{}'", f.label));
        continue;
      }
      if (options_.checkTargets && it->second.first >= n) {
        error(f.line, f.column,
              fmt::format("label '{}' (line {}) is past the last bundle; a branch target must "
                          "label a bundle",
                          f.label, it->second.second));
        continue;
      }
      prog_.code[f.bundle].slots[f.slot].operands[f.operand] = it->second.first;
    }
    for (size_t i = 0; i < n && !stopped_; ++i) {
      EncodedBundle bytes;
      std::string problem;
      if (!tryEncode(prog_.code[i], &bytes, &problem))
        error(bundleLines_[i].first, bundleLines_[i].second, problem);
    }
  }

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

}  // namespace

bool assemble(std::string_view source, const std::string& fileName, Program* out,
              std::vector<Diagnostic>* diagnostics, const AssemblerOptions& options) {
  Assembler a(source, fileName, options);
  return a.run(out, diagnostics);
}

bool assembleBundle(std::string_view line, Bundle* out, std::string* error) {
  AssemblerOptions options;
  options.checkTargets = false;
  Program p;
  std::vector<Diagnostic> diags;
  if (!assemble(line, "<bundle>", &p, &diags, options)) {
    *error = formatDiagnostic(diags.front());
    return false;
  }
  if (p.code.size() != 1) {
    *error = fmt::format("expected exactly one bundle, got {}", p.code.size());
    return false;
  }
  *out = p.code[0];
  return true;
}

}  // namespace tpusim::isa
