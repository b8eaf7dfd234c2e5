#include "isa/target/ChipJson.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "isa/support/JsonText.h"
#include "isa/target/ConfigError.h"
#include "isa/target/FieldList.h"
#include "isa/target/JsonLocator.h"

namespace tpusim::target {
namespace {

using json = nlohmann::json;

const char* const kMetaKeys[] = {"name",    "description", "test_preset",
                                 "extends", "sources",     "derived"};

std::string describeJson(const json& j) {
  std::string dumped = j.dump();
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  return fmt::format("{} {}", j.type_name(), dumped);
}

// Shared state of one read: where errors go and how to locate them.
struct ReadContext {
  const ChipSource& src;
  JsonLocator locator;
  bool requireAll;
  std::vector<std::string> errors;
  std::set<std::string> setPaths;  // fields this file gives a value

  ReadContext(const ChipSource& s, bool all) : src(s), locator(s.text), requireAll(all) {}

  void error(const std::string& path, const std::string& message) {
    TextPos pos = locator.find(path);
    if (pos.line > 0)
      errors.push_back(
          fmt::format("{}:{}:{}: error: {}: {}", src.file, pos.line, pos.col, path, message));
    else
      errors.push_back(fmt::format("{}: error: {}: {}", src.file, path, message));
  }
};

std::string rangeText(double min, double max) {
  return fmt::format("[{}, {}]", formatDouble(min), formatDouble(max));
}

// The reading visitor: one instance per JSON object (section).
class Reader {
 public:
  Reader(const json& obj, ReadContext& ctx, std::string prefix)
      : obj_(obj), ctx_(ctx), prefix_(std::move(prefix)) {}

  template <class S>
  void section(const std::string& key, S& sub) {
    known_.push_back(key);
    std::string path = prefix_ + key;
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (ctx_.requireAll)
        ctx_.error(path, "missing section (a preset without \"extends\" lists every field)");
      return;
    }
    if (!it->is_object()) {
      ctx_.error(path, fmt::format("expected an object, got {}", describeJson(*it)));
      return;
    }
    Reader inner(*it, ctx_, path + ".");
    sub.visit(inner);
    inner.reportUnknownKeys();
  }

  void field(const std::string& key, int64_t& x, const std::string& unit, const std::string&,
             double min, double max) {
    const json* j = take(key);
    if (!j) return;
    std::string path = prefix_ + key;
    if (!j->is_number_integer()) {  // true for signed and unsigned integers
      ctx_.error(path, fmt::format("expected an integer ({}), got {}", unit, describeJson(*j)));
      return;
    }
    if (j->is_number_unsigned() && j->get<uint64_t>() > uint64_t(INT64_MAX)) {
      ctx_.error(path,
                 fmt::format("{} is out of range {} ({})", j->dump(), rangeText(min, max), unit));
      return;
    }
    int64_t v = j->get<int64_t>();
    if (!inRange(double(v), min, max)) {
      ctx_.error(path, fmt::format("{} is out of range {} ({})", v, rangeText(min, max), unit));
      return;
    }
    x = v;
    ctx_.setPaths.insert(path);
  }
  void field(const std::string& key, double& x, const std::string& unit, const std::string&,
             double min, double max) {
    const json* j = take(key);
    if (!j) return;
    std::string path = prefix_ + key;
    if (!j->is_number()) {
      ctx_.error(path, fmt::format("expected a number ({}), got {}", unit, describeJson(*j)));
      return;
    }
    double v = j->get<double>();
    if (!inRange(v, min, max)) {
      ctx_.error(path, fmt::format("{} is out of range {} ({})", formatDouble(v),
                                   rangeText(min, max), unit));
      return;
    }
    x = v;
    ctx_.setPaths.insert(path);
  }
  void field(const std::string& key, bool& x, const std::string&, const std::string&) {
    const json* j = take(key);
    if (!j) return;
    if (!j->is_boolean()) {
      ctx_.error(prefix_ + key, fmt::format("expected true or false, got {}", describeJson(*j)));
      return;
    }
    x = j->get<bool>();
    ctx_.setPaths.insert(prefix_ + key);
  }
  void field(const std::string& key, std::string& x, const std::string&, const std::string&) {
    const json* j = take(key);
    if (!j) return;
    if (!j->is_string()) {
      ctx_.error(prefix_ + key, fmt::format("expected a string, got {}", describeJson(*j)));
      return;
    }
    x = j->get<std::string>();
    ctx_.setPaths.insert(prefix_ + key);
  }

  // Keys of this object that no visited field or section claimed.
  void reportUnknownKeys(const std::vector<std::string>& extraKnown = {}) {
    std::vector<std::string> known = known_;
    known.insert(known.end(), extraKnown.begin(), extraKnown.end());
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) != known.end()) continue;
      std::string hint = closestName(it.key(), known);
      ctx_.error(prefix_ + it.key(),
                 hint.empty() ? std::string("unknown field")
                              : fmt::format("unknown field (did you mean '{}{}'?)", prefix_, hint));
    }
  }

 private:
  static bool inRange(double v, double min, double max) {
    return min > max || (v >= min && v <= max);
  }
  const json* take(const std::string& key) {
    known_.push_back(key);
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (ctx_.requireAll)
        ctx_.error(prefix_ + key, "missing field (a preset without \"extends\" lists every field)");
      return nullptr;
    }
    return &*it;
  }

  const json& obj_;
  ReadContext& ctx_;
  std::string prefix_;
  std::vector<std::string> known_;
};

std::string stemOf(const std::string& file) {
  size_t slash = file.find_last_of('/');
  std::string base = slash == std::string::npos ? file : file.substr(slash + 1);
  size_t dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Reads a string-valued metadata key; records an error on a wrong type.
bool readMetaString(const json& doc, const char* key, ReadContext& ctx, std::string* out) {
  auto it = doc.find(key);
  if (it == doc.end()) return false;
  if (!it->is_string()) {
    ctx.error(key, fmt::format("expected a string, got {}", describeJson(*it)));
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

void readSources(const json& doc, ChipConfig& chip, ReadContext& ctx, bool extends) {
  std::vector<FieldInfo> fields = listFields(chip);
  std::vector<std::string> paths;
  for (const FieldInfo& f : fields) paths.push_back(f.path);

  auto it = doc.find("sources");
  std::map<std::string, std::string> given;
  if (it != doc.end()) {
    if (!it->is_object()) {
      ctx.error("sources", fmt::format("expected an object, got {}", describeJson(*it)));
      return;
    }
    for (auto s = it->begin(); s != it->end(); ++s) {
      std::string at = "sources." + s.key();
      if (std::find(paths.begin(), paths.end(), s.key()) == paths.end()) {
        std::string hint = closestName(s.key(), paths);
        ctx.error(at, hint.empty() ? "names no field"
                                   : fmt::format("names no field (did you mean '{}'?)", hint));
        continue;
      }
      if (!s->is_string()) {
        ctx.error(at, fmt::format("expected a string, got {}", describeJson(*s)));
        continue;
      }
      std::string why;
      if (!isValidSourceEntry(s->get<std::string>(), chip.test_preset, &why)) {
        ctx.error(at, why);
        continue;
      }
      given[s.key()] = s->get<std::string>();
    }
  }
  if (!extends) {
    chip.sources.clear();
    for (const std::string& p : paths) {
      auto g = given.find(p);
      if (g == given.end())
        ctx.error(p, "has no \"sources\" entry (name the source, or \"assumption: <why>\")");
      else
        chip.sources[p] = g->second;
    }
    return;
  }
  // An extending file keeps the base's sources and records its own changes.
  for (const std::string& p : ctx.setPaths) {
    auto g = given.find(p);
    chip.sources[p] = g != given.end() ? g->second : "override: " + ctx.src.file;
  }
  for (const auto& [p, s] : given)
    if (!ctx.setPaths.count(p)) chip.sources[p] = s;
}

}  // namespace

bool isValidSourceEntry(const std::string& entry, bool testPreset, std::string* why) {
  static const char* const kCitations[] = {"GC", "SB", "JI", "HC20", "ISCA17", "PALLAS"};
  static const char* const kKinds[] = {"derived:", "assumption:", "override:", "test preset:"};
  for (const char* c : kCitations) {
    size_t n = std::string(c).size();
    if (entry.compare(0, n, c) == 0 && (entry.size() == n || entry[n] == ' ' || entry[n] == ',' ||
                                        entry[n] == ';' || entry[n] == ':' || entry[n] == '('))
      return true;
  }
  for (const char* k : kKinds) {
    size_t n = std::string(k).size();
    if (entry.compare(0, n, k) != 0) continue;
    if (std::string(k) == "test preset:" && !testPreset) {
      *why = "\"test preset:\" sources are only allowed in presets with \"test_preset\": true";
      return false;
    }
    if (entry.find_first_not_of(' ', n) == std::string::npos) {
      *why = fmt::format("\"{}\" needs a reason after the colon", k);
      return false;
    }
    return true;
  }
  *why = fmt::format(
      "\"{}\" is not a source: start with GC, SB, JI, HC20, ISCA17, PALLAS "
      "(docs/presets.md names them), \"derived: <how>\" or \"assumption: <why>\"",
      entry);
  return false;
}

ChipConfig parseChip(const ChipSource& src, ExtendsResolver resolveExtends, int depth) {
  if (auto bad = support::checkJsonText(src.text))
    throw ConfigError(fmt::format("{}:{}:{}: error: invalid JSON: {}", src.file, bad->line,
                                  bad->col, bad->message));
  json doc;
  try {
    doc = json::parse(src.text);
  } catch (const json::parse_error& e) {
    TextPos pos = JsonLocator::posOfByte(src.text, e.byte);
    std::string what = e.what();
    size_t colon = what.find("syntax error");
    throw ConfigError(fmt::format("{}:{}:{}: error: invalid JSON: {}", src.file, pos.line, pos.col,
                                  colon == std::string::npos ? what : what.substr(colon)));
  } catch (const json::exception& e) {
    // Limits checkJsonText does not know of; no position from the library.
    throw ConfigError(fmt::format("{}: error: invalid JSON: {}", src.file, e.what()));
  }
  if (!doc.is_object())
    throw ConfigError(fmt::format("{}: error: a chip description is a JSON object, got {}",
                                  src.file, doc.type_name()));

  bool extends = doc.contains("extends");
  ReadContext ctx(src, !extends);
  ChipConfig chip;
  std::string baseName;
  if (extends) {
    if (!readMetaString(doc, "extends", ctx, &baseName)) {
      // wrong type already reported
    } else if (!resolveExtends) {
      ctx.error("extends", "not supported here (the chip text has no file to resolve it from)");
    } else {
      chip = resolveExtends(baseName, src.file, depth + 1);
      chip.name = stemOf(src.file);
    }
  }
  if (!readMetaString(doc, "name", ctx, &chip.name) && !extends)
    ctx.error("name", "missing (every preset names its chip)");
  readMetaString(doc, "description", ctx, &chip.description);
  if (auto it = doc.find("test_preset"); it != doc.end()) {
    if (it->is_boolean())
      chip.test_preset = it->get<bool>();
    else
      ctx.error("test_preset", fmt::format("expected true or false, got {}", describeJson(*it)));
  }

  for (const JsonLocator::Duplicate& d : ctx.locator.duplicates())
    ctx.errors.push_back(fmt::format("{}:{}:{}: error: {}: given twice (first at line {})",
                                     src.file, d.again.line, d.again.col, d.path, d.first.line));
  Reader top(doc, ctx, "");
  chip.visit(top);
  top.reportUnknownKeys(std::vector<std::string>(std::begin(kMetaKeys), std::end(kMetaKeys)));
  readSources(doc, chip, ctx, extends);

  if (ctx.errors.empty()) {
    ConfigProblems problems;
    chip.check(problems);
    for (const auto& [path, message] : problems.list) ctx.error(path, message);
  }
  if (!ctx.errors.empty()) {
    std::string all;
    for (const std::string& e : ctx.errors) all += (all.empty() ? "" : "\n") + e;
    throw ConfigError(all);
  }
  return chip;
}

namespace {

class Writer {
 public:
  explicit Writer(nlohmann::ordered_json& out) : out_(out) {}
  template <class S>
  void section(const std::string& key, S& sub) {
    nlohmann::ordered_json inner = nlohmann::ordered_json::object();
    Writer w(inner);
    sub.visit(w);
    out_[key] = std::move(inner);
  }
  void field(const std::string& key, int64_t& x, const std::string&, const std::string&, double,
             double) {
    out_[key] = x;
  }
  void field(const std::string& key, double& x, const std::string&, const std::string&, double,
             double) {
    // Integral doubles (clock rates) are written without a fraction, like the presets.
    if (formatDouble(x).find_first_of(".e") == std::string::npos)
      out_[key] = static_cast<int64_t>(x);
    else
      out_[key] = x;
  }
  void field(const std::string& key, bool& x, const std::string&, const std::string&) {
    out_[key] = x;
  }
  void field(const std::string& key, std::string& x, const std::string&, const std::string&) {
    out_[key] = x;
  }

 private:
  nlohmann::ordered_json& out_;
};

}  // namespace

nlohmann::ordered_json chipToJson(const ChipConfig& chip, const WriteOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["name"] = chip.name;
  out["description"] = chip.description;
  out["test_preset"] = chip.test_preset;
  ChipConfig copy = chip;
  Writer w(out);
  copy.visit(w);
  if (options.derived) {
    nlohmann::ordered_json d = nlohmann::ordered_json::object();
    d["peak_flops_bf16"] = chip.peakFlopsBf16();
    d["peak_ops_int8"] = chip.peakOpsInt8();
    d["hbm_peak_bytes_per_second"] = chip.hbmPeakBytesPerSecond();
    d["ici_peak_bytes_per_second"] = chip.iciPeakBytesPerSecond();
    d["macs_per_cycle"] = chip.macsPerCycle();
    out["derived"] = std::move(d);
  }
  if (options.sources) {
    nlohmann::ordered_json s = nlohmann::ordered_json::object();
    for (const FieldInfo& f : listFields(chip)) {
      auto it = chip.sources.find(f.path);
      if (it != chip.sources.end()) s[f.path] = it->second;
    }
    out["sources"] = std::move(s);
  }
  return out;
}

std::string chipToJsonText(const ChipConfig& chip, const WriteOptions& options, int indent) {
  return chipToJson(chip, options).dump(indent);
}

}  // namespace tpusim::target
