#include "sim/tools/tpusim/HloProgram.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "isa/target/ChipJson.h"

namespace tpusim::sim {

bool isHloPath(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".hlo") == 0;
}

namespace {

std::vector<IoMapEntry> readIoMap(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("tpuc wrote no io map at {}", path));
  std::vector<IoMapEntry> out;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, '\t')) f.push_back(field);
    if (f.size() == 4 && f[0] == "input")
      out.push_back({true, f[1], std::stoll(f[2]), f[3] == "tuple"});
    else if (f.size() == 2 && f[0] == "output")
      out.push_back({false, f[1], -1, false});
    else
      throw std::runtime_error(fmt::format("{}: malformed io-map line '{}'", path, line));
  }
  return out;
}

}  // namespace

CompiledHlo compileHlo(const std::string& hloPath, const target::ChipConfig& chip,
                       const TempDir& dir) {
  std::string tpuc = siblingTool("tpuc");
  // The chip exactly as simulated, overrides included, so the program fits it.
  std::string chipPath = dir.path() + "/chip.json";
  {
    target::WriteOptions wo;
    std::ofstream f(chipPath, std::ios::binary);
    f << target::chipToJsonText(chip, wo) << "\n";
    if (!f) throw std::runtime_error(fmt::format("cannot write {}", chipPath));
  }
  CompiledHlo c;
  c.programPath = dir.path() + "/program.tpuprog";
  std::string ioPath = dir.path() + "/io.tsv";
  ProcessResult r =
      runProcess({tpuc, hloPath, "-o", c.programPath, "--chip", chipPath, "--io-map", ioPath});
  if (!r.ok())
    throw std::runtime_error(
        fmt::format("{}: compiling with {} failed ({})", hloPath, tpuc, r.describe()));
  c.io = readIoMap(ioPath);
  return c;
}

}  // namespace tpusim::sim
