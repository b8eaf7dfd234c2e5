// An HLO op_name in the few words a profile shows, and folded across layers:
//   "jit(f)/jit(main)/layers_3/ffn/dot_general[dimension_numbers=...]"
//     -> clean "layers_3/ffn/dot_general", folded "layers_*/ffn/dot_general", layer 3.
#pragma once

#include <cstdint>
#include <string>

namespace tpusim::prof {

// Without the jit(...) scopes JAX puts in front and the primitive's parameters.
std::string cleanOpName(const std::string& opName);

struct FoldedName {
  std::string folded;
  int64_t layer = -1;  // the first layers_N scope's N, -1 if none
};
// Every "layers_N" scope becomes "layers_*".
FoldedName foldLayers(const std::string& cleanName);

}  // namespace tpusim::prof
