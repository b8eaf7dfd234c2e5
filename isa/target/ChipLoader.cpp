#include "isa/target/ChipLoader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "isa/support/InputFile.h"
#include "isa/target/ChipJson.h"
#include "isa/target/ConfigError.h"
#include "isa/target/FieldList.h"

#ifndef TPUSIM_CHIPS_SOURCE_DIR
#error "TPUSIM_CHIPS_SOURCE_DIR must name the source tree's sim/chips (set by CMake)"
#endif

namespace tpusim::target {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxExtendsDepth = 8;

bool looksLikePath(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

// Presets are a few KB; anything near this bound is not one.
constexpr uint64_t kMaxChipFileBytes = uint64_t(16) << 20;

std::string readFile(const std::string& path) {
  std::string text;
  if (auto problem = support::readInputFile(path, &text, kMaxChipFileBytes))
    throw ConfigError(fmt::format("{}: error: chip file: {}", path, *problem));
  return text;
}

ChipConfig loadFile(const std::string& path, int depth);

ChipConfig resolveBase(const std::string& name, const std::string& fromFile, int depth) {
  if (depth > kMaxExtendsDepth)
    throw ConfigError(
        fmt::format("{}: error: extends: more than {} levels of \"extends\" (a cycle?)", fromFile,
                    kMaxExtendsDepth));
  std::string dir = fs::path(fromFile).parent_path().string();
  return loadFile(resolveChipPath(name, dir), depth);
}

ChipConfig loadFile(const std::string& path, int depth) {
  return parseChip({readFile(path), path}, &resolveBase, depth);
}

}  // namespace

ChipConfig parseChipText(const std::string& text, const std::string& file) {
  return parseChip({text, file}, &resolveBase, 0);
}

namespace {

// The visitor behind --set: finds one field by path and parses a value into it.
class Setter {
 public:
  Setter(std::string path, std::string value) : path_(std::move(path)), value_(std::move(value)) {}
  bool found = false;

  template <class S>
  void section(const std::string& key, S& sub) {
    std::string saved = prefix_;
    prefix_ += key + ".";
    if (path_.compare(0, prefix_.size(), prefix_) == 0) sub.visit(*this);
    prefix_ = saved;
  }
  void field(const std::string& key, int64_t& x, const std::string& unit, const std::string&,
             double min, double max) {
    if (!match(key)) return;
    int64_t v = 0;
    const char* end = value_.data() + value_.size();
    auto [ptr, ec] = std::from_chars(value_.data(), end, v);
    // Byte counts may carry a binary suffix: 64Mi, 16GiB.
    int shift = unit == "bytes" ? binaryShift(std::string(ptr, end)) : -1;
    if (value_.empty() || ec != std::errc() || (ptr != end && shift < 0))
      fail(fmt::format("expected an integer ({}{}), got \"{}\"", unit,
                       unit == "bytes" ? ", optionally with Ki, Mi, Gi or Ti" : "", value_));
    if (ptr != end) {
      if (v < 0 || v > (INT64_MAX >> shift))
        fail(fmt::format("{} does not fit in 64 bits", value_));
      v <<= shift;
    }
    checkRange(double(v), min, max, unit);
    x = v;
  }
  void field(const std::string& key, double& x, const std::string& unit, const std::string&,
             double min, double max) {
    if (!match(key)) return;
    char* end = nullptr;
    double v = value_.empty() ? 0 : std::strtod(value_.c_str(), &end);
    if (value_.empty() || end != value_.c_str() + value_.size() || !std::isfinite(v))
      fail(fmt::format("expected a number ({}), got \"{}\"", unit, value_));
    checkRange(v, min, max, unit);
    x = v;
  }
  void field(const std::string& key, bool& x, const std::string&, const std::string&) {
    if (!match(key)) return;
    if (value_ == "true" || value_ == "1")
      x = true;
    else if (value_ == "false" || value_ == "0")
      x = false;
    else
      fail(fmt::format("expected true or false, got \"{}\"", value_));
  }
  void field(const std::string& key, std::string& x, const std::string&, const std::string&) {
    if (match(key)) x = value_;
  }

 private:
  // "Ki" / "KiB" -> 10, ... "Ti" -> 40; -1 for anything else.
  static int binaryShift(const std::string& suffix) {
    static const char* const kPrefixes = "KMGT";
    std::string s = suffix;
    if (s.size() == 3 && s[2] == 'B') s.resize(2);
    if (s.size() != 2 || s[1] != 'i') return -1;
    for (int i = 0; i < 4; ++i)
      if (s[0] == kPrefixes[i]) return 10 * (i + 1);
    return -1;
  }
  bool match(const std::string& key) {
    if (prefix_ + key != path_) return false;
    found = true;
    return true;
  }
  void checkRange(double v, double min, double max, const std::string& unit) {
    if (min <= max && (v < min || v > max))
      fail(fmt::format("{} is out of range [{}, {}] ({})", value_, formatDouble(min),
                       formatDouble(max), unit));
  }
  [[noreturn]] void fail(const std::string& message) {
    throw ConfigError(fmt::format("--set {}={}: error: {}: {}", path_, value_, path_, message));
  }
  std::string path_, value_, prefix_;
};

}  // namespace

std::vector<std::string> chipSearchDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TPUSIM_CHIPS_DIR")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t colon = s.find(':', start);
      if (colon == std::string::npos) colon = s.size();
      if (colon > start) dirs.push_back(s.substr(start, colon - start));
      start = colon + 1;
    }
  }
  dirs.push_back(sourceChipsDir());
  return dirs;
}

std::string sourceChipsDir() { return TPUSIM_CHIPS_SOURCE_DIR; }

std::vector<std::string> listPresetsIn(const std::string& dir) {
  std::error_code ec;
  std::vector<std::pair<bool, std::string>> found;  // (test preset, name)
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    bool test = false;
    try {
      test = loadChip(entry.path().string()).test_preset;
    } catch (const ConfigError&) {
      // A broken preset still shows in the list; loading it reports why.
    }
    found.emplace_back(test, entry.path().stem().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& f : found) names.push_back(f.second);
  return names;
}

std::vector<std::string> listPresets() {
  std::vector<std::string> names;
  for (const std::string& dir : chipSearchDirs())
    for (const std::string& n : listPresetsIn(dir))
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

std::string resolveChipPath(const std::string& nameOrPath, const std::string& relativeTo) {
  if (looksLikePath(nameOrPath)) {
    fs::path p(nameOrPath);
    if (p.is_relative() && !relativeTo.empty() && !fs::exists(p)) p = fs::path(relativeTo) / p;
    if (!fs::exists(p))
      throw ConfigError(fmt::format("{}: error: chip file does not exist", nameOrPath));
    return p.string();
  }
  std::vector<std::string> dirs;
  if (!relativeTo.empty()) dirs.push_back(relativeTo);  // "extends" looks beside its file first
  for (const std::string& d : chipSearchDirs()) dirs.push_back(d);
  for (const std::string& d : dirs) {
    fs::path p = fs::path(d) / (nameOrPath + ".json");
    if (fs::exists(p)) return p.string();
  }
  std::string looked;
  for (const std::string& d : dirs) looked += "\n  " + d;
  std::string names;
  for (const std::string& n : listPresets()) names += (names.empty() ? "" : ", ") + n;
  throw ConfigError(
      fmt::format("error: unknown chip '{}' (known presets: {}); looked for {}.json in:{}\n"
                  "(set TPUSIM_CHIPS_DIR to add a directory, or pass a path to a .json file)",
                  nameOrPath, names.empty() ? "none" : names, nameOrPath, looked));
}

ChipConfig loadChip(const std::string& nameOrPath) {
  return loadFile(resolveChipPath(nameOrPath), 0);
}

ChipConfig loadChip(const std::string& nameOrPath, const std::vector<std::string>& overrides) {
  ChipConfig chip = loadChip(nameOrPath);
  applyOverrides(chip, overrides);
  return chip;
}

void applyOverride(ChipConfig& chip, const std::string& assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format(
        "--set {}: error: expected section.field=value (e.g. --set hbm.tRCD=20)", assignment));
  std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  Setter setter(path, value);
  chip.visit(setter);
  if (!setter.found) {
    std::vector<std::string> paths;
    for (const FieldInfo& f : listFields(chip)) paths.push_back(f.path);
    for (const std::string& p : paths)
      if (p.compare(0, path.size() + 1, path + ".") == 0)
        throw ConfigError(fmt::format("--set {}: error: {}: names a section, not a field (e.g. {})",
                                      assignment, path, p));
    std::string best = closestName(path, paths);
    throw ConfigError(fmt::format("--set {}: error: {}: unknown field{}", assignment, path,
                                  best.empty() ? "" : " (did you mean '" + best + "'?)"));
  }
  chip.sources[path] = "override: --set " + assignment;
}

void validateChip(const ChipConfig& chip, const std::string& what) {
  ConfigProblems problems;
  chip.check(problems);
  if (problems.list.empty()) return;
  std::string all;
  for (const auto& [path, message] : problems.list)
    all += (all.empty() ? "" : "\n") + fmt::format("{}: error: {}: {}", what, path, message);
  throw ConfigError(all);
}

void applyOverrides(ChipConfig& chip, const std::vector<std::string>& assignments) {
  for (const std::string& a : assignments) applyOverride(chip, a);
  if (!assignments.empty())
    validateChip(chip, fmt::format("chip '{}' after --set overrides", chip.name));
}

}  // namespace tpusim::target
