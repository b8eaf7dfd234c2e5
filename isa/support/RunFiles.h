// The files one run of a tool reads and writes, checked before anything is
// written: no output may be an input (the same file under any name: a
// symlink, a hard link, "./x" and "x") or another output of the same run.
// Every tool registers its files here and stops with the message of the
// first clash, so a careless command line never loses a user's file.
//
//   RunFiles files;
//   files.input("the input program", program);
//   files.output("--stats", statsPath);
//   if (std::string clash = files.clash(); !clash.empty()) fail(clash);
#pragma once

#include <string>
#include <vector>

namespace tpusim::support {

class RunFiles {
 public:
  // `role` names the file in messages: "the input program", "--input x", "-o".
  // Empty paths and "-" (stdin / stdout) are ignored.
  void input(const std::string& role, const std::string& path);
  void output(const std::string& role, const std::string& path);
  // The files a tool will write into `dir`, by name (e.g. every NAME.npy of
  // --output-dir): each one is an output of its own.
  void outputsIn(const std::string& role, const std::string& dir,
                 const std::vector<std::string>& names);

  // The first clash as an error message without the tool's prefix (e.g.
  // "--stats prog.s is the input program; refusing to overwrite it"), or "".
  std::string clash() const;

  // True when `a` and `b` name the same file (existing or not).
  static bool sameFile(const std::string& a, const std::string& b);

 private:
  struct File {
    std::string role, path;
  };
  std::vector<File> inputs_, outputs_;
};

}  // namespace tpusim::support
