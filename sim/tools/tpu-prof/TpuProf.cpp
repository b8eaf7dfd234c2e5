#include "sim/tools/tpu-prof/TpuProf.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/prof/HtmlReport.h"
#include "sim/prof/ProfileDiff.h"
#include "sim/prof/ProfileJson.h"
#include "sim/prof/ProfileText.h"

namespace tpusim::prof {
namespace {

std::filesystem::path profilePath(const std::string& where) {
  std::filesystem::path p(where);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "profile.json";
  return p;
}

// A profile directory (tpusim --profile DIR) or the profile.json in it.
Profile load(const std::string& where) {
  std::filesystem::path p = profilePath(where);
  std::error_code ec;
  if (!std::filesystem::exists(p, ec))
    throw std::runtime_error(fmt::format(
        "{}: no such profile (give the directory tpusim --profile wrote, or its profile.json)",
        p.string()));
  return readProfile(p.string());
}

}  // namespace

int runTpuProf(const TpuProfArgs& a) {
  try {
    const std::vector<std::string>& pos = a.positional;
    if (!pos.empty() && pos[0] == "diff") {
      if (pos.size() != 3)
        throw std::runtime_error(
            fmt::format("diff takes two profiles (tpu-prof diff A B), got {}", pos.size() - 1));
      DiffOptions o;
      o.rows = a.rows;
      fmt::print("{}", diffText(load(pos[1]), load(pos[2]), o));
      return 0;
    }
    if (pos.size() != 1)
      throw std::runtime_error(
          "expected one profile (tpu-prof DIR) or 'diff A B'; see tpu-prof --help");
    Profile p = load(pos[0]);
    if (!a.html.empty()) {
      std::error_code ec;
      if (std::filesystem::equivalent(a.html, profilePath(pos[0]), ec))
        throw std::runtime_error(
            fmt::format("--html {}: that is the profile being read; choose another file", a.html));
      std::ofstream f(a.html, std::ios::binary);
      if (!f)
        throw std::runtime_error(fmt::format("--html {}: cannot open it for writing", a.html));
      f << htmlReport(p);
      if (!f) throw std::runtime_error(fmt::format("--html {}: error while writing", a.html));
    }
    fmt::print("{}", overviewText(p));
    if (a.overviewOnly) return 0;
    OpTableOptions o;
    o.rowsPerCategory = a.rows;
    o.expandLayers = a.layers;
    fmt::print("\n{}", opTableText(p, o));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpu-prof: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace tpusim::prof
