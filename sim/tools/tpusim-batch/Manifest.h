// A tpusim-batch manifest: the cases of a cycle regression or a sweep, read
// from JSON. A case is one tpusim run: a program (.hlo, .s, .tpuprog) or a
// library kernel with its parameters, a chip preset, `--set` overrides and a
// mode. A grid expands into cases (programs x chips x override values) with
// names built from what varies, so a name says what the case is and stays the
// same from run to run. The format is documented in README.md beside this file.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/tools/tpusim-batch/Tolerance.h"

namespace tpusim::batch {

// A manifest that cannot be used: names the file, the JSON path and what is wrong.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Case {
  std::string name;    // unique in the manifest
  std::string origin;  // where it comes from: "/cases/3" or "/grids/0"
  std::string
      program;         // path as tpusim gets it (resolved against the manifest); empty for a kernel
  std::string kernel;  // library kernel name (kernels/lib/Registry.h); empty for a program
  std::map<std::string, std::string> params;  // kernel parameters as text
  std::string chip;                           // preset name or resolved .json path
  std::vector<std::string> sets;              // "key=value", in the order given
  std::string mode = "timing";                // timing | functional
  int64_t maxCycles = 0;                      // 0: no limit
  std::string expectFault;  // the fault kind this case exists to show ("" = must halt)
  std::string faultReason;  // why (required with expectFault)
  Tolerance tolerance;
  // What the program column of a table shows: the path as written, or kernel(params).
  std::string programLabel;
};

struct Manifest {
  std::string path;        // the manifest file
  std::string goldenPath;  // "golden" field resolved, or MANIFEST.golden.json beside it
  std::string description;
  std::vector<Case> cases;
  const Case* find(const std::string& name) const;
};

// Reads and validates a manifest (every program file must exist, every kernel
// be registered, names unique). Throws ManifestError.
Manifest loadManifest(const std::string& path);
// The same from text; `path` names the file in errors and anchors relative paths.
Manifest parseManifest(const std::string& text, const std::string& path);

}  // namespace tpusim::batch
