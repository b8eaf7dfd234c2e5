// tpusim-batch: many tpusim runs from one manifest: a sweep table (run), a
// cycle regression against goldens (check), and the one way goldens change
// (update). See README.md beside this file and docs/regression.md.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "sim/tools/tpusim-batch/Distribution.h"
#include "sim/tools/tpusim-batch/Golden.h"
#include "sim/tools/tpusim-batch/Manifest.h"
#include "sim/tools/tpusim-batch/Reports.h"
#include "sim/tools/tpusim-batch/Runner.h"

using namespace tpusim::batch;
namespace fs = std::filesystem;

namespace {

const char* kUsage = R"(tpusim-batch: many tpusim runs from one JSON manifest

  tpusim-batch run MANIFEST [-j N] [-o BASE] [--case NAME]...
      runs every case, prints the table, writes BASE.csv and BASE.json
      (default BASE: the manifest's name without .json, plus ".results", in the
      current directory); exit 1 when a case does not halt as it should
  tpusim-batch check MANIFEST [-j N] [--junit FILE] [--markdown FILE] [--case NAME]...
      compares every case with its golden (MANIFEST.golden.json beside the
      manifest, or its "golden" field); exit 1 on a difference beyond tolerance
  tpusim-batch update MANIFEST [-j N] [--case NAME]...
      rewrites the goldens (all, or only the named cases)
  tpusim-batch list MANIFEST
      prints the case names the manifest expands to

options:
  -j N            cases run at once (default: the host's cores)
  --case NAME     only this case (repeatable)
  --tpusim PATH   the tpusim binary (default: the one beside tpusim-batch)
  --quiet         no progress lines on stderr
Under `mpirun -n R tpusim-batch ...` (a build with MPI), ranks share the cases
and rank 0 writes the results. The manifest format: sim/tools/tpusim-batch/README.md.
)";

struct Args {
  std::string command, manifest, base, junit, markdown, tpusim;
  std::vector<std::string> cases;
  int jobs = 0;
  bool quiet = false;
};

[[noreturn]] void usageError(const std::string& what) {
  throw std::invalid_argument(what + " (tpusim-batch --help)");
}

Args parseArgs(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) usageError(fmt::format("{} needs a value", name));
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      fmt::print("{}", kUsage);
      std::exit(0);
    } else if (arg == "-j" || arg.rfind("-j", 0) == 0) {
      std::string v = arg == "-j" ? value("-j") : arg.substr(2);
      size_t used = 0;
      try {
        a.jobs = std::stoi(v, &used);
      } catch (...) {
        used = 0;
      }
      if (used != v.size() || a.jobs < 1)
        usageError(fmt::format("-j '{}': expected a count >= 1", v));
    } else if (arg == "-o") {
      a.base = value("-o");
    } else if (arg == "--junit") {
      a.junit = value("--junit");
    } else if (arg == "--markdown") {
      a.markdown = value("--markdown");
    } else if (arg == "--case") {
      a.cases.push_back(value("--case"));
    } else if (arg == "--tpusim") {
      a.tpusim = value("--tpusim");
    } else if (arg == "--quiet") {
      a.quiet = true;
    } else if (!arg.empty() && arg[0] == '-') {
      usageError(fmt::format("unknown option '{}'", arg));
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.empty()) usageError("no command (run, check, update, list)");
  a.command = positional[0];
  if (a.command != "run" && a.command != "check" && a.command != "update" && a.command != "list")
    usageError(fmt::format("unknown command '{}' (run, check, update, list)", a.command));
  if (positional.size() != 2) usageError(fmt::format("{} takes one manifest", a.command));
  a.manifest = positional[1];
  if ((!a.junit.empty() || !a.markdown.empty()) && a.command != "check")
    usageError("--junit and --markdown belong to check");
  if (!a.base.empty() && a.command != "run") usageError("-o belongs to run");
  if (a.jobs == 0) a.jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  return a;
}

// The cases to run: all, or the named ones (an unknown name is an error).
std::vector<const Case*> selectCases(const Manifest& m, const std::vector<std::string>& names) {
  std::vector<const Case*> out;
  if (names.empty()) {
    for (const Case& c : m.cases) out.push_back(&c);
    return out;
  }
  std::set<std::string> seen;
  for (const std::string& n : names) {
    const Case* c = m.find(n);
    if (!c)
      throw std::invalid_argument(
          fmt::format("--case '{}': no such case in {} (tpusim-batch list {})", n, m.path, m.path));
    if (seen.insert(n).second) out.push_back(c);
  }
  return out;
}

// Refuses to write over the manifest or the goldens (no output may overwrite an input).
void writeOutput(const std::string& path, const std::string& text, const Manifest& m) {
  std::error_code ec;
  for (const std::string& input : {m.path, m.goldenPath})
    if (fs::equivalent(path, input, ec))
      throw std::invalid_argument(fmt::format("{}: refusing to overwrite an input", path));
  for (const Case& c : m.cases)
    if (!c.program.empty() && fs::equivalent(path, c.program, ec))
      throw std::invalid_argument(fmt::format("{}: refusing to overwrite an input", path));
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
}

void printWarnings(const std::vector<const Case*>& cases, const std::vector<CaseResult>& results) {
  for (size_t i = 0; i < cases.size(); ++i)
    for (const std::string& w : results[i].warnings)
      fmt::print(stderr, "tpusim-batch: {}: {}\n", cases[i]->name, w);
}

int run(const Args& a, const Manifest& m, const std::vector<const Case*>& cases,
        const std::vector<CaseResult>& results) {
  std::string base = a.base;
  if (base.empty()) base = fs::path(m.path).stem().string() + ".results";
  fmt::print("{}", tableText(cases, results));
  writeOutput(base + ".csv", tableCsv(cases, results), m);
  writeOutput(base + ".json", tableJson(m, cases, results), m);
  printWarnings(cases, results);
  int bad = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string problem = goldenProblem(*cases[i], results[i]);
    if (problem.empty()) continue;
    ++bad;
    fmt::print(stderr, "tpusim-batch: {}: {}\n", cases[i]->name, problem);
  }
  fmt::print("wrote {}.csv and {}.json ({} cases{})\n", base, base, cases.size(),
             bad ? fmt::format(", {} did not halt as they should", bad) : "");
  return bad ? 1 : 0;
}

int check(const Args& a, const Manifest& m, const std::vector<const Case*>& cases,
          const std::vector<CaseResult>& results) {
  std::map<std::string, nlohmann::json> goldens = loadGoldens(m.goldenPath);
  printWarnings(cases, results);
  std::vector<CaseCheck> checks;
  int failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    auto it = goldens.find(cases[i]->name);
    checks.push_back(checkCase(*cases[i], results[i], it == goldens.end() ? nullptr : &it->second));
    failed += checks.back().pass() ? 0 : 1;
    if (!checks.back().pass() || !checks.back().changes.empty())
      fmt::print("{}", checkText(checks.back()));
  }
  if (a.cases.empty())
    for (const auto& [name, record] : goldens)
      if (!m.find(name))
        fmt::print(
            "note: {} has a golden for '{}', which the manifest no longer has (update drops it)\n",
            m.goldenPath, name);
  if (!a.junit.empty()) writeOutput(a.junit, checkJunit(m, checks), m);
  if (!a.markdown.empty()) writeOutput(a.markdown, checkMarkdown(m, checks), m);
  if (failed)
    fmt::print(
        "{} of {} cases differ from their goldens; if the change is intended, run "
        "`tpusim-batch update {}` and review the diff of {}\n",
        failed, cases.size(), m.path, m.goldenPath);
  else
    fmt::print("{} cases match their goldens ({})\n", cases.size(), m.goldenPath);
  return failed ? 1 : 0;
}

int update(const Args& a, const Manifest& m, const std::vector<const Case*>& cases,
           const std::vector<CaseResult>& results) {
  std::map<std::string, nlohmann::json> goldens;
  if (!a.cases.empty()) goldens = loadGoldens(m.goldenPath);  // the others stay as they are
  int bad = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (std::string problem = goldenProblem(*cases[i], results[i]); !problem.empty()) {
      ++bad;
      fmt::print(stderr, "tpusim-batch: {}: no golden written: {}\n", cases[i]->name, problem);
      continue;
    }
    goldens[cases[i]->name] = results[i].record;
  }
  if (bad) {
    fmt::print(stderr, "tpusim-batch: {} unchanged ({} cases cannot have a golden)\n", m.goldenPath,
               bad);
    return 1;
  }
  saveGoldens(m.goldenPath, goldens);
  fmt::print("wrote {} ({} cases updated)\n", m.goldenPath, cases.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Distribution d;
  try {
    d = Distribution::start(&argc, &argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpusim-batch: error: {}\n", e.what());
    return 1;
  }
  try {
    Args a = parseArgs(argc, argv);
    Manifest m = loadManifest(a.manifest);
    std::vector<const Case*> cases = selectCases(m, a.cases);
    if (a.command == "list") {
      if (d.root())
        for (const Case* c : cases) fmt::print("{}\n", c->name);
      return d.finish(0);
    }
    RunOptions o;
    o.jobs = a.jobs;
    o.quiet = a.quiet;
    o.tpusim = a.tpusim.empty() ? tpusimBesideSelf() : a.tpusim;
    if (o.tpusim.empty() || access(o.tpusim.c_str(), X_OK) != 0)
      throw std::invalid_argument(fmt::format(
          "no tpusim to run ({}); give --tpusim PATH",
          o.tpusim.empty() ? "none beside tpusim-batch" : o.tpusim + " is not executable"));
    if (d.ranks() > 1) o.progressTag = fmt::format("rank {}: ", d.rank());
    std::vector<const Case*> mine;
    for (size_t i : d.mine(cases.size())) mine.push_back(cases[i]);
    std::vector<CaseResult> results = d.gather(runCases(mine, o), cases.size());
    int status = 0;
    if (d.root()) {
      if (a.command == "run")
        status = run(a, m, cases, results);
      else if (a.command == "check")
        status = check(a, m, cases, results);
      else
        status = update(a, m, cases, results);
    }
    return d.finish(status);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tpusim-batch: error: {}\n", e.what());
    return d.abortAll(1);
  }
}
