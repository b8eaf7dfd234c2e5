#include "sim/tools/tpusim/SystemRun.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "compiler/driver/EvaluateHlo.h"
#include "isa/support/Npy.h"
#include "sim/chip/BufferIo.h"
#include "sim/system/System.h"
#include "sim/system/SystemReport.h"
#include "sim/tools/tpusim/ProfileOutput.h"
#include "sim/tools/tpusim/ReferenceCheck.h"

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

const isa::BufferDesc* bufferOf(const isa::Program& program, const std::string& name,
                                isa::BufferRole role) {
  for (const isa::BufferDesc& b : program.buffers)
    if (b.name == name && b.role == role) return &b;
  return nullptr;
}

// --check on a system: every entry parameter of every device as an array (the
// user's file, or seeded random data given to that device's simulation too).
std::vector<std::map<int64_t, driver::ParameterArray>> spmdCheckInputs(
    const TpusimArgs& a, const isa::Program& program, int devices,
    const std::map<std::pair<std::string, int>, std::string>& given, SystemSimulation& sim) {
  RandomInputs kind;
  if (!parseRandomInputs(a.randomInputs, &kind))
    throw std::runtime_error(
        fmt::format("--random-inputs={}: expected uniform or fan-in", a.randomInputs));
  std::vector<std::map<int64_t, driver::ParameterArray>> out(static_cast<size_t>(devices));
  const std::vector<isa::SignatureParameter>& params = program.signature.parameters;
  for (size_t n = 0; n < params.size(); ++n) {
    if (params[n].leaves.empty()) continue;
    if (params[n].leaves.size() != 1 || !params[n].leaves[0].index.empty())
      throw std::runtime_error(fmt::format(
          "--check: entry parameter {} is a tuple; the reference evaluator takes arrays only", n));
    const std::string& name = params[n].leaves[0].buffer;
    const isa::BufferDesc* buffer = bufferOf(program, name, isa::BufferRole::Input);
    if (!buffer)
      throw std::runtime_error(fmt::format("--check: the program has no input '{}'", name));
    for (int d = 0; d < devices; ++d) {
      auto it = given.find({name, d});
      if (it == given.end()) it = given.find({name, -1});
      if (it != given.end()) {
        out[size_t(d)][int64_t(n)] = {npy::read(it->second), it->second};
        continue;
      }
      uint64_t seed = deviceSeed(a.seed, d);
      npy::Array array = bytesToNpy(*buffer, randomBytes(*buffer, seed, kind));
      std::string source =
          fmt::format("the random data of input '{}' on device {} (--seed {})", name, d, a.seed);
      sim.setInput(name, array, source, d);
      out[size_t(d)][int64_t(n)] = {std::move(array), source};
    }
  }
  return out;
}

// "out" / "out.1" of device d as the evaluator names it with several replicas.
std::string replicaName(const std::string& name, int d, int devices) {
  if (devices == 1) return name;
  size_t dot = name.find('.');
  return dot == std::string::npos
             ? fmt::format("{}.r{}", name, d)
             : fmt::format("{}.r{}{}", name.substr(0, dot), d, name.substr(dot));
}

std::map<std::string, npy::Array> evaluateAll(
    const TpusimArgs& a, const std::vector<std::map<int64_t, driver::ParameterArray>>& params,
    const std::string& passes, bool mxuDots) {
  driver::EvaluateOptions o;
  o.replicas = int64_t(params.size());
  // As on one chip (ReferenceCheck.h): f32 dots as the MXU computes them, except for the
  // exact (promote-to-f32) reference that judges bf16 rounding.
  o.mxuDotPrecision = mxuDots;
  driver::EvaluateFileResult r = driver::evaluateHloFile(a.program, params, passes, o);
  if (!r.ok()) {
    fmt::print(stderr, "{}\n", r.error);
    throw std::runtime_error(
        fmt::format("--check: the reference evaluator{} failed on {} (errors above)",
                    passes.empty() ? "" : " (after passes " + passes + ")", a.program));
  }
  std::map<std::string, npy::Array> out;
  for (auto& [name, array] : r.outputs) out[name] = std::move(array);
  return out;
}

// Compares every output of every device with the evaluator's replica of it.
int spmdCheckOutputs(const TpusimArgs& a, const isa::Program& program, const SystemResult& r,
                     const std::vector<std::map<int64_t, driver::ParameterArray>>& params) {
  const int devices = int(r.chips.size());
  std::map<std::string, npy::Array> ref = evaluateAll(a, params, "", /*mxuDots=*/true), exact;
  fmt::print("\ncheck against the reference evaluator (tpu-opt --evaluate, {} replicas):\n",
             devices);
  int failed = 0, total = 0;
  for (int d = 0; d < devices; ++d)
    for (const isa::SignatureLeaf& leaf : program.signature.results) {
      const isa::BufferDesc* buffer = bufferOf(program, leaf.buffer, isa::BufferRole::Output);
      auto sim = r.chips[size_t(d)].outputs.find(leaf.buffer);
      auto want = ref.find(replicaName(leaf.buffer, d, devices));
      if (!buffer || sim == r.chips[size_t(d)].outputs.end() || want == ref.end())
        throw std::runtime_error(
            fmt::format("--check: no output '{}' of device {}", leaf.buffer, d));
      OutputCheck c = compareOutput(*buffer, sim->second, want->second, a.checkRtol);
      if (c.wantsRoundingJudgement()) {
        if (exact.empty()) exact = evaluateAll(a, params, "promote-to-f32", /*mxuDots=*/false);
        judgeBf16Rounding(c, *buffer, sim->second, want->second,
                          exact.at(replicaName(leaf.buffer, d, devices)));
      }
      fmt::print("  device {}: {}\n", d, c.line());
      failed += !c.ok();
      ++total;
    }
  if (failed) {
    fmt::print(stderr, "tpusim: error: --check: {} of {} outputs differ from the reference\n",
               failed, total);
    return 1;
  }
  fmt::print("  all {} outputs of {} devices match\n", total, devices);
  return 0;
}

// The device a pod profile shows: --profile-device, else the slowest chip (the
// lowest id among equals), which sets the step.
int profiledDevice(const TpusimArgs& a, const SystemResult& r) {
  if (a.profileDevice >= 0) return a.profileDevice;
  int slowest = 0;
  for (size_t d = 0; d < r.chips.size(); ++d)
    if (r.chips[d].cycles > r.chips[size_t(slowest)].cycles) slowest = int(d);
  return slowest;
}

prof::PodProfile podProfile(const TpusimArgs& a, const SystemResult& r,
                            const target::ChipConfig& chip) {
  prof::PodProfile pod;
  pod.present = true;
  pod.topology = r.topology;
  pod.device = profiledDevice(a, r);
  pod.chosenBy = a.profileDevice >= 0 ? "--profile-device" : "the slowest chip";
  pod.linkBytesPerSecond = chip.ici.link_bytes_per_second;
  pod.hopLatencyCycles = chip.ici.latency_cycles;
  for (size_t d = 0; d < r.chips.size(); ++d) {
    const SimResult& c = r.chips[d];
    prof::PodChip pc;
    pc.device = int(d);
    pc.cycles = c.cycles;
    pc.status = c.fault    ? (c.fault->kind == "deadlock" ? "waiting" : "fault")
                : c.halted ? "halted"
                           : "stopped";
    for (const CoreStats& cs : c.cores)
      pc.syncWaitCycles += cs.stalls[size_t(StallCause::SyncWait)];
    for (const LinkReport& l : r.links)
      if (l.chip == int(d)) pc.iciBytesOut += l.bytes;
    pod.chips.push_back(pc);
  }
  for (const LinkReport& l : r.links)
    if (l.bytes > 0) pod.links.push_back({l.name, l.bytes, l.flows, l.utilization});
  return pod;
}

}  // namespace

int runSystem(const TpusimArgs& a, const target::ChipConfig& chip, const isa::Program& program,
              const SimOptions& options,
              const std::function<std::string(const std::string&)>& bufferName,
              const prof::ProfileInputs& profileInputs) {
  ici::Torus torus = ici::Torus::parse(a.topology, chip.ici);
  if (a.profileDevice >= torus.numChips())
    throw std::runtime_error(
        fmt::format("--profile-device {}: device {} does not exist (--topology {} has devices "
                    "0..{})",
                    a.profileDevice, a.profileDevice, a.topology, torus.numChips() - 1));
  SystemSimulation sim(chip, program, options, torus);
  std::map<std::pair<std::string, int>, std::string> given;  // (buffer, device or -1) -> file
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
    std::string buffer = bufferName(name);
    if (!given.emplace(std::make_pair(buffer, device), path).second)
      throw std::runtime_error(fmt::format("--input {}: buffer '{}'{} is already given", in, buffer,
                                           device < 0 ? "" : fmt::format(" of device {}", device)));
    sim.setInput(buffer, array, path, device);
  }
  std::vector<std::map<int64_t, driver::ParameterArray>> checkParams;
  if (a.check) checkParams = spmdCheckInputs(a, program, torus.numChips(), given, sim);
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
  // Written even after a fault, as the stats are: it shows how far the chips got.
  if (!a.profileDir.empty()) {
    prof::ProfileInputs in = profileInputs;
    in.pod = podProfile(a, r, chip);
    writeProfile(a.profileDir, r.chips[size_t(in.pod.device)], program, chip, sim.trace(),
                 info.program, in);
  }
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
  if (a.check) return spmdCheckOutputs(a, program, r, checkParams);
  return 0;
}

}  // namespace tpusim::sim
