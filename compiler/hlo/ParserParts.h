// Internal to the parser: the pieces HloParser.cpp assembles (shapes,
// literals, attributes), each in its own file.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/HloInstruction.h"
#include "compiler/hlo/ParseCursor.h"

namespace tpusim::hlo {

// True if a shape starts here: '(' or an element type name followed by '['.
bool looksLikeShape(ParseCursor& c);
// f32[2,3]{1,0:T(8,128)}, (s32[], f32[4]), token[] ...
bool parseShapeAt(ParseCursor& c, Shape* shape);
// The value inside constant(...), checked against `shape`.
bool parseLiteralAt(ParseCursor& c, const Shape& shape, Literal* literal);

// Names of called computations, resolved once every computation is known:
// attrs.calls[callIndex].computations[i] is the computation named names[i].
struct PendingCalls {
  size_t callIndex = 0;
  std::vector<std::pair<std::string, size_t>> names;  // name, position
};

// Parses the value of attribute `key` (the cursor is after '=') into `attrs`.
bool parseAttributeValue(ParseCursor& c, const std::string& key, size_t keyPos, HloOpcode opcode,
                         HloInstruction::Attributes* attrs, std::vector<PendingCalls>* calls);

}  // namespace tpusim::hlo
