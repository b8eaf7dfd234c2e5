#include "isa/AsmSyntax.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "isa/support/Numerics.h"

namespace tpusim::isa::syntax {

namespace {
bool isIdentStart(char c) { return std::isalpha(uint8_t(c)) || c == '_' || c == '.' || c == '$'; }
bool isIdentChar(char c) { return isIdentStart(c) || std::isdigit(uint8_t(c)); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

bool isIdentifier(std::string_view s) {
  if (s.empty() || !isIdentStart(s[0])) return false;
  if (s[0] == '.' && s.size() > 1 && isDigit(s[1])) return false;
  if (s == ".") return false;
  for (char c : s)
    if (!isIdentChar(c)) return false;
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    uint8_t u = uint8_t(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u >= 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string quoteIfNeeded(std::string_view s) {
  return isIdentifier(s) ? std::string(s) : quote(s);
}

bool parseInteger(std::string_view s, int64_t* out) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  int base = 10;
  if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  if (i >= s.size()) return false;
  uint64_t magnitude = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    int d;
    if (isDigit(c))
      d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return false;
    if (magnitude > (uint64_t(1) << 63) / uint64_t(base)) return false;
    magnitude = magnitude * uint64_t(base) + uint64_t(d);
    if (magnitude > (uint64_t(1) << 63)) return false;
  }
  if (!negative && magnitude > uint64_t(INT64_MAX)) return false;
  *out = negative ? int64_t(0 - magnitude) : int64_t(magnitude);
  return true;
}

bool isFloatLiteral(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::string_view body = s.substr(i);
  if (body == "inf" || body == "nan") return true;
  int digits = 0;
  bool dot = false, exponent = false;
  for (; i < s.size() && (isDigit(s[i]) || (s[i] == '.' && !dot)); ++i) {
    if (s[i] == '.')
      dot = true;
    else
      ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    exponent = true;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    int expDigits = 0;
    for (; i < s.size() && isDigit(s[i]); ++i) ++expDigits;
    if (expDigits == 0) return false;
  }
  return i == s.size() && (dot || exponent);
}

bool parseFloatLiteral(std::string_view s, uint32_t* bits) {
  if (!isFloatLiteral(s)) return false;
  bool negative = !s.empty() && s[0] == '-';
  std::string_view body = (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
  if (body == "nan") {
    *bits = kCanonicalNanBits | (negative ? 0x80000000u : 0u);
    return true;
  }
  if (body == "inf") {
    *bits = negative ? 0xFF800000u : 0x7F800000u;
    return true;
  }
  std::string text(s);
  errno = 0;
  char* end = nullptr;
  float f = std::strtof(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (std::isinf(f)) return false;  // a finite literal too large for f32
  *bits = bitsOf(f);
  return true;
}

std::string formatImm32(uint32_t bits) {
  int32_t s = int32_t(bits);
  if (s >= -65536 && s <= 65536) return std::to_string(s);
  if (bits == kCanonicalNanBits) return "nan";
  if (bits == 0x7F800000u) return "inf";
  if (bits == 0xFF800000u) return "-inf";
  float f = floatOf(bits);
  float a = std::fabs(f);
  if (std::isnormal(f) && a >= 1e-6f && a <= 1e9f) {
    for (int precision = 1; precision <= 7; ++precision) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*g", precision, double(f));
      if (std::strtof(buf, nullptr) != f) continue;
      std::string text = buf;
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      return text;
    }
  }
  return fmt::format("0x{:x}", bits);
}

std::string formatDouble(double v) { return fmt::format("{}", v); }

}  // namespace tpusim::isa::syntax
