// The error every lowering step throws for an instruction, opcode or dtype the
// back end cannot compile (never a crash): it names the instruction, its opcode
// and its metadata, as issue 7 asks:
//   cannot lower %fusion.3 (fusion) [op_name="jit(f)/mul" model.py:12]: f64 is not supported
// The op_name / source parts appear only when the metadata has them.
#pragma once

#include <stdexcept>
#include <string>

#include "compiler/hlo/HloInstruction.h"

namespace tpusim::lower {

class CannotLower : public std::runtime_error {
 public:
  // `inst` is the instruction being lowered (a fusion, or the unfused op).
  static CannotLower of(const hlo::HloInstruction& inst, const std::string& reason);
  // For an instruction inside a fused computation: the message names the
  // fusion (what the user sees in the module) and says which member failed.
  static CannotLower inFusion(const hlo::HloInstruction& fusion, const hlo::HloInstruction& member,
                              const std::string& reason);

  const std::string& instruction() const { return instruction_; }  // "fusion.3", no '%'
  const std::string& opcode() const { return opcode_; }
  const std::string& reason() const { return reason_; }

 private:
  CannotLower(std::string message, std::string instruction, std::string opcode, std::string reason)
      : std::runtime_error(std::move(message)),
        instruction_(std::move(instruction)),
        opcode_(std::move(opcode)),
        reason_(std::move(reason)) {}
  std::string instruction_, opcode_, reason_;
};

// The bracketed metadata part: `[op_name="..." file:line]`, or "" when the
// instruction has neither an op_name nor a source file.
std::string metadataSuffix(const hlo::HloInstruction& inst);

}  // namespace tpusim::lower
