// Assembly text -> Program. The grammar is documented in isa/README.md
// ("Assembly language"); the disassembler (Disassembler.h) prints the same
// grammar, so assemble(disassemble(p)) reproduces p.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "isa/Program.h"

namespace tpusim::isa {

// One error, located in the source. formatDiagnostic prints it like clang:
//   file:line:col: error: message
//   <the source line>
//          ^
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 = no location
  int column = 0;  // 1-based byte column; 0 = the whole line
  std::string message;
  std::string sourceLine;
};
std::string formatDiagnostic(const Diagnostic& d);

struct AssemblerOptions {
  // Numeric branch targets must name a bundle of the program. Off for
  // assembling lone bundles (tests), where any 32-bit target is accepted.
  bool checkTargets = true;
  // Stop after this many errors (a last diagnostic says so).
  int maxErrors = 20;
};

// Assembles `source` (named `fileName` in diagnostics). Returns true and sets
// *out when there is no error; otherwise returns false and appends every error
// found (up to options.maxErrors) to *diagnostics.
bool assemble(std::string_view source, const std::string& fileName, Program* out,
              std::vector<Diagnostic>* diagnostics, const AssemblerOptions& options = {});

// Convenience for one bundle written on one line (no labels; targets are
// numbers): returns false and sets *error to the first formatted diagnostic.
bool assembleBundle(std::string_view line, Bundle* out, std::string* error);

}  // namespace tpusim::isa
