// JSON <-> ChipConfig. Reading validates everything a preset can get wrong and
// reports every problem at once, one line each, naming file:line:col and the
// full field path. Writing uses a stable key order (the visit order), so two
// stats files diff cleanly.
//
// Preset format (sim/chips/*.json):
//   {
//     "name": "v5e", "description": "...", "test_preset": false,
//     "extends": "v5e",                 // optional: start from another preset
//     "core": { "cores": 1, ... }, "vmem": {...}, ...   // one object per section
//     "sources": { "core.cores": "GC", "hbm.tRCD": "assumption: ...", ... }
//   }
// A file without "extends" must give every field and a source for every field;
// a file with "extends" gives only what it changes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "isa/target/ChipConfig.h"

namespace tpusim::target {

// Where a chip description came from, for error messages and "extends".
struct ChipSource {
  std::string text;  // the JSON text
  std::string file;  // the name errors use (a path, or "<string>")
};

// Resolves the name given in "extends" (relative to the file that says it).
using ExtendsResolver = ChipConfig (*)(const std::string& name, const std::string& fromFile,
                                       int depth);

// Parses and validates one chip description. `resolveExtends` loads the base
// of an "extends" (nullptr: "extends" is an error). Throws ConfigError.
ChipConfig parseChip(const ChipSource& src, ExtendsResolver resolveExtends = nullptr,
                     int depth = 0);

struct WriteOptions {
  bool sources = true;   // include the "sources" object
  bool derived = false;  // include a "derived" object (peaks); ignored when read back
};
nlohmann::ordered_json chipToJson(const ChipConfig& chip, const WriteOptions& options = {});
// The same as indented text. Tools compiled with -fno-rtti (llvm::cl) should
// call this rather than dump() themselves: nlohmann's dump instantiates
// classes with vtables, and a no-RTTI copy of those breaks UBSan's vptr check
// in the RTTI code that shares them.
std::string chipToJsonText(const ChipConfig& chip, const WriteOptions& options = {},
                           int indent = 2);

// Tags a "sources" entry may start with (public source names and kinds).
bool isValidSourceEntry(const std::string& entry, bool testPreset, std::string* why);

}  // namespace tpusim::target
