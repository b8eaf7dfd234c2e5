// XProf's op categories from what the compiler knew about an op (its HLO
// opcode and, for a fusion, the opcodes inside), or, for a program without
// that knowledge (a .tpuprog or hand-written kernel), from its name and
// whether it ran the MXU.
#pragma once

#include <string>
#include <vector>

#include "sim/prof/Profile.h"

namespace tpusim::prof {

struct HloOpFacts {
  std::string opcode;                     // "fusion", "dot", "while", ...
  std::vector<std::string> fusedOpcodes;  // a fusion's members (nested fusions flattened)
};

Category categoryOf(const HloOpFacts& facts);
// Without facts: an HLO-style name ("dot.3", "copy.1", "while.2") by its
// opcode prefix; "fusion.N" by whether it used the MXU; anything else is a
// hand-written kernel.
Category categoryOfName(const std::string& name, bool usedMxu);

}  // namespace tpusim::prof
