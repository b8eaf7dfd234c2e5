// Text form of the kernel IR, for tests and `--dump`. One op per line, regions
// indented, values as %N (N = the value's id in its function).
#pragma once

#include <string>

#include "kernels/llo/Ir.h"

namespace tpusim::kernels::llo {

std::string printFunction(const Function& fn);
std::string printKernel(const Kernel& k);
std::string printOp(const Op& op);  // one op (and its regions), no trailing newline

}  // namespace tpusim::kernels::llo
