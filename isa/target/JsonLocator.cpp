#include "isa/target/JsonLocator.h"

namespace tpusim::target {

JsonLocator::JsonLocator(const std::string& text) {
  // Stack of open containers; for objects, `path` is the container's own path.
  struct Open {
    bool object;
    std::string path;
    int containers = 0;  // arrays: objects/arrays seen so far, to name them path[i]
  };
  std::vector<Open> stack;
  std::string lastKey;  // path of the most recent key, the parent of a following '{'
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  while (i < text.size()) {
    char c = text[i];
    if (c == '"') {
      TextPos start{line, col};
      std::string s;
      advance(1);
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) {
          s += text[i + 1];
          advance(2);
        } else {
          s += text[i];
          advance(1);
        }
      }
      advance(1);
      size_t j = i;
      while (j < text.size() &&
             (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n'))
        ++j;
      if (j < text.size() && text[j] == ':' && !stack.empty() && stack.back().object) {
        std::string path = stack.back().path.empty() ? s : stack.back().path + "." + s;
        auto [it, inserted] = keys_.emplace(path, start);
        if (!inserted) duplicates_.push_back({path, it->second, start});
        lastKey = path;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      // A container that is the value of a key takes that key's path.
      std::string path = stack.empty() ? "" : lastKey;
      if (!stack.empty() && !stack.back().object)
        path = stack.back().path + "[" + std::to_string(stack.back().containers++) + "]";
      stack.push_back({c == '{', path});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
      lastKey = stack.empty() ? "" : stack.back().path;
    }
    advance(1);
  }
}

TextPos JsonLocator::find(const std::string& path) const {
  std::string p = path;
  while (!p.empty()) {
    auto it = keys_.find(p);
    if (it != keys_.end()) return it->second;
    size_t dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  return {};
}

TextPos JsonLocator::posOfByte(const std::string& text, size_t byte) {
  TextPos pos{1, 1};
  size_t end = byte == 0 ? 0 : byte - 1;
  for (size_t i = 0; i < end && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.col = 1;
    } else {
      ++pos.col;
    }
  }
  return pos;
}

}  // namespace tpusim::target
