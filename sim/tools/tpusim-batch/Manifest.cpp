#include "sim/tools/tpusim-batch/Manifest.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "isa/target/JsonLocator.h"
#include "kernels/lib/Registry.h"

namespace tpusim::batch {
namespace fs = std::filesystem;
// Ordered: grid axes and "set" objects keep the order written (case names follow it).
using json = nlohmann::ordered_json;

const Case* Manifest::find(const std::string& name) const {
  for (const Case& c : cases)
    if (c.name == name) return &c;
  return nullptr;
}

namespace {

const char* typeName(const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

// Reads one manifest; every error names the file and the JSON path (RFC 6901
// pointer) of what is wrong.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {
    dir_ = fs::path(path_).parent_path();
  }

  [[noreturn]] void fail(const std::string& at, const std::string& what) const {
    throw ManifestError(fmt::format("{}: {}: {}", path_, at.empty() ? "/" : at, what));
  }

  void expectKeys(const json& j, const std::string& at, std::initializer_list<const char*> keys) {
    if (!j.is_object()) fail(at, fmt::format("expected an object, got {}", typeName(j)));
    for (const auto& [k, v] : j.items()) {
      bool known = false;
      for (const char* key : keys) known = known || k == key;
      if (known) continue;
      std::string list;
      for (const char* key : keys) list += fmt::format("{}{}", list.empty() ? "" : ", ", key);
      fail(at + "/" + k, fmt::format("unknown field (known here: {})", list));
    }
  }

  std::string string(const json& j, const std::string& at) const {
    if (!j.is_string()) fail(at, fmt::format("expected a string, got {}", typeName(j)));
    std::string s = j.get<std::string>();
    if (s.empty()) fail(at, "must not be empty");
    return s;
  }

  // A scalar given as text: strings as they are, numbers and booleans printed.
  std::string scalarText(const json& j, const std::string& at) const {
    if (j.is_string()) return string(j, at);
    if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
    if (j.is_number_integer() || j.is_number_unsigned()) return j.dump();
    if (j.is_number_float()) {
      double v = j.get<double>();
      if (v == double(int64_t(v))) return std::to_string(int64_t(v));
      return fmt::format("{}", v);
    }
    fail(at, fmt::format("expected a string, number or boolean, got {}", typeName(j)));
  }

  std::vector<std::string> stringList(const json& j, const std::string& at) const {
    if (!j.is_array()) fail(at, fmt::format("expected an array, got {}", typeName(j)));
    if (j.empty()) fail(at, "must not be empty");
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(string(j[i], at + "/" + std::to_string(i)));
    return out;
  }

  // A relative bound: a number (0.02) or a percentage ("2%").
  double bound(const json& j, const std::string& at) const {
    double v = 0;
    if (j.is_number()) {
      v = j.get<double>();
    } else if (j.is_string() && !j.get<std::string>().empty() &&
               j.get<std::string>().back() == '%') {
      std::string s = j.get<std::string>();
      std::istringstream in(s.substr(0, s.size() - 1));
      if (!(in >> v) || !in.eof()) fail(at, fmt::format("'{}' is not a percentage", s));
      v /= 100;
    } else {
      fail(at, fmt::format("expected a relative bound (0.02 or \"2%\"), got {}", typeName(j)));
    }
    if (!(v >= 0 && v <= 10)) fail(at, "a tolerance must be between 0 and 1000%");
    return v;
  }

  Tolerance tolerance(const json& j, const std::string& at, Tolerance base) const {
    if (!j.is_object()) {
      base.all = bound(j, at);
      base.byMetric.clear();
      return base;
    }
    for (const auto& [k, v] : j.items()) {
      if (k == "all") {
        base.all = bound(v, at + "/all");
        continue;
      }
      bool known = false;
      for (const char* m : kMetrics) known = known || k == m;
      if (!known) {
        std::string list = "all";
        for (const char* m : kMetrics) list += fmt::format(", {}", m);
        fail(at + "/" + k, fmt::format("unknown metric (known: {})", list));
      }
      base.byMetric[k] = bound(v, at + "/" + k);
    }
    return base;
  }

  std::string mode(const json& j, const std::string& at) const {
    std::string m = string(j, at);
    if (m != "timing" && m != "functional")
      fail(at, fmt::format("mode '{}': expected timing or functional", m));
    return m;
  }

  int64_t maxCycles(const json& j, const std::string& at) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0)
      fail(at, "expected a cycle count >= 0 (0: no limit)");
    return j.get<int64_t>();
  }

  // "set": ["key=value", ...] or {"key": value, ...}.
  std::vector<std::string> sets(const json& j, const std::string& at) const {
    std::vector<std::string> out;
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) out.push_back(k + "=" + scalarText(v, at + "/" + k));
      return out;
    }
    if (!j.is_array())
      fail(at, fmt::format("expected an array of \"key=value\" or an object, got {}", typeName(j)));
    for (size_t i = 0; i < j.size(); ++i) {
      std::string s = string(j[i], at + "/" + std::to_string(i));
      if (s.find('=') == std::string::npos || s.front() == '=')
        fail(at + "/" + std::to_string(i), fmt::format("'{}': expected key=value", s));
      out.push_back(s);
    }
    return out;
  }

  std::string programPath(const std::string& written, const std::string& at) const {
    fs::path p = fs::path(written).is_absolute() ? fs::path(written) : dir_ / written;
    p = p.lexically_normal();
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
      fail(at, fmt::format("program '{}' not found ({})", written, p.string()));
    std::string ext = p.extension().string();
    if (ext != ".hlo" && ext != ".s" && ext != ".tpuprog")
      fail(at, fmt::format("program '{}': expected a .hlo, .s or .tpuprog file", written));
    return p.string();
  }

  std::string chip(const std::string& written, const std::string& at) const {
    bool isPath = written.find('/') != std::string::npos ||
                  (written.size() > 5 && written.substr(written.size() - 5) == ".json");
    if (!isPath) return written;
    fs::path p = fs::path(written).is_absolute() ? fs::path(written) : dir_ / written;
    return p.lexically_normal().string();
  }

  // Kernel name and parameters; the label is kernel(name=value,...).
  void kernel(const json& j, const std::string& at, Case& c) const {
    c.kernel = string(j.at("kernel"), at + "/kernel");
    try {
      kernels::lib::findKernel(c.kernel);
    } catch (const std::exception& e) {
      fail(at + "/kernel", e.what());
    }
    if (j.contains("params")) {
      const json& p = j.at("params");
      if (!p.is_object())
        fail(at + "/params", fmt::format("expected an object, got {}", typeName(p)));
      for (const auto& [k, v] : p.items()) c.params[k] = scalarText(v, at + "/params/" + k);
    }
    std::string label = c.kernel + "(";
    bool first = true;
    for (const auto& [k, v] : c.params) {
      label += fmt::format("{}{}={}", first ? "" : ",", k, v);
      first = false;
    }
    c.programLabel = label + ")";
  }

  // Checks what can be checked before running: the chip with its overrides, the
  // kernel parameters.
  void validate(const Case& c, const std::string& at) const {
    try {
      target::loadChip(c.chip, c.sets);
    } catch (const std::exception& e) {
      fail(at, fmt::format("case '{}': {}", c.name, e.what()));
    }
    if (!c.kernel.empty()) {
      try {
        kernels::lib::buildKernel(c.kernel, c.params);
      } catch (const std::exception& e) {
        fail(at, fmt::format("case '{}': kernel {}: {}", c.name, c.kernel, e.what()));
      }
    }
  }

  static std::string stem(const std::string& written) { return fs::path(written).stem().string(); }

  static std::string autoName(const std::string& label, const std::string& chipWritten,
                              const std::vector<std::string>& sets) {
    std::string name = label + "/" + fs::path(chipWritten).stem().string();
    for (const std::string& s : sets) name += "/" + s;
    return name;
  }

  struct Defaults {
    std::string chip;
    std::string mode = "timing";
    int64_t maxCycles = 0;
    Tolerance tolerance;
  };

  Defaults defaults(const json& j, const std::string& at) {
    Defaults d;
    expectKeys(j, at, {"chip", "mode", "max_cycles", "tolerance"});
    if (j.contains("chip")) d.chip = string(j["chip"], at + "/chip");
    if (j.contains("mode")) d.mode = mode(j["mode"], at + "/mode");
    if (j.contains("max_cycles")) d.maxCycles = maxCycles(j["max_cycles"], at + "/max_cycles");
    if (j.contains("tolerance")) d.tolerance = tolerance(j["tolerance"], at + "/tolerance", {});
    return d;
  }

  void common(const json& j, const std::string& at, const Defaults& d, Case& c) const {
    c.mode = j.contains("mode") ? mode(j["mode"], at + "/mode") : d.mode;
    c.maxCycles =
        j.contains("max_cycles") ? maxCycles(j["max_cycles"], at + "/max_cycles") : d.maxCycles;
    c.tolerance = j.contains("tolerance")
                      ? tolerance(j["tolerance"], at + "/tolerance", d.tolerance)
                      : d.tolerance;
  }

  Case oneCase(const json& j, const std::string& at, const Defaults& d) {
    expectKeys(j, at,
               {"name", "program", "kernel", "params", "chip", "set", "mode", "max_cycles",
                "tolerance", "expect_fault"});
    Case c;
    c.origin = at;
    bool hasProgram = j.contains("program"), hasKernel = j.contains("kernel");
    if (hasProgram == hasKernel) fail(at, "a case needs exactly one of \"program\" and \"kernel\"");
    std::string label;
    if (hasProgram) {
      if (j.contains("params")) fail(at + "/params", "parameters belong to a \"kernel\" case");
      std::string written = string(j["program"], at + "/program");
      c.program = programPath(written, at + "/program");
      c.programLabel = written;
      label = stem(written);
    } else {
      kernel(j, at, c);
      label = c.programLabel;
    }
    std::string chipWritten = j.contains("chip") ? string(j["chip"], at + "/chip") : d.chip;
    if (chipWritten.empty()) fail(at, "no \"chip\" (and no \"defaults\": {\"chip\": ...})");
    c.chip = chip(chipWritten, at + "/chip");
    if (j.contains("set")) c.sets = sets(j["set"], at + "/set");
    common(j, at, d, c);
    if (j.contains("expect_fault")) {
      const json& f = j["expect_fault"];
      std::string fat = at + "/expect_fault";
      expectKeys(f, fat, {"kind", "reason"});
      if (!f.contains("kind")) fail(fat, "missing \"kind\" (the fault kind, as tpusim reports it)");
      if (!f.contains("reason"))
        fail(fat, "missing \"reason\": say why this case exists to show a fault");
      c.expectFault = string(f["kind"], fat + "/kind");
      c.faultReason = string(f["reason"], fat + "/reason");
    }
    c.name =
        j.contains("name") ? string(j["name"], at + "/name") : autoName(label, chipWritten, c.sets);
    return c;
  }

  // A grid: (programs + kernels) x chips x the cartesian product of the
  // override values, in that nesting order (the last override varies fastest).
  std::vector<Case> grid(const json& j, const std::string& at, const Defaults& d) {
    expectKeys(j, at,
               {"name", "programs", "kernels", "chips", "set", "mode", "max_cycles", "tolerance"});
    if (!j.contains("name")) fail(at, "a grid needs a \"name\" (the prefix of its case names)");
    std::string gridName = string(j["name"], at + "/name");
    struct Item {
      Case base;
      std::string label;
    };
    std::vector<Item> items;
    if (j.contains("programs")) {
      std::vector<std::string> progs = stringList(j["programs"], at + "/programs");
      for (size_t i = 0; i < progs.size(); ++i) {
        Item it;
        it.base.program = programPath(progs[i], at + "/programs/" + std::to_string(i));
        it.base.programLabel = progs[i];
        it.label = stem(progs[i]);
        items.push_back(it);
      }
    }
    if (j.contains("kernels")) {
      const json& ks = j["kernels"];
      if (!ks.is_array() || ks.empty()) fail(at + "/kernels", "expected a non-empty array");
      for (size_t i = 0; i < ks.size(); ++i) {
        std::string kat = at + "/kernels/" + std::to_string(i);
        expectKeys(ks[i], kat, {"kernel", "params", "name"});
        if (!ks[i].contains("kernel")) fail(kat, "missing \"kernel\"");
        Item it;
        kernel(ks[i], kat, it.base);
        it.label =
            ks[i].contains("name") ? string(ks[i]["name"], kat + "/name") : it.base.programLabel;
        items.push_back(it);
      }
    }
    if (items.empty()) fail(at, "a grid needs \"programs\" or \"kernels\"");
    std::vector<std::string> chips;
    if (j.contains("chips"))
      chips = stringList(j["chips"], at + "/chips");
    else if (!d.chip.empty())
      chips = {d.chip};
    else
      fail(at, "no \"chips\" (and no \"defaults\": {\"chip\": ...})");
    // Override axes: key -> values, in the order written.
    std::vector<std::pair<std::string, std::vector<std::string>>> axes;
    if (j.contains("set")) {
      const json& s = j["set"];
      if (!s.is_object()) fail(at + "/set", "expected an object: {\"key\": [value, ...]}");
      for (const auto& [k, v] : s.items()) {
        std::string kat = at + "/set/" + k;
        std::vector<std::string> values;
        if (v.is_array()) {
          if (v.empty()) fail(kat, "must not be empty");
          for (size_t i = 0; i < v.size(); ++i)
            values.push_back(scalarText(v[i], kat + "/" + std::to_string(i)));
        } else {
          values.push_back(scalarText(v, kat));
        }
        axes.emplace_back(k, values);
      }
    }
    std::vector<std::vector<std::string>> combos = {{}};
    for (const auto& [k, values] : axes) {
      std::vector<std::vector<std::string>> next;
      for (const auto& combo : combos)
        for (const std::string& v : values) {
          next.push_back(combo);
          next.back().push_back(k + "=" + v);
        }
      combos = std::move(next);
    }
    std::vector<Case> out;
    for (const Item& it : items)
      for (const std::string& chipWritten : chips)
        for (const auto& combo : combos) {
          Case c = it.base;
          c.origin = at;
          c.chip = chip(chipWritten, at + "/chips");
          c.sets = combo;
          common(j, at, d, c);
          c.name = gridName + "/" + autoName(it.label, chipWritten, combo);
          out.push_back(c);
        }
    return out;
  }

  Manifest read(const std::string& text) {
    json j;
    try {
      j = json::parse(text);
    } catch (const json::parse_error& e) {
      target::TextPos pos = target::JsonLocator::posOfByte(text, e.byte);
      std::string msg = e.what();
      if (size_t p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
      throw ManifestError(fmt::format("{}:{}:{}: invalid JSON: {}", path_, pos.line, pos.col, msg));
    }
    target::JsonLocator locator(text);
    for (const auto& dup : locator.duplicates())
      throw ManifestError(fmt::format("{}:{}:{}: '{}' is given twice (first at line {})", path_,
                                      dup.again.line, dup.again.col, dup.path, dup.first.line));
    expectKeys(j, "", {"description", "golden", "defaults", "cases", "grids"});
    Manifest m;
    m.path = path_;
    if (j.contains("description")) m.description = string(j["description"], "/description");
    fs::path golden = fs::path(path_).replace_extension("").string() + ".golden.json";
    if (j.contains("golden")) golden = dir_ / string(j["golden"], "/golden");
    m.goldenPath = golden.lexically_normal().string();
    if (fs::path(m.goldenPath) == fs::path(path_).lexically_normal())
      fail("/golden", "the golden file must not be the manifest itself");
    Defaults d;
    if (j.contains("defaults")) d = defaults(j["defaults"], "/defaults");
    if (j.contains("cases")) {
      const json& cs = j["cases"];
      if (!cs.is_array()) fail("/cases", fmt::format("expected an array, got {}", typeName(cs)));
      for (size_t i = 0; i < cs.size(); ++i)
        m.cases.push_back(oneCase(cs[i], "/cases/" + std::to_string(i), d));
    }
    if (j.contains("grids")) {
      const json& gs = j["grids"];
      if (!gs.is_array()) fail("/grids", fmt::format("expected an array, got {}", typeName(gs)));
      for (size_t i = 0; i < gs.size(); ++i)
        for (Case& c : grid(gs[i], "/grids/" + std::to_string(i), d))
          m.cases.push_back(std::move(c));
    }
    if (m.cases.empty()) fail("", "no cases: give \"cases\" or \"grids\"");
    std::map<std::string, std::string> seen;
    for (const Case& c : m.cases) {
      auto [it, fresh] = seen.emplace(c.name, c.origin);
      if (!fresh)
        fail(c.origin,
             fmt::format("case name '{}' is also the name of a case from {}; give one a \"name\"",
                         c.name, it->second));
    }
    for (const Case& c : m.cases) validate(c, c.origin);
    return m;
  }

 private:
  std::string path_;
  fs::path dir_;
};

}  // namespace

Manifest parseManifest(const std::string& text, const std::string& path) {
  return Reader(path).read(text);
}

Manifest loadManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ManifestError(fmt::format("{}: cannot open the manifest", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parseManifest(ss.str(), path);
}

}  // namespace tpusim::batch
