// Structural and type checks of the kernel IR: every operand defined before its
// use and in scope, operand counts and types per op, ref memory spaces, static
// bounds where indices are constants, matmul dtypes and shapes, block mappings.
#pragma once

#include <string>
#include <vector>

#include "kernels/llo/Ir.h"

namespace tpusim::kernels::llo {

// Each problem is one line: "<file>:<line>: <op text>: <what is wrong>".
std::vector<std::string> verifyFunction(const Function& fn);
std::vector<std::string> verifyKernel(const Kernel& k);

}  // namespace tpusim::kernels::llo
