#include "compiler/lower/CannotLower.h"

#include <fmt/format.h>

namespace tpusim::lower {

std::string metadataSuffix(const hlo::HloInstruction& inst) {
  const hlo::OpMetadata& m = inst.attrs().metadata;
  std::string parts;
  if (!m.opName.empty()) parts = fmt::format("op_name=\"{}\"", m.opName);
  if (!m.sourceFile.empty()) {
    if (!parts.empty()) parts += ' ';
    parts += m.sourceFile;
    if (m.sourceLine) parts += fmt::format(":{}", *m.sourceLine);
  }
  return parts.empty() ? "" : " [" + parts + "]";
}

CannotLower CannotLower::of(const hlo::HloInstruction& inst, const std::string& reason) {
  std::string opcode(hlo::opcodeName(inst.opcode()));
  std::string msg =
      fmt::format("cannot lower %{} ({}){}: {}", inst.name(), opcode, metadataSuffix(inst), reason);
  return CannotLower(std::move(msg), inst.name(), opcode, reason);
}

CannotLower CannotLower::inFusion(const hlo::HloInstruction& fusion,
                                  const hlo::HloInstruction& member, const std::string& reason) {
  if (&fusion == &member) return of(fusion, reason);
  return of(fusion, fmt::format("%{} ({}){}: {}", member.name(), hlo::opcodeName(member.opcode()),
                                metadataSuffix(member), reason));
}

}  // namespace tpusim::lower
