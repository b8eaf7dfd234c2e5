#include "kernels/examples/KernelMain.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "isa/ProgramFile.h"
#include "kernels/codegen/Compile.h"
#include "kernels/dsl/HostArrayIo.h"

namespace tpusim::kernels::examples {

namespace {

struct Options {
  std::string chip = "v5e", chipsDir = TPUSIM_DEFAULT_CHIPS_DIR, tpusim, out = "kernel-out";
  uint64_t seed = 1;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& dst) {
      if (i + 1 >= argc) return false;
      dst = argv[++i];
      return true;
    };
    std::string seed;
    if (a == "--chip" && value(o.chip)) continue;
    if (a == "--chips-dir" && value(o.chipsDir)) continue;
    if (a == "--tpusim" && value(o.tpusim)) continue;
    if (a == "--out" && value(o.out)) continue;
    if (a == "--seed" && value(seed)) {
      o.seed = std::stoull(seed);
      continue;
    }
    fmt::print(stderr,
               "usage: {} [--chip NAME|file.json] [--chips-dir DIR] [--tpusim PATH] [--out DIR] "
               "[--seed N]\n",
               argv[0]);
    return false;
  }
  return true;
}

}  // namespace

int kernelMain(int argc, char** argv, const KernelExample& ex) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  try {
    auto kernel = ex.call.trace(ex.inputs);
    codegen::TargetInfo target = codegen::loadTargetByName(o.chip, o.chipsDir);
    std::mt19937_64 rng(o.seed);
    std::vector<dsl::HostArray> inputs;
    for (const auto& a : kernel->inputs) inputs.push_back(dsl::randomArray(a.shape, a.dtype, rng));
    dsl::InterpretOptions io;
    io.mxuSize = target.mxuSize;
    io.seed = o.seed;
    dsl::InterpretResult r = dsl::interpret(*kernel, inputs, io);
    for (const std::string& race : r.races) fmt::print("{}: {}\n", kernel->name, race);
    bool ok = r.races.empty();
    if (ex.reference) {
      std::vector<std::vector<double>> in;
      for (const auto& h : inputs) {
        in.emplace_back();
        for (int64_t i = 0; i < h.size(); ++i) in.back().push_back(dsl::valueAt(h, i));
      }
      auto want = ex.reference(in);
      double worst = 0;
      for (size_t k = 0; k < r.outputs.size() && k < want.size(); ++k)
        for (int64_t i = 0; i < r.outputs[k].size(); ++i)
          worst = std::max(worst, std::fabs(dsl::valueAt(r.outputs[k], i) - want[k][size_t(i)]) /
                                      (1.0 + std::fabs(want[k][size_t(i)])));
      bool pass = worst <= ex.tolerance;
      ok = ok && pass;
      fmt::print("{}: interpret mode vs reference: max relative error {:.3g} ({})\n", kernel->name,
                 worst, pass ? "ok" : fmt::format("FAIL, tolerance {:.3g}", ex.tolerance));
    }
    codegen::CompiledKernel c = codegen::compileKernel(*kernel, target);
    ::mkdir(o.out.c_str(), 0777);
    std::string prog = o.out + "/" + kernel->name + ".tpuprog", error;
    if (!isa::writeProgramFile(c.program, prog, &error)) throw std::runtime_error(error);
    std::string inputArgs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string path = o.out + "/" + kernel->inputs[i].name + ".npy";
      npy::write(path, dsl::toNpy(inputs[i]));
      inputArgs += fmt::format(" --input {}={}", kernel->inputs[i].name, path);
    }
    fmt::print("{}: compiled for {}: {} bundles -> {}\n", kernel->name, target.name,
               c.stats.bundles, prog);
    if (o.tpusim.empty()) return ok ? 0 : 1;
    std::string chipArg =
        o.chip.find(".json") != std::string::npos ? o.chip : o.chipsDir + "/" + o.chip + ".json";
    std::string cmd = fmt::format(
        "'{}' '{}' --chip '{}' --strict --quiet --force --output-dir '{}/sim' "
        "--stats '{}/stats.json'{} > '{}/tpusim.log' 2>&1",
        o.tpusim, prog, chipArg, o.out, o.out, inputArgs, o.out);
    if (std::system(cmd.c_str()) != 0) {
      fmt::print("{}: tpusim failed (see {}/tpusim.log)\n", kernel->name, o.out);
      return 1;
    }
    bool same = true;
    for (size_t k = 0; k < r.outputs.size(); ++k) {
      std::string path = o.out + "/sim/" + kernel->outputs[k].name + ".npy";
      dsl::HostArray sim = dsl::fromNpy(npy::read(path), kernel->outputs[k].dtype, path);
      same = same && sim.words == r.outputs[k].words;
    }
    ok = ok && same;
    std::ifstream sf(o.out + "/stats.json");
    nlohmann::json st = nlohmann::json::parse(sf);
    double cycles = st.at("total_cycles").get<double>();
    fmt::print(
        "{}: simulated on {}: {:.0f} cycles ({:.3f} us), MXU utilization {:.1f}%, HBM {:.1f} "
        "GB/s; simulator {} interpret mode bit for bit\n",
        kernel->name, target.name, cycles, st.at("simulated_seconds").get<double>() * 1e6,
        100.0 * st.at("mxu_utilization").get<double>(),
        st.at("hbm").at("achieved_bytes_per_second").get<double>() / 1e9,
        same ? "equals" : "DIFFERS FROM");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}

}  // namespace tpusim::kernels::examples
