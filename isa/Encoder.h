// Bundle -> bytes. The layout is the one Isa.h derives from the tables; the
// encoder has no per-opcode code.
//
// Shared immediates: the Imm32 and Target operands of a bundle are stored in
// the kNumSharedImms 32-bit fields after the slots; each such operand's slot
// field holds the index of its value. Allocation is canonical, so a bundle has
// exactly one encoding: values are taken in slot order (then operand order),
// equal values share one field, fields are filled from 0, and unused fields
// are zero. More than kNumSharedImms distinct values is an error.
#pragma once

#include <stdexcept>
#include <string>

#include "isa/Bundle.h"

namespace tpusim::isa {

// Thrown by the throwing forms of encode/decode (encode, decode).
class IsaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Encodes `b` into `*out`. On an invalid bundle (an opcode in the wrong slot,
// an operand out of range, too many distinct immediates) returns false and
// sets *error to a message naming the slot and operand.
bool tryEncode(const Bundle& b, EncodedBundle* out, std::string* error);

// Same, throwing IsaError on an invalid bundle.
EncodedBundle encode(const Bundle& b);

// The canonical shared-immediate values of `b` (see above); returns how many
// there are, or -1 (with *error set) when there are more than kNumSharedImms.
int allocateSharedImmediates(const Bundle& b, std::array<uint32_t, kNumSharedImms>* values,
                             std::string* error);

}  // namespace tpusim::isa
