#include "isa/Assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "isa/AsmParser.h"
#include "isa/AsmSyntax.h"
#include "isa/Encoder.h"
#include "isa/Rules.h"

namespace tpusim::isa {

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

namespace detail {

AsmParser::AsmParser(std::string_view source, const std::string& file,
                     const AssemblerOptions& options)
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

bool AsmParser::run(Program* out, std::vector<Diagnostic>* diagnostics) {
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

void AsmParser::error(int line, int column, std::string message) {
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

void AsmParser::parseLine(int lineNo, std::string_view raw) {
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

void AsmParser::defineLabel(int lineNo, const Token& t) {
  if (!syntax::isIdentifier(t.text)) {
    error(lineNo, t.column, fmt::format("'{}' is not a valid label name", t.text));
    return;
  }
  auto [it, inserted] = labels_.insert({t.text, {uint32_t(prog_.code.size()), lineNo}});
  if (!inserted)
    error(lineNo, t.column,
          fmt::format("label '{}' is already defined on line {}", t.text, it->second.second));
}

void AsmParser::finish() {
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
            fmt::format("branch target {} is past the end of the program ({} bundle{})", t.value, n,
                        n == 1 ? "" : "s"));
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

}  // namespace detail

bool assemble(std::string_view source, const std::string& fileName, Program* out,
              std::vector<Diagnostic>* diagnostics, const AssemblerOptions& options) {
  detail::AsmParser a(source, fileName, options);
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
