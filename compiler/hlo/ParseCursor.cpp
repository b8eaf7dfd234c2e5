#include "compiler/hlo/ParseCursor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tpusim::hlo {

namespace {
constexpr int kMaxDepth = 64;
bool isDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

char ParseCursor::peekRaw(size_t ahead) const {
  size_t p = pos_ + ahead;
  return p < end_ ? text_[p] : '\0';
}

void ParseCursor::skipTrivia() {
  while (pos_ < end_) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '/' && peekRaw(1) == '/') {
      while (pos_ < end_ && text_[pos_] != '\n') ++pos_;
    } else if (c == '/' && peekRaw(1) == '*') {
      size_t close = text_.find("*/", pos_ + 2);
      if (close == std::string_view::npos || close + 2 > end_) {
        fail(pos_, "unterminated /* comment");
        pos_ = end_;
        return;
      }
      pos_ = close + 2;
    } else {
      return;
    }
  }
}

bool ParseCursor::atEnd() {
  skipTrivia();
  return pos_ >= end_;
}

char ParseCursor::peek() {
  skipTrivia();
  return pos_ < end_ ? text_[pos_] : '\0';
}

bool ParseCursor::tryConsume(char c) {
  if (failed() || peek() != c) return false;
  ++pos_;
  return true;
}

bool ParseCursor::expect(char c, const char* context) {
  if (failed()) return false;
  if (tryConsume(c)) return true;
  if (pos_ >= end_)
    return fail(pos_, fmt::format("expected '{}' {}, got end of input", c, context));
  return fail(pos_, fmt::format("expected '{}' {}", c, context));
}

std::string_view ParseCursor::peekName() {
  skipTrivia();
  size_t p = pos_;
  if (p < end_ && text_[p] == '%') ++p;
  size_t start = p;
  if (p < end_ && text_[p] == '-') return {};
  while (p < end_ && isNameChar(text_[p])) ++p;
  return text_.substr(start, p - start);
}

bool ParseCursor::tryKeyword(std::string_view word) {
  if (failed()) return false;
  skipTrivia();
  if (pos_ < end_ && text_[pos_] == '%') return false;
  if (peekName() != word) return false;
  pos_ += word.size();
  return true;
}

bool ParseCursor::parseName(std::string* out, size_t* at, const char* what) {
  if (failed()) return false;
  skipTrivia();
  if (at) *at = pos_;
  size_t start = pos_;
  if (pos_ < end_ && text_[pos_] == '%') ++start;
  size_t p = start;
  if (p < end_ && text_[p] != '-')
    while (p < end_ && isNameChar(text_[p])) ++p;
  if (p == start) {
    if (pos_ >= end_) return fail(pos_, fmt::format("expected {}, got end of input", what));
    return fail(pos_, fmt::format("expected {}", what));
  }
  *out = std::string(text_.substr(start, p - start));
  pos_ = p;
  return true;
}

bool ParseCursor::parseUnsigned(uint64_t* out, const char* what) {
  if (failed()) return false;
  skipTrivia();
  size_t start = pos_;
  if (pos_ >= end_ || !isDigit(text_[pos_])) return fail(pos_, fmt::format("expected {}", what));
  uint64_t v = 0;
  while (pos_ < end_ && isDigit(text_[pos_])) {
    uint64_t d = static_cast<uint64_t>(text_[pos_] - '0');
    if (v > (UINT64_MAX - d) / 10) return fail(start, "integer is too large");
    v = v * 10 + d;
    ++pos_;
  }
  *out = v;
  return true;
}

bool ParseCursor::parseInt(int64_t* out, const char* what) {
  if (failed()) return false;
  skipTrivia();
  size_t start = pos_;
  bool neg = false;
  if (pos_ < end_ && text_[pos_] == '-') {
    neg = true;
    ++pos_;
  }
  if (pos_ >= end_ || !isDigit(text_[pos_])) {
    pos_ = start;
    if (start >= end_) return fail(start, fmt::format("expected {}, got end of input", what));
    return fail(start, fmt::format("expected {}", what));
  }
  uint64_t v = 0;
  while (pos_ < end_ && isDigit(text_[pos_])) {
    uint64_t d = static_cast<uint64_t>(text_[pos_] - '0');
    if (v > (uint64_t{1} << 63) / 10 || v * 10 + d > (uint64_t{1} << 63))
      return fail(start, "integer is too large");
    v = v * 10 + d;
    ++pos_;
  }
  if (!neg && v > static_cast<uint64_t>(INT64_MAX)) return fail(start, "integer is too large");
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return true;
}

bool ParseCursor::parseFloat(double* out, const char* what) {
  if (failed()) return false;
  skipTrivia();
  size_t start = pos_;
  size_t p = pos_;
  while (p < end_ && (isNameChar(text_[p]) || text_[p] == '+') && text_[p] != '_') {
    // A '-' or '+' is part of the number only at the start or after an exponent.
    if ((text_[p] == '-' || text_[p] == '+') && p != start && text_[p - 1] != 'e' &&
        text_[p - 1] != 'E')
      break;
    ++p;
  }
  std::string tok(text_.substr(start, p - start));
  if (tok.empty()) return fail(start, fmt::format("expected {}", what));
  bool neg = tok[0] == '-';
  std::string body = neg || tok[0] == '+' ? tok.substr(1) : tok;
  double v;
  if (body == "inf") {
    v = HUGE_VAL;
  } else if (body == "nan") {
    v = std::nan("");
    // nan(0x...) payloads: accepted, payload dropped.
    if (p < end_ && text_[p] == '(') {
      size_t close = text_.find(')', p);
      if (close == std::string_view::npos || close >= end_) return fail(p, "unterminated nan(");
      p = close + 1;
    }
  } else {
    if (body.empty() || !(isDigit(body[0]) || body[0] == '.'))
      return fail(start, fmt::format("expected {}", what));
    char* endp = nullptr;
    errno = 0;
    v = std::strtod(body.c_str(), &endp);
    if (endp != body.c_str() + body.size())
      return fail(start, fmt::format("malformed number '{}'", tok));
  }
  *out = neg ? -v : v;
  pos_ = p;
  return true;
}

bool ParseCursor::parseString(std::string* out, const char* what) {
  if (failed()) return false;
  skipTrivia();
  size_t start = pos_;
  if (pos_ >= end_ || text_[pos_] != '"') return fail(pos_, fmt::format("expected {}", what));
  size_t p = pos_ + 1;
  while (p < end_ && text_[p] != '"') {
    if (text_[p] == '\\') ++p;
    ++p;
  }
  if (p >= end_) return fail(start, "unterminated string");
  *out = std::string(text_.substr(start + 1, p - start - 1));
  pos_ = p + 1;
  return true;
}

bool ParseCursor::parseIntList(std::vector<int64_t>* out, const char* what) {
  out->clear();
  if (!expect('{', what)) return false;
  if (tryConsume('}')) return true;
  do {
    int64_t v;
    if (!parseInt(&v)) return false;
    out->push_back(v);
  } while (tryConsume(','));
  return expect('}', what);
}

bool ParseCursor::captureRaw(std::string* out, const char* what) {
  if (failed()) return false;
  skipTrivia();
  size_t start = pos_;
  std::vector<std::pair<char, size_t>> stack;  // expected closer, opener position
  size_t p = pos_;
  while (p < end_) {
    char c = text_[p];
    if (c == '"') {
      size_t q = p + 1;
      while (q < end_ && text_[q] != '"') {
        if (text_[q] == '\\') ++q;
        ++q;
      }
      if (q >= end_) return fail(p, "unterminated string");
      p = q + 1;
      continue;
    }
    if (c == '{' || c == '[' || c == '(') {
      stack.push_back({c == '{' ? '}' : c == '[' ? ']' : ')', p});
      ++p;
      continue;
    }
    if (c == '}' || c == ']' || c == ')') {
      if (stack.empty()) break;
      if (stack.back().first != c)
        return fail(p, fmt::format("mismatched '{}' (expected '{}')", c, stack.back().first));
      stack.pop_back();
      ++p;
      continue;
    }
    if (stack.empty() && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) break;
    ++p;
  }
  if (!stack.empty())
    return fail(stack.back().second, fmt::format("unterminated '{}'", text_[stack.back().second]));
  if (p == start) return fail(start, fmt::format("expected {}", what));
  *out = std::string(text_.substr(start, p - start));
  pos_ = p;
  return true;
}

bool ParseCursor::enter(const char* what) {
  if (++depth_ > kMaxDepth) {
    --depth_;
    return failHere(fmt::format("{} nested too deeply", what));
  }
  return true;
}

int ParseCursor::lineOf(size_t at) const {
  if (lineStarts_.empty()) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') lineStarts_.push_back(i + 1);
  }
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), at);
  return static_cast<int>(it - lineStarts_.begin());
}

std::string ParseCursor::location(size_t at) const {
  at = std::min(at, text_.size());
  int line = lineOf(at);
  size_t lineStart = lineStarts_[static_cast<size_t>(line - 1)];
  return fmt::format("{}:{}:{}", file_, line, at - lineStart + 1);
}

bool ParseCursor::fail(size_t at, const std::string& message) {
  if (!error_.empty()) return false;
  at = std::min(at, text_.size());
  int line = lineOf(at);
  size_t lineStart = lineStarts_[static_cast<size_t>(line - 1)];
  size_t lineEnd = text_.find('\n', lineStart);
  if (lineEnd == std::string_view::npos) lineEnd = text_.size();
  std::string src(text_.substr(lineStart, lineEnd - lineStart));
  if (!src.empty() && src.back() == '\r') src.pop_back();
  std::string caret;
  for (size_t i = lineStart; i < at && i - lineStart < src.size(); ++i)
    caret += text_[i] == '\t' ? '\t' : ' ';
  // Very long lines (one-line dumps) are shown around the caret only.
  if (src.size() > 200) {
    size_t col = caret.size();
    size_t from = col > 80 ? col - 80 : 0;
    src = src.substr(from, 160);
    caret = caret.substr(from);
  }
  error_ = fmt::format("{}: error: {}\n{}\n{}^", location(at), message, src, caret);
  pos_ = end_;
  return false;
}

bool ParseCursor::failHere(const std::string& message) { return fail(pos_, message); }

}  // namespace tpusim::hlo
