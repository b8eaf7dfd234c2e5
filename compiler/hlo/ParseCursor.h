// Internal to the parser: a position in HLO text with the small lexing steps
// every part of the parser uses (names, integers, floats, strings, balanced
// raw values) and the error report "file:line:col: error: ..." with the line
// and a caret. The first error wins; every step returns false after it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::hlo {

class ParseCursor {
 public:
  ParseCursor(std::string_view text, std::string fileName, size_t begin, size_t end)
      : text_(text), file_(std::move(fileName)), pos_(begin), end_(end) {}

  size_t pos() const { return pos_; }
  void setPos(size_t p) { pos_ = p; }
  size_t end() const { return end_; }
  std::string_view text() const { return text_; }
  const std::string& fileName() const { return file_; }

  // Skips whitespace, "// ..." line comments and "/* ... */" comments.
  void skipTrivia();
  // True at the end (after trivia).
  bool atEnd();
  // The next character after trivia ('\0' at the end), not consumed.
  char peek();
  // The character at the current position without skipping trivia.
  char peekRaw(size_t ahead = 0) const;
  // Consumes `c` (after trivia) if it is next.
  bool tryConsume(char c);
  // Consumes `c` or fails with "expected 'c' <context>".
  bool expect(char c, const char* context);
  // Consumes the word if the next name equals it (whole word).
  bool tryKeyword(std::string_view word);

  // A name: optional '%', then [A-Za-z0-9_.-]+ (must not start with '-').
  // *out gets the name without '%'; *at its position (for errors).
  bool parseName(std::string* out, size_t* at = nullptr, const char* what = "a name");
  // Peeks at the name starting here (after trivia) without consuming it.
  std::string_view peekName();
  bool parseInt(int64_t* out, const char* what = "an integer");
  // Unsigned 64-bit integer (for u64 constants).
  bool parseUnsigned(uint64_t* out, const char* what = "an integer");
  // A floating value: digits, exponents, inf, -inf, nan, -nan.
  bool parseFloat(double* out, const char* what = "a number");
  // "..." with backslash escapes; *out gets the content between the quotes as written.
  bool parseString(std::string* out, const char* what = "a string");
  // {a, b, c} of integers (possibly empty).
  bool parseIntList(std::vector<int64_t>* out, const char* what);
  // A value written verbatim: a run of atoms ({..}, [..], (..), "..", other
  // characters) up to whitespace, ',' or an unmatched closer at depth 0.
  bool captureRaw(std::string* out, const char* what = "a value");

  // Records an error at `at` (the first one wins) and returns false.
  bool fail(size_t at, const std::string& message);
  bool failHere(const std::string& message);
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  // "file:line:col" of a position.
  std::string location(size_t at) const;
  int lineOf(size_t at) const;

  // Guards recursion (nested tuples, nested braces) against hostile input.
  bool enter(const char* what);
  void leave() { --depth_; }

 private:
  std::string_view text_;
  std::string file_;
  size_t pos_;
  size_t end_;
  std::string error_;
  int depth_ = 0;
  mutable std::vector<size_t> lineStarts_;  // built on first use
};

// True for characters of a name: [A-Za-z0-9_.-].
inline bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace tpusim::hlo
