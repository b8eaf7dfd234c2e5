#include "isa/target/FieldList.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace tpusim::target {
namespace {

class Lister {
 public:
  explicit Lister(std::vector<FieldInfo>& out) : out_(out) {}

  template <class S>
  void section(const std::string& key, S& sub) {
    std::string saved = prefix_;
    prefix_ += key + ".";
    sub.visit(*this);
    prefix_ = saved;
  }
  void field(const std::string& key, int64_t& x, const std::string& unit, const std::string& doc,
             double min, double max) {
    add(key, FieldType::Int, unit, doc, {min, max}, std::to_string(x));
  }
  void field(const std::string& key, double& x, const std::string& unit, const std::string& doc,
             double min, double max) {
    add(key, FieldType::Double, unit, doc, {min, max}, formatDouble(x));
  }
  void field(const std::string& key, bool& x, const std::string& unit, const std::string& doc) {
    add(key, FieldType::Bool, unit, doc, {}, x ? "true" : "false");
  }
  void field(const std::string& key, std::string& x, const std::string& unit,
             const std::string& doc) {
    add(key, FieldType::String, unit, doc, {}, "\"" + x + "\"");
  }

 private:
  void add(const std::string& key, FieldType t, const std::string& unit, const std::string& doc,
           Range r, std::string value) {
    out_.push_back({prefix_ + key, t, unit, doc, r, std::move(value)});
  }
  std::vector<FieldInfo>& out_;
  std::string prefix_;
};

}  // namespace

const char* fieldTypeName(FieldType t) {
  switch (t) {
    case FieldType::Int:
      return "integer";
    case FieldType::Double:
      return "number";
    case FieldType::Bool:
      return "boolean";
    case FieldType::String:
      return "string";
  }
  return "?";
}

std::vector<FieldInfo> listFields(const ChipConfig& chip) {
  std::vector<FieldInfo> out;
  ChipConfig copy = chip;  // visit() takes non-const references
  Lister lister(out);
  copy.visit(lister);
  return out;
}

bool sameConfig(const ChipConfig& a, const ChipConfig& b, std::string* difference) {
  auto differ = [&](const std::string& what) {
    if (difference) *difference = what;
    return false;
  };
  if (a.name != b.name) return differ("name");
  if (a.description != b.description) return differ("description");
  if (a.test_preset != b.test_preset) return differ("test_preset");
  std::vector<FieldInfo> fa = listFields(a), fb = listFields(b);
  if (fa.size() != fb.size()) return differ("number of fields");
  for (size_t i = 0; i < fa.size(); ++i)
    if (fa[i].value != fb[i].value)
      return differ(fmt::format("{}: {} vs {}", fa[i].path, fa[i].value, fb[i].value));
  if (a.sources != b.sources) return differ("sources");
  return true;
}

namespace {

// Edit distance counting an adjacent transposition as one edit ("tRDC" is one
// edit from "tRCD"), case-insensitive.
size_t editDistance(const std::string& a, const std::string& b) {
  auto same = [](char x, char y) { return std::tolower(x) == std::tolower(y); };
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closestName(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t bestDist = std::max<size_t>(2, name.size() / 3) + 1;  // suggest only close names
  for (const std::string& k : known) {
    size_t d = editDistance(name, k);
    if (d < bestDist) {
      bestDist = d;
      best = k;
    }
  }
  return best;
}

std::string formatDouble(double x) {
  // Integral values print without exponent or fraction, the rest with the
  // shortest round-trip representation.
  if (std::isfinite(x) && std::fabs(x) < 1e18 && x == std::floor(x))
    return fmt::format("{}", static_cast<int64_t>(x));
  return fmt::format("{}", x);
}

}  // namespace tpusim::target
