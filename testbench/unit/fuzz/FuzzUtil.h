// Shared pieces of the input fuzzers (issue 19): deterministic mutations of
// text and bytes, the source tree's files, and a guard that silences a tool's
// stdout / stderr while it runs thousands of bad inputs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tpusim::fuzz {

inline std::string sourceDir() {
  const char* s = std::getenv("TPUSIM_SOURCE_DIR");
  return s ? s : ".";
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Numbers that break parsers and size computations.
inline const std::vector<std::string>& hostileNumbers() {
  static const std::vector<std::string> n = {"0",
                                             "-1",
                                             "1e999",
                                             "-1e999",
                                             "nan",
                                             "inf",
                                             "2147483648",
                                             "4294967296",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "18446744073709551616",
                                             "1e308",
                                             "1e-320",
                                             "0x10",
                                             "1.5",
                                             "-0",
                                             "",
                                             "65536",
                                             "1000000000",
                                             "3"};
  return n;
}

// One random mutation of a text: replace a number, delete / duplicate /
// swap lines, flip or insert a byte, truncate, or deep nesting.
inline std::string mutateText(const std::string& in, std::mt19937_64& rng) {
  std::string s = in;
  if (s.empty()) return s;
  auto pos = [&] { return size_t(rng() % s.size()); };
  switch (rng() % 8) {
    case 0: {  // replace the number at a random place with a hostile one
      size_t p = pos();
      while (p < s.size() && !(s[p] >= '0' && s[p] <= '9')) ++p;
      if (p >= s.size()) break;
      size_t e = p;
      while (e < s.size() && ((s[e] >= '0' && s[e] <= '9') || s[e] == '.')) ++e;
      const auto& n = hostileNumbers();
      s.replace(p, e - p, n[rng() % n.size()]);
      break;
    }
    case 1: {  // delete a line
      size_t p = s.rfind('\n', pos());
      size_t e = s.find('\n', p == std::string::npos ? 0 : p + 1);
      if (p != std::string::npos && e != std::string::npos) s.erase(p, e - p);
      break;
    }
    case 2: {  // duplicate a line
      size_t p = s.rfind('\n', pos());
      size_t e = s.find('\n', p == std::string::npos ? 0 : p + 1);
      if (p != std::string::npos && e != std::string::npos) s.insert(e, s.substr(p, e - p));
      break;
    }
    case 3:
      s[pos()] = char(rng() % 256);
      break;
    case 4: {
      static const char tokens[] = "[]{}(),=:\"%.-";
      s.insert(pos(), 1, tokens[rng() % (sizeof tokens - 1)]);
      break;
    }
    case 5:
      s.resize(pos());
      break;
    case 6: {  // deep nesting
      size_t p = pos();
      int depth = int(rng() % 3000);
      s.insert(p, std::string(size_t(depth), rng() % 2 ? '[' : '('));
      break;
    }
    default: {  // swap two words
      size_t a = pos(), b = pos();
      std::swap(s[a], s[b]);
      break;
    }
  }
  return s;
}

// Silences stdout and stderr for its lifetime (the tools report every bad
// input there; thousands of lines would bury the test's own output).
class Quiet {
 public:
  Quiet() {
    std::fflush(stdout);
    std::fflush(stderr);
    out_ = dup(1);
    err_ = dup(2);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
  }
  ~Quiet() {
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(out_, 1);
    dup2(err_, 2);
    close(out_);
    close(err_);
  }

 private:
  int out_, err_;
};

}  // namespace tpusim::fuzz
