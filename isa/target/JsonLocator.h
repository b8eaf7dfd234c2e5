// Finds where a key sits in JSON text, so errors about a field can say
// file:line:col although nlohmann/json keeps no positions. Built from text
// that already parsed; scans once.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tpusim::target {

struct TextPos {
  int line = 0, col = 0;  // 1-based; 0 = unknown
};

class JsonLocator {
 public:
  explicit JsonLocator(const std::string& text);
  // Position of the key of `path` (object keys joined by '.'), or of the
  // nearest enclosing key that exists; {0, 0} when nothing matches.
  TextPos find(const std::string& path) const;
  // Line and column of a byte offset (as nlohmann's parse_error::byte gives, 1-based).
  static TextPos posOfByte(const std::string& text, size_t byte);

  // A key that appears twice in one object (JSON parsers keep only the last).
  struct Duplicate {
    std::string path;
    TextPos first, again;
  };
  const std::vector<Duplicate>& duplicates() const { return duplicates_; }

 private:
  std::map<std::string, TextPos> keys_;
  std::vector<Duplicate> duplicates_;
};

}  // namespace tpusim::target
