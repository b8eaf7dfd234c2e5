#include "isa/support/RunFiles.h"

#include <fmt/format.h>

#include <filesystem>

namespace tpusim::support {
namespace fs = std::filesystem;

namespace {
bool ignored(const std::string& path) { return path.empty() || path == "-"; }

// The path with symlinks of its existing part resolved; the path itself when
// even that fails (then only equal spellings match).
fs::path normal(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::path(path).lexically_normal() : p;
}
}  // namespace

void RunFiles::input(const std::string& role, const std::string& path) {
  if (!ignored(path)) inputs_.push_back({role, path});
}

void RunFiles::output(const std::string& role, const std::string& path) {
  if (!ignored(path)) outputs_.push_back({role, path});
}

void RunFiles::outputsIn(const std::string& role, const std::string& dir,
                         const std::vector<std::string>& names) {
  if (dir.empty()) return;
  for (const std::string& n : names) outputs_.push_back({role, (fs::path(dir) / n).string()});
}

bool RunFiles::sameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    bool same = fs::equivalent(a, b, ec);
    if (!ec) return same;
  }
  return normal(a) == normal(b);
}

std::string RunFiles::clash() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const File& out = outputs_[i];
    for (const File& in : inputs_)
      if (sameFile(out.path, in.path)) {
        std::string what = in.role == in.path ? in.role : fmt::format("{} ({})", in.role, in.path);
        return fmt::format("{} {} is {}; refusing to overwrite an input", out.role, out.path, what);
      }
    for (size_t j = 0; j < i; ++j)
      if (sameFile(out.path, outputs_[j].path))
        return fmt::format("{} {} is also the {} output ({}); each output needs its own file",
                           out.role, out.path, outputs_[j].role, outputs_[j].path);
  }
  return "";
}

}  // namespace tpusim::support
