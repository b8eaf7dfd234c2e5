// The lexical conventions the assembler reads and the disassembler writes, in
// one place so the two cannot drift apart: identifiers, quoted strings,
// integer and float literals, and how a 32-bit immediate is printed so that it
// reads back to the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim::isa::syntax {

// [A-Za-z_.$][A-Za-z0-9_.$]*, not starting with '.' followed by a digit.
bool isIdentifier(std::string_view s);

// "name" as is when it is an identifier, else a quoted string with escapes
// (\\, \", \n, \t, \xHH for other bytes outside printable ASCII).
std::string quoteIfNeeded(std::string_view s);
std::string quote(std::string_view s);

// [+-]? (0x[0-9a-fA-F]+ | [0-9]+) that fits int64. Returns false otherwise.
bool parseInteger(std::string_view s, int64_t* out);

// Float literal syntax: [+-]? (digits with '.' and/or an exponent | inf | nan),
// e.g. 1.5, -2e-3, .5, 3., inf, -nan. Hex numbers are integers, never floats.
bool isFloatLiteral(std::string_view s);
// The f32 bits of a float literal, correctly rounded (nan: 0x7FC00000,
// -nan: 0xFFC00000). Returns false on a malformed literal or one that
// overflows to infinity without being "inf".
bool parseFloatLiteral(std::string_view s, uint32_t* bits);

// A 32-bit immediate as the disassembler prints it; parses back to `bits`:
//   signed value in [-65536, 65536]   -> decimal ("-1", "4096")
//   inf, -inf, the canonical NaN      -> "inf", "-inf", "nan"
//   a normal f32 with 1e-6 <= |x| <= 1e9 whose shortest round-trip decimal
//   has at most 7 significant digits  -> that float literal ("1.5", "-0.125")
//   anything else                      -> hex ("0x3f800001", "0x80000000")
std::string formatImm32(uint32_t bits);

// Shortest decimal that reads back (strtod) to exactly `v`.
std::string formatDouble(double v);

}  // namespace tpusim::isa::syntax
