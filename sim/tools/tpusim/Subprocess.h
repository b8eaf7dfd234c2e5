// Running another tool of the build (tpuc, tpu-opt) from tpusim: layering keeps
// the simulator from linking the compiler, so `tpusim IN.hlo` runs the
// executables that sit next to it in the same bin directory.
#pragma once

#include <string>
#include <vector>

namespace tpusim::sim {

// <directory of the running tpusim>/<name>; throws std::runtime_error naming
// the path it looked at when the file is not an executable.
std::string siblingTool(const std::string& name);

struct ProcessResult {
  int exitCode = 0;  // valid when signal == 0
  int signal = 0;    // the signal that killed it, 0 if it exited
  bool ok() const { return signal == 0 && exitCode == 0; }
  std::string describe() const;  // "exit status 1" / "killed by signal 11 (Segmentation fault)"
};

// Runs argv[0] with argv; stdout goes to `stdoutPath` (empty: inherited),
// stderr is inherited. Throws std::runtime_error if it cannot be started.
ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& stdoutPath = "");

// A new directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tpusim::sim
