#include "sim/tools/tpusim/ProfileOutput.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/prof/HtmlReport.h"
#include "sim/prof/ProfileJson.h"
#include "sim/prof/ProfileText.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

void writeFile(const fs::path& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error(
        fmt::format("{}: cannot open the {} for writing", path.string(), what));
  f << text;
  if (!f)
    throw std::runtime_error(fmt::format("{}: error while writing the {}", path.string(), what));
}

}  // namespace

void prepareProfileDir(const std::string& dir, bool force, const std::vector<std::string>& inputs) {
  std::error_code ec;
  for (const char* name : {"profile.json", "report.html", "trace.json"})
    for (const std::string& in : inputs)
      if (fs::equivalent(fs::path(dir) / name, in, ec))
        throw std::runtime_error(fmt::format(
            "--profile {}: it would overwrite the input {} with its {}", dir, in, name));
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      throw std::runtime_error(fmt::format("--profile {}: exists and is not a directory", dir));
    if (!force && fs::directory_iterator(dir, ec) != fs::directory_iterator())
      throw std::runtime_error(fmt::format(
          "--profile {}: the directory is not empty (files of another run?); use --force to "
          "write into it anyway",
          dir));
    return;
  }
  if (!fs::create_directories(dir, ec))
    throw std::runtime_error(fmt::format("--profile {}: cannot create it: {}", dir, ec.message()));
}

void writeProfile(const std::string& dir, const SimResult& run, const isa::Program& program,
                  const target::ChipConfig& chip, const TraceRecorder* trace,
                  const std::string& programName, prof::ProfileInputs inputs) {
  inputs.program = programName;
  inputs.trace = trace ? "trace.json" : "";
  prof::Profile profile = prof::buildProfile(run, program, chip, inputs);
  const fs::path root(dir);
  if (trace) trace->write((root / "trace.json").string());
  writeFile(root / "profile.json", prof::profileToJson(profile).dump(2) + "\n", "profile");
  writeFile(root / "report.html", prof::htmlReport(profile), "report");
  fmt::print("\n{}", prof::overviewText(profile));
  fmt::print(
      "profile written to {0}/profile.json; open {0}/report.html in a browser (op profile, "
      "roofline, memory); {0}/trace.json loads in ui.perfetto.dev; tpu-prof {0} prints "
      "the op profile\n",
      dir);
}

}  // namespace tpusim::sim
