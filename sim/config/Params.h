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
// printer, `--set key=value`) are written once in sim/config and work on
// every struct. Field types: int64_t, double, bool, std::string.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::sim {

// Limits for a numeric field; min > max means "no limit".
struct Range {
  double min = 1, max = 0;
};

}  // namespace tpusim::sim
