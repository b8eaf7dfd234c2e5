// HLO text -> HloModule(s), reading files exactly as JAX and XLA dump them:
// with or without an `HloModule` header, with or without ENTRY (then the last
// computation is the entry), several modules separated by `// -----` lines,
// `//` and `/* */` comments, operands with or without their shapes, names with
// or without `%`, and every attribute kind (unknown ones are kept verbatim).
//
// Errors are "file:line:col: error: message", then the source line and a caret.
// The parser never crashes, asserts or hangs, whatever the input.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::hlo {

struct ParseResult {
  std::vector<std::unique_ptr<HloModule>> modules;  // empty when there is an error
  std::string error;                                // "" on success
  bool ok() const { return error.empty(); }
};

// Parses every module of `text`; `fileName` is used in messages and recorded
// in each module's sourceFile().
ParseResult parseHloText(std::string_view text, const std::string& fileName = "<input>");
// Reads and parses a file ("-" reads stdin).
ParseResult parseHloFile(const std::string& path);
// Parses text holding exactly one module (error otherwise); null + error on failure.
std::unique_ptr<HloModule> parseHloModule(std::string_view text, std::string* error,
                                          const std::string& fileName = "<input>");
// Parses a shape alone, e.g. "f32[2,3]{1,0}". Returns false and sets *error on failure.
bool parseShape(std::string_view text, Shape* shape, std::string* error);

}  // namespace tpusim::hlo
