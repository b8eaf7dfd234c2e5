#include "isa/support/InputFile.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tpusim::support {

std::optional<std::string> inputFileProblem(const std::string& path) {
  if (path.empty()) return std::string("an empty file name");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::string("no such file");
    return fmt::format("cannot open: {}", std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return std::string("is a directory, not a file");
  if (!S_ISREG(st.st_mode))
    return std::string("is not a regular file (a device, FIFO or socket); give a file");
  return std::nullopt;
}

std::optional<std::string> readInputFile(const std::string& path, std::string* contents,
                                         uint64_t maxBytes) {
  if (auto problem = inputFileProblem(path)) return problem;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return fmt::format("cannot open: {}", std::strerror(errno));
  contents->clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (contents->size() + n > maxBytes) {
      std::fclose(f);
      contents->clear();
      return fmt::format("larger than {} bytes", maxBytes);
    }
    contents->append(buf, n);
  }
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (failed) return fmt::format("cannot read: {}", std::strerror(err));
  return std::nullopt;
}

}  // namespace tpusim::support
