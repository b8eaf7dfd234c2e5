// The module header's input_output_alias: which entry parameters the caller
// donates to which outputs (JAX's donate_argnums), as XLA prints it:
//   input_output_alias={ {1}: (2, {}, may-alias), {2}: (3, {}, may-alias) }
// Output {1} may live in parameter 2's buffer. Only whole-parameter aliases
// (parameter index {}) are kept; an alias of a parameter's tuple element is
// ignored (aliasing is an optimization the program stays correct without),
// but malformed text or a parameter the entry does not have is an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::lower {

struct InputOutputAlias {
  std::vector<int64_t> outputIndex;  // tuple index path of the output ({} = the whole result)
  int64_t parameter = -1;            // entry parameter number
};

// The aliases of `module`'s header; throws std::invalid_argument naming the
// text when the attribute is present but malformed.
std::vector<InputOutputAlias> inputOutputAliases(const hlo::HloModule& module);

// The parameter donated to output `outputIndex`, if any.
std::optional<int64_t> donatedParameter(const std::vector<InputOutputAlias>& aliases,
                                        const std::vector<int64_t>& outputIndex);

}  // namespace tpusim::lower
