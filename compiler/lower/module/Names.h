// Names and element types of the program's buffer table, which is what
// `tpusim --input NAME=x.npy` and `--output-dir` use:
//   - an entry parameter is named by its metadata op_name (unescaped, e.g.
//     params['wq'] or tokens) when it has one, else by its instruction name
//     (Arg_0.1); a tuple-shaped parameter has one buffer per leaf, NAME.0, NAME.1;
//   - the entry root's arrays are "out" (a single array) or out.0, out.1, ...
//     (tuple elements, out.1.0 for nested tuples): the names `tpu-opt --evaluate`
//     gives its result files, so outputs of both tools compare file by file;
//   - constants keep their instruction names (role constant).
// A name already taken gets the instruction name, then ".2", ".3" appended.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "isa/Program.h"

namespace tpusim::lower {

// The buffer-table element type of an HLO element type (nullopt if the chip has none).
std::optional<isa::DType> bufferDType(hlo::PrimitiveType t);
// Why a type has no buffer type (for "cannot lower" messages).
std::string unsupportedBufferType(hlo::PrimitiveType t);

// `\'` -> `'`, `\"` -> `"`, `\\` -> `\` (metadata strings are kept escaped).
std::string unescapeMetadata(const std::string& text);

// The preferred buffer name of an entry parameter (before uniquing).
std::string parameterBufferName(const hlo::HloInstruction& parameter);

// "out", or "out.1.0" for the leaf at that tuple index.
std::string outputBufferName(const std::vector<int64_t>& tupleIndex);

// Hands out unique names.
class BufferNames {
 public:
  // `preferred` if free, else `fallback`, else fallback.2, fallback.3, ...
  std::string claim(const std::string& preferred, const std::string& fallback);

 private:
  std::set<std::string> taken_;
};

}  // namespace tpusim::lower
