// Bundle / Program -> assembly text in the grammar the assembler reads
// (isa/README.md, "Assembly language"), so that assembling the output gives
// the same bundles byte for byte and, for a whole program, the same .tpuprog.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "isa/Program.h"

namespace tpusim::isa {

// Names a branch target; return "" to print the bundle number.
using TargetNamer = std::function<std::string(uint32_t bundle)>;

// "vadd.f32 v1, v2, v3"; targets printed by `namer` when given.
std::string disassembleInstruction(const Instruction& inst, const TargetNamer& namer = nullptr);

// One bundle on one line: the ops in slot order separated by " ;; ", an
// explicit "@valuN " slot prefix only on an op that auto-placement would put
// elsewhere (a lower slot of its kind is empty); "nop" for an empty bundle.
std::string disassembleBundle(const Bundle& b, const TargetNamer& namer = nullptr);

struct DisassemblyOptions {
  bool chip = true;     // .chip
  bool buffers = true;  // .buffer
  // The entry signature, as comments (the assembler does not read it back:
  // a program reassembled from a listing has none).
  bool signature = true;
  bool data = true;      // .data / .words / .bytes / .dma_descriptor
  bool symbols = true;   // .symbol NAME, BUNDLE
  bool debugMap = true;  // .op NAME, begin=, end=, ...
  bool costs = true;     // .cost
  bool code = true;      // the bundles, with labels
  // In the code: a "// op ..." comment where a debug-map range starts and
  // the bundle number after each bundle.
  bool annotate = true;
};

// The program as assembly text. With every section on, tpu-as reads the
// output back into the same Program, except for the signature (comments).
std::string disassembleProgram(const Program& p, const DisassemblyOptions& options = {});

}  // namespace tpusim::isa
