// Structural and shape checks of a module: every computation has a root,
// operands live in the same computation, no cycles, parameter numbers are
// dense, called computations are well formed, and each opcode's operand count,
// shapes and element types are consistent (elementwise, broadcast, reshape,
// transpose, dot, reduce, slice, concatenate, select, compare, convert,
// tuple/get-tuple-element, while/conditional/call, collectives, ...).
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/HloModule.h"

namespace tpusim::hlo {

struct VerifierResult {
  // One message per problem: "file:line: error: in %comp, instruction %x (add): ..."
  std::vector<std::string> errors;
  bool ok() const { return errors.empty(); }
  std::string message() const;  // all errors, one per line
};

VerifierResult verifyModule(const HloModule& module);

}  // namespace tpusim::hlo
