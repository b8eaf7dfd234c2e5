#include "isa/support/MarkupEscape.h"

namespace tpusim::support {

std::string escapeMarkup(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";  // valid in both HTML and XML (&apos; is not HTML 4)
        break;
      default:
        if (static_cast<unsigned char>(ch) >= 0x20 || ch == '\n' || ch == '\t' || ch == '\r')
          out += ch;
    }
  }
  return out;
}

}  // namespace tpusim::support
