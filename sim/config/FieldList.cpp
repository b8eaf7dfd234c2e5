#include "sim/config/FieldList.h"

#include <fmt/format.h>

#include <cmath>

namespace tpusim::sim {
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

std::string formatDouble(double x) {
  // Integral values print without exponent or fraction, the rest with the
  // shortest round-trip representation.
  if (std::isfinite(x) && std::fabs(x) < 1e18 && x == std::floor(x))
    return fmt::format("{}", static_cast<int64_t>(x));
  return fmt::format("{}", x);
}

}  // namespace tpusim::sim
