// What the compiler knew about an .hlo program that the profiler
// (sim/prof) cannot see in the program itself: each instruction's opcode and
// a fusion's members (for XProf's op categories), and the entry's HBM buffer
// assignment (for the memory viewer).
#pragma once

#include "compiler/driver/CompileHlo.h"
#include "sim/prof/BuildProfile.h"

namespace tpusim::sim {

// Fills inputs->hloOps and inputs->memory from a successful compile.
void addHloProfileFacts(const driver::CompileResult& compiled, prof::ProfileInputs* inputs);

}  // namespace tpusim::sim
