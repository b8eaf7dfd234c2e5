#include "sim/tools/tpusim-batch/Runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "isa/ProgramFile.h"
#include "isa/support/Npy.h"
#include "isa/target/ChipLoader.h"
#include "kernels/codegen/Compile.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/Registry.h"

extern char** environ;

namespace tpusim::batch {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string tpusimBesideSelf() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path beside = self.parent_path() / "tpusim";
  return fs::is_regular_file(beside, ec) ? beside.string() : "";
}

std::vector<std::string> tpusimCommand(const Case& c, const std::string& tpusim,
                                       const std::string& program, const std::string& statsPath,
                                       const std::vector<std::string>& inputs) {
  std::vector<std::string> argv = {tpusim, program,   "--chip",  c.chip,   "--mode",
                                   c.mode, "--quiet", "--stats", statsPath};
  for (const std::string& s : c.sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  for (const std::string& in : inputs) {
    argv.push_back("--input");
    argv.push_back(in);
  }
  if (c.maxCycles > 0) {
    argv.push_back("--max-cycles");
    argv.push_back(std::to_string(c.maxCycles));
  }
  return argv;
}

namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first lines of a child's stderr, with the work directory's paths
// replaced by what the user wrote (results must not depend on where they ran).
std::string firstLines(std::string text, const std::string& workPath, const std::string& label,
                       int lines = 4) {
  for (size_t p = 0; !workPath.empty() && (p = text.find(workPath, p)) != std::string::npos;
       p += label.size())
    text.replace(p, workPath.size(), label);
  std::string out;
  std::istringstream in(text);
  std::string line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += (out.empty() ? "" : "\n") + line;
  return out.empty() ? "(no message)" : out;
}

// Compiles a library kernel for the case's chip (overrides applied) into
// `outPath`; in functional mode also writes the kernel's own seeded inputs
// (valid lengths, page tables) beside it and adds them to `inputs`
// ("NAME=file.npy"). "" on success, else the error.
std::string compileKernel(const Case& c, const std::string& outPath,
                          std::vector<std::string>& inputs) {
  try {
    auto target = kernels::codegen::TargetInfo::fromChip(target::loadChip(c.chip, c.sets));
    kernels::lib::LibraryKernel lk = kernels::lib::buildKernel(c.kernel, c.params, &target);
    std::unique_ptr<kernels::llo::Kernel> k = lk.trace();
    kernels::codegen::CompiledKernel compiled = kernels::codegen::compileKernel(*k, target);
    std::string error;
    if (!isa::writeProgramFile(compiled.program, outPath, &error)) return error;
    if (c.mode == "functional") {
      std::mt19937_64 rng(1);  // tpu-kernel's default --seed
      std::vector<kernels::dsl::HostArray> data = lk.sampleInputs(rng);
      for (size_t i = 0; i < data.size() && i < k->inputs.size(); ++i) {
        std::string file = fmt::format("{}.{}.npy", outPath, i);
        npy::write(file, kernels::dsl::toNpy(data[i]));
        inputs.push_back(k->inputs[i].name + "=" + file);
      }
    }
    return "";
  } catch (const std::exception& e) {
    return fmt::format("compiling kernel {}: {}", c.programLabel, e.what());
  }
}

// tpusim's warnings (lines with "warning:"), paths replaced as in firstLines.
std::vector<std::string> warnings(const std::string& text, const std::string& workPath,
                                  const std::string& label) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find("warning:") != std::string::npos)
      out.push_back(firstLines(line, workPath, label, 1));
  return out;
}

class Progress {
 public:
  Progress(size_t total, const RunOptions& o)
      : total_(total),
        quiet_(o.quiet),
        tag_(o.progressTag),
        tty_(isatty(2)),
        start_(Clock::now()) {}
  void finished(const CaseResult& r, int running) {
    ++done_;
    failed_ += r.ran() && faultKind(r.status).empty() ? 0 : 1;
    if (quiet_) return;
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    std::string what = r.ran() ? fmt::format("{}, {} cycles", r.status, r.cycles) : "error";
    if (tty_) {
      fmt::print(stderr, "\r\033[K{}[{}/{}] {} running, {} not halted, {:.1f}s: {} ({})", tag_,
                 done_, total_, running, failed_, elapsed, r.name, what);
      if (done_ == total_) fmt::print(stderr, "\n");
    } else {
      fmt::print(stderr, "{}[{}/{}] {}: {} ({:.2f}s)\n", tag_, done_, total_, r.name, what,
                 r.hostSeconds);
    }
    std::fflush(stderr);
  }

 private:
  size_t total_, done_ = 0, failed_ = 0;
  bool quiet_;
  std::string tag_;
  bool tty_;
  Clock::time_point start_;
};

struct Running {
  size_t index;
  Clock::time_point start;
  std::string program, stats, err;
};

}  // namespace

std::vector<CaseResult> runCases(const std::vector<const Case*>& cases, const RunOptions& o) {
  std::vector<CaseResult> results(cases.size());
  if (cases.empty()) return results;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tpusim-batch.XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error(fmt::format("cannot create a work directory {}", pattern));
  const std::string work = buf.data();
  Progress progress(cases.size(), o);
  std::map<pid_t, Running> running;
  size_t next = 0;
  auto finish = [&](size_t i, CaseResult r) {
    results[i] = std::move(r);
    progress.finished(results[i], int(running.size()));
  };
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && int(running.size()) < std::max(1, o.jobs)) {
      size_t i = next++;
      const Case& c = *cases[i];
      Running run{i, Clock::now(), c.program, fmt::format("{}/case{}.stats.json", work, i),
                  fmt::format("{}/case{}.stderr", work, i)};
      std::vector<std::string> inputs;
      if (!c.kernel.empty()) {
        run.program = fmt::format("{}/case{}.tpuprog", work, i);
        if (std::string err = compileKernel(c, run.program, inputs); !err.empty()) {
          CaseResult r;
          r.name = c.name;
          r.status = "error";
          r.error = firstLines(err, run.program, c.programLabel);
          finish(i, r);
          continue;
        }
      }
      std::vector<std::string> args = tpusimCommand(c, o.tpusim, run.program, run.stats, inputs);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&actions, 2, run.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                       0644);
      pid_t pid = 0;
      int rc = posix_spawn(&pid, o.tpusim.c_str(), &actions, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&actions);
      if (rc != 0) {
        fs::remove_all(work);
        throw std::runtime_error(fmt::format("cannot start {}: {}", o.tpusim, std::strerror(rc)));
      }
      running.emplace(pid, run);
    }
    if (running.empty()) continue;
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    Running run = it->second;
    running.erase(it);
    const Case& c = *cases[run.index];
    CaseResult r;
    std::error_code ec;
    const std::string& label = c.programLabel;
    if (fs::exists(run.stats, ec)) {
      try {
        r = resultFromStats(c.name, nlohmann::json::parse(readFile(run.stats)));
        std::string err = readFile(run.err);
        if (r.status != "halted")
          r.error = firstLines(err, run.program, label);
        else
          r.warnings = warnings(err, run.program, label);
      } catch (const std::exception& e) {
        r.name = c.name;
        r.status = "error";
        r.error = fmt::format("unreadable stats from tpusim: {}", e.what());
      }
    } else {
      r.name = c.name;
      r.status = "error";
      r.error = WIFSIGNALED(status) ? fmt::format("tpusim died of signal {}", WTERMSIG(status))
                                    : firstLines(readFile(run.err), run.program, label);
    }
    r.hostSeconds = std::chrono::duration<double>(Clock::now() - run.start).count();
    fs::remove(run.stats, ec);
    fs::remove(run.err, ec);
    finish(run.index, r);
  }
  fs::remove_all(work);
  return results;
}

}  // namespace tpusim::batch
