// Typed configuration structs with self-description, in the spirit of
// Ramulator 2 / DRAMSys: every config struct lists its fields once, in a
// `template <class V> void visit(V& v)` member:
//
//   struct MxuConfig {
//     int64_t size = 128;
//     template <class V> void visit(V& v) {
//       v.field("size", size, "elements", "MXU array size N (N x N MACs)", 4, 256);
//     }
//   };
//
// and nested structs with `v.section("mxu", mxu)`. Visitors (the JSON reader
// that validates and names bad fields, the JSON writer, the documentation
// printer, `--set key=value`) are written once in isa/target and work on
// every struct. Field types: int64_t, double, bool, std::string.
//
// The visitor interface every struct may rely on:
//   v.field(key, int64_t& | double&, unit, doc, min, max)   numeric, limits inclusive
//   v.field(key, bool& | std::string&, unit, doc)            no limits
//   v.section(key, subStruct)                                 nested struct
// Constraints between fields (power of two, a product that must fit) go in
//   void check(ConfigProblems& p) const
// which names the offending field by its key; the caller adds the path prefix.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpusim::target {

// Limits for a numeric field; min > max means "no limit".
struct Range {
  double min = 1, max = 0;
};

// Collects violated cross-field constraints as (field key, message) pairs.
struct ConfigProblems {
  std::vector<std::pair<std::string, std::string>> list;
  std::string prefix;  // "hbm." while a section checks itself

  void require(bool ok, const std::string& key, const std::string& message) {
    if (!ok) list.emplace_back(prefix + key, message);
  }
  // Runs `section.check` with `key.` prepended to every field it names.
  template <class S>
  void checkSection(const std::string& key, const S& section) {
    std::string saved = prefix;
    prefix += key + ".";
    section.check(*this);
    prefix = saved;
  }
};

constexpr bool isPowerOfTwo(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace tpusim::target
