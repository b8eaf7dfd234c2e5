#include "sim/tools/tpusim/Subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tpusim::sim {

namespace fs = std::filesystem;

std::string siblingTool(const std::string& name) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error(fmt::format("cannot find tpusim's own path: {}", ec.message()));
  fs::path tool = self.parent_path() / name;
  if (access(tool.c_str(), X_OK) != 0)
    throw std::runtime_error(fmt::format(
        "{} is needed next to tpusim to {}, but {} is not an executable (build the '{}' target)",
        name, name == "tpuc" ? "compile .hlo programs" : "evaluate the reference", tool.string(),
        name));
  return tool.string();
}

std::string ProcessResult::describe() const {
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit status {}", exitCode);
}

ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& stdoutPath) {
  if (argv.empty()) throw std::runtime_error("runProcess: no command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out = -1;
  if (!stdoutPath.empty()) {
    out = open(stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0)
      throw std::runtime_error(fmt::format("cannot create {}: {}", stdoutPath, strerror(errno)));
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], strerror(errno)));
  if (pid == 0) {
    if (out >= 0) dup2(out, STDOUT_FILENO);
    execv(args[0], args.data());
    fprintf(stderr, "tpusim: error: cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  if (out >= 0) close(out);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error(fmt::format("waiting for {}: {}", argv[0], strerror(errno)));
  ProcessResult r;
  if (WIFSIGNALED(status))
    r.signal = WTERMSIG(status);
  else
    r.exitCode = WEXITSTATUS(status);
  return r;
}

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/{}.XXXXXX", base && *base ? base : "/tmp", prefix);
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error(
        fmt::format("cannot create a temporary directory {}: {}", pattern, strerror(errno)));
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace tpusim::sim
