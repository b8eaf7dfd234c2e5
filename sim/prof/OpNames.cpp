#include "sim/prof/OpNames.h"

#include <cctype>

namespace tpusim::prof {

std::string cleanOpName(const std::string& n) {
  size_t at = 0;
  while (n.compare(at, 4, "jit(") == 0) {
    size_t close = n.find(")/", at);
    if (close == std::string::npos) break;
    at = close + 2;
  }
  return n.substr(at, n.find('[', at) - at);
}

FoldedName foldLayers(const std::string& name) {
  static const std::string kScope = "layers_";
  FoldedName out;
  size_t at = 0;
  while (at < name.size()) {
    size_t hit = name.find(kScope, at);
    bool scopeStart = hit != std::string::npos && (hit == 0 || name[hit - 1] == '/');
    size_t digits = hit == std::string::npos ? 0 : hit + kScope.size();
    size_t end = digits;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    bool wholeScope = end > digits && (end == name.size() || name[end] == '/');
    if (hit == std::string::npos || !scopeStart || !wholeScope) {
      size_t stop = hit == std::string::npos ? name.size() : hit + 1;
      out.folded += name.substr(at, stop - at);
      at = stop;
      continue;
    }
    out.folded += name.substr(at, hit - at) + kScope + "*";
    if (out.layer < 0) out.layer = std::stoll(name.substr(digits, end - digits));
    at = end;
  }
  return out;
}

}  // namespace tpusim::prof
