#include "sim/tools/tpusim/SystemRun.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "isa/support/Npy.h"
#include "sim/system/System.h"
#include "sim/system/SystemReport.h"

namespace tpusim::sim {
namespace {

namespace fs = std::filesystem;

void writeText(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path, std::ios::binary);
  if (!f)
    throw std::runtime_error(fmt::format("{}: cannot open the {} file for writing", path, what));
  f << text;
  if (!f) throw std::runtime_error(fmt::format("{}: error while writing the {}", path, what));
}

std::string fileNameFor(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out;
}

}  // namespace

int runSystem(const TpusimArgs& a, const target::ChipConfig& chip, const isa::Program& program,
              const SimOptions& options,
              const std::function<std::string(const std::string&)>& bufferName) {
  if (a.check)
    throw std::runtime_error(
        "--check with --topology: checking an SPMD module per device is not built yet");
  ici::Torus torus = ici::Torus::parse(a.topology, chip.ici);
  SystemSimulation sim(chip, program, options, torus);
  for (const std::string& in : a.inputs) {
    size_t eq = in.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == in.size())
      throw std::runtime_error(
          fmt::format("--input {}: expected NAME=file.npy or NAME@DEVICE=file.npy", in));
    std::string name = in.substr(0, eq), path = in.substr(eq + 1);
    int device = -1;
    if (size_t at = name.rfind('@'); at != std::string::npos) {
      std::string d = name.substr(at + 1);
      if (d.empty() || d.size() > 6 || d.find_first_not_of("0123456789") != std::string::npos)
        throw std::runtime_error(fmt::format("--input {}: '@{}' is not a device number", in, d));
      device = std::stoi(d);
      if (device >= torus.numChips())
        throw std::runtime_error(
            fmt::format("--input {}: device {} does not exist (--topology {} has devices 0..{})",
                        in, device, a.topology, torus.numChips() - 1));
      name = name.substr(0, at);
    }
    npy::Array array = npy::read(path);
    sim.setInput(bufferName(name), array, path, device);
  }
  if (!a.outputDir.empty()) {
    std::error_code ec;
    if (fs::exists(a.outputDir, ec)) {
      if (!fs::is_directory(a.outputDir, ec))
        throw std::runtime_error(
            fmt::format("--output-dir {}: exists and is not a directory", a.outputDir));
      if (!a.force && fs::directory_iterator(a.outputDir, ec) != fs::directory_iterator())
        throw std::runtime_error(fmt::format(
            "--output-dir {}: the directory is not empty (files of another run?); use --force "
            "to write into it anyway",
            a.outputDir));
    } else if (!fs::create_directories(a.outputDir, ec)) {
      throw std::runtime_error(
          fmt::format("--output-dir {}: cannot create it: {}", a.outputDir, ec.message()));
    }
  }

  SystemResult r = sim.run();
  RunInfo info;
  info.program = fs::path(a.program).filename().string();
  info.mode = a.mode;
  info.topOps = a.topOps;
  if (!a.statsPath.empty())
    writeText(a.statsPath, systemStatsJson(r, chip, info).dump(2) + "\n", "stats");
  if (!a.tracePath.empty() && sim.trace()) sim.trace()->write(a.tracePath);
  fmt::print("{}", systemSummaryText(r, chip, info));
  if (r.fault) {
    fmt::print(stderr, "tpusim: error: {}", r.fault->report());
    return 1;
  }
  if (!a.outputDir.empty())
    for (size_t d = 0; d < r.chips.size(); ++d)
      for (const auto& [name, array] : r.chips[d].outputs)
        npy::write(
            (fs::path(a.outputDir) / fmt::format("{}.d{}.npy", fileNameFor(name), d)).string(),
            array);
  return 0;
}

}  // namespace tpusim::sim
