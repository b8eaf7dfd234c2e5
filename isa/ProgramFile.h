// The .tpuprog container: one versioned, checksummed binary file holding a
// Program. Layout (all little-endian) in isa/README.md, ".tpuprog format".
//
// The reader trusts nothing: it checks the magic, version, ISA fingerprint,
// declared file size and checksum, then every section's offset and size,
// every count against the bytes left, every string length, every enum value,
// every cross reference (symbol and debug-map bundle numbers), and decodes
// every bundle. A bad file is rejected with a message naming the section,
// record and byte offset; it never crashes, hangs or allocates more than the
// file's size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Program.h"

namespace tpusim::isa {

constexpr char kProgramMagic[8] = {'T', 'P', 'U', 'P', 'R', 'O', 'G', '\0'};
constexpr uint16_t kProgramVersionMajor = 1;
// 1.0: seven sections; 1.1: an eighth, "signature" (written only when the
// program has one, so a file without it is still 1.0, byte for byte); 1.2:
// the code section also holds shared kernel bodies and their instances
// (written only when the program has them; isa/SharedCode.h).
constexpr uint16_t kProgramVersionMinor = 2;

// FNV-1a hash of the instruction-set tables (slots, operand kinds, opcodes and
// their slot-local numbers). A file records the fingerprint it was encoded
// with; a build with different tables refuses it instead of misdecoding it.
uint32_t isaFingerprint();

// What the header and section table say (for tpu-objdump --headers).
struct ProgramFileInfo {
  uint16_t versionMajor = 0, versionMinor = 0;
  uint64_t fileSize = 0;
  uint64_t checksum = 0;
  uint32_t isaFingerprint = 0;
  uint32_t bundleBytes = 0;
  struct Section {
    std::string name;
    uint32_t type = 0;
    uint64_t offset = 0, size = 0;
    uint32_t count = 0;  // records in the section
  };
  std::vector<Section> sections;
  // The code section (format 1.2 with shared bodies; else bundles == own).
  uint64_t bundles = 0;     // the program runs
  uint64_t ownBundles = 0;  // stored outside the bodies
  uint64_t bodies = 0, bodyBundles = 0, instances = 0, patches = 0;
};

struct ProgramReadOptions {
  // Off only in tests that fuzz the structural checks behind the checksum.
  bool verifyChecksum = true;
  // false: every bundle is decoded (and checked) but Program::code, bodies
  // and instances stay empty; the writer's read-back uses it (a big
  // program's decoded bundles take 8x its file size).
  bool keepCode = true;
};

// Serializes `p`. Returns false with *error when the program cannot be
// written: a bundle that does not encode, or anything the reader would reject
// (the bytes are read back before they are returned, unless `readBack` is
// false: for a caller that parses the bytes itself next, which checks the
// same and reports the same problem under its own name).
bool serializeProgram(const Program& p, std::vector<uint8_t>* out, std::string* error,
                      bool readBack = true);

// Parses a .tpuprog image; `name` prefixes error messages ("x.tpuprog: ...").
bool parseProgram(const uint8_t* data, size_t size, const std::string& name, Program* out,
                  std::string* error, ProgramFileInfo* info = nullptr,
                  const ProgramReadOptions& options = {});

bool readProgramFile(const std::string& path, Program* out, std::string* error,
                     ProgramFileInfo* info = nullptr);
bool writeProgramFile(const Program& p, const std::string& path, std::string* error);

}  // namespace tpusim::isa
