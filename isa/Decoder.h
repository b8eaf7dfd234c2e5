// Bytes -> Bundle, driven by the tables. Only the canonical encoding that
// encode() produces is accepted, so encode(decode(x)) == x for every x that
// decodes; anything else is an error naming the slot and the field: an unknown
// slot-local opcode, nonzero bits in unused fields or padding, a shared
// immediate index that skips a field or repeats an earlier value, a nonzero
// unused immediate field.
#pragma once

#include <cstdint>
#include <string>

#include "isa/Bundle.h"
#include "isa/Encoder.h"  // IsaError

namespace tpusim::isa {

// Decodes kBundleBytes bytes at `bytes` into *out (every slot written).
// Returns false and sets *error on an invalid encoding; *out is then partly
// written.
bool tryDecode(const uint8_t* bytes, Bundle* out, std::string* error);

// Same, throwing IsaError.
Bundle decode(const EncodedBundle& bytes);

}  // namespace tpusim::isa
