#include "compiler/lower/TargetDescription.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tpusim::lower {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A chain of "extends" longer than this is reported as a cycle.
constexpr int kMaxExtendsDepth = 16;

bool looksLikePath(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

std::string resolve(const std::string& nameOrPath, const std::string& relativeTo) {
  if (looksLikePath(nameOrPath)) {
    fs::path p(nameOrPath);
    if (p.is_relative() && !relativeTo.empty() && !fs::exists(p)) p = fs::path(relativeTo) / p;
    if (!fs::exists(p))
      throw TargetError(fmt::format("{}: error: chip file does not exist", p.string()));
    return p.string();
  }
  std::vector<std::string> dirs;
  if (!relativeTo.empty()) dirs.push_back(relativeTo);
  for (const std::string& d : targetSearchDirs()) dirs.push_back(d);
  std::string looked;
  for (const std::string& d : dirs) {
    fs::path p = fs::path(d) / (nameOrPath + ".json");
    if (fs::exists(p)) return p.string();
    looked += "\n  " + d;
  }
  throw TargetError(fmt::format(
      "error: unknown chip '{}'; looked for {}.json in:{}\n(set TPUSIM_CHIPS_DIR to add a "
      "directory, or pass a path to a .json file)",
      nameOrPath, nameOrPath, looked));
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TargetError(fmt::format("{}: error: cannot open chip file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Objects merge key by key (the extending file wins); anything else is replaced.
void mergeInto(json& base, const json& over) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.value().is_object() && base.contains(it.key()) && base[it.key()].is_object())
      mergeInto(base[it.key()], it.value());
    else
      base[it.key()] = it.value();
  }
}

json loadMerged(const std::string& text, const std::string& what, const std::string& dir,
                int depth) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw TargetError(fmt::format("{}: error: invalid JSON: {}", what, e.what()));
  }
  if (!doc.is_object())
    throw TargetError(fmt::format("{}: error: a chip preset is a JSON object", what));
  if (!doc.contains("extends")) return doc;
  if (!doc["extends"].is_string())
    throw TargetError(
        fmt::format("{}: error: extends: must be a string (a preset name or path)", what));
  if (depth >= kMaxExtendsDepth)
    throw TargetError(
        fmt::format("{}: error: extends: more than {} levels (a cycle?)", what, kMaxExtendsDepth));
  std::string basePath = resolve(doc["extends"].get<std::string>(), dir);
  json merged = loadMerged(readFile(basePath), basePath, fs::path(basePath).parent_path().string(),
                           depth + 1);
  doc.erase("extends");
  mergeInto(merged, doc);
  return merged;
}

class Reader {
 public:
  Reader(const json& doc, std::string what) : doc_(doc), what_(std::move(what)) {}

  const json& at(const std::string& section, const std::string& key) const {
    std::string path = section + "." + key;
    if (!doc_.contains(section) || !doc_[section].is_object())
      throw TargetError(fmt::format("{}: error: {}: missing section", what_, section));
    const json& s = doc_[section];
    if (!s.contains(key))
      throw TargetError(fmt::format("{}: error: {}: missing field", what_, path));
    return s[key];
  }
  int64_t integer(const std::string& section, const std::string& key, int64_t min) const {
    const json& v = at(section, key);
    if (!v.is_number_integer())
      throw TargetError(fmt::format("{}: error: {}.{}: must be an integer", what_, section, key));
    int64_t x = v.get<int64_t>();
    if (x < min)
      throw TargetError(
          fmt::format("{}: error: {}.{}: {} is below the minimum {}", what_, section, key, x, min));
    return x;
  }
  double number(const std::string& section, const std::string& key) const {
    const json& v = at(section, key);
    if (!v.is_number() || v.get<double>() <= 0)
      throw TargetError(
          fmt::format("{}: error: {}.{}: must be a positive number", what_, section, key));
    return v.get<double>();
  }

 private:
  const json& doc_;
  std::string what_;
};

TargetDescription fromJson(const json& doc, const std::string& what) {
  Reader r(doc, what);
  TargetDescription t;
  if (doc.contains("name") && doc["name"].is_string()) t.name = doc["name"].get<std::string>();
  if (t.name.empty()) throw TargetError(fmt::format("{}: error: name: missing field", what));
  t.cores = r.integer("core", "cores", 1);
  t.clockHz = r.number("core", "clock_hz");
  t.vectorRegs = r.integer("core", "vector_regs", 1);
  t.smemBytes = r.integer("core", "smem_bytes", 1);
  t.vmemBytes = r.integer("vmem", "bytes", 1);
  t.mxuCount = r.integer("mxu", "count", 1);
  t.mxuSize = r.integer("mxu", "size", 1);
  t.int8Rate = r.integer("mxu", "int8_rate", 1);
  t.transcendentalInterval = r.integer("vpu", "transcendental_interval", 1);
  t.hbmBytes = r.integer("hbm", "capacity_bytes", 1);
  double hbmClock = r.number("hbm", "clock_hz");
  int64_t channels = r.integer("hbm", "channels", 1);
  int64_t pseudo = r.integer("hbm", "pseudo_channels", 1);
  int64_t bus = r.integer("hbm", "bus_bytes_per_clock", 1);
  t.hbmBytesPerSecond = hbmClock * static_cast<double>(channels * pseudo * bus);
  return t;
}

}  // namespace

double TargetDescription::peakFlopsPerSecond() const {
  return static_cast<double>(cores * mxuCount * mxuSize * mxuSize) * 2.0 * clockHz;
}

std::string TargetDescription::summary() const {
  return fmt::format(
      "chip {}: {} core(s), {} MXU(s) of {}x{} per core, clock {:.4g} GHz, {} vregs, "
      "VMEM {} bytes, HBM {} bytes at {:.4g} GB/s, peak {:.4g} TFLOP/s (bf16)",
      name, cores, mxuCount, mxuSize, mxuSize, clockHz / 1e9, vectorRegs, vmemBytes, hbmBytes,
      hbmBytesPerSecond / 1e9, peakFlopsPerSecond() / 1e12);
}

std::vector<std::string> targetSearchDirs() {
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
  dirs.push_back(TPUSIM_CHIPS_SOURCE_DIR);
  return dirs;
}

TargetDescription parseTarget(const std::string& jsonText, const std::string& what,
                              const std::string& extendsDir) {
  return fromJson(loadMerged(jsonText, what, extendsDir, 0), what);
}

TargetDescription loadTarget(const std::string& nameOrPath) {
  std::string path = resolve(nameOrPath, "");
  TargetDescription t = parseTarget(readFile(path), path, fs::path(path).parent_path().string());
  t.sourcePath = path;
  return t;
}

}  // namespace tpusim::lower
