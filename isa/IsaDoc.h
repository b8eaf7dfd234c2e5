// The ISA reference (docs/isa-reference.md), generated from the tables so it
// can never disagree with the encoder. tpu-isa-doc prints it; a lit test fails
// when the committed copy is stale.
#pragma once

#include <string>

namespace tpusim::isa {

// The whole reference as Markdown.
std::string generateIsaReference();

}  // namespace tpusim::isa
