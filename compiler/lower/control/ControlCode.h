// The module's own machine code between kernels, run by the scalar unit:
// HBM -> HBM copies (loop-carried values, outputs), a scalar read from HBM into
// a register (a loop predicate, a branch index), branches, labels and `mark`s.
//
// The code is straight-line between labels and branches, so it is scheduled
// here by a simple in-order model: a bundle is placed only once every register
// it reads or writes is ready (latencies from the preset), padding with empty
// bundles, and every register write has landed before a label, a branch or the
// end of a piece of code (`drain`). That makes it hazard-free under
// `tpusim --strict` without the kernel scheduler; sync waits on the module's
// own DMAs are the only stalls, and they are allowed ones.
//
// DMA descriptors are static (every address is known when compiling), so they
// sit in SMEM data segments of words this code reserves in the module.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "isa/Bundle.h"
#include "isa/DmaDescriptor.h"
#include "kernels/codegen/Link.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

// One instruction of hand-placed control code: `op` with its operands in order (registers,
// flags, queues and immediates as the opcode's operand list says).
isa::Instruction makeInstruction(isa::Opcode op, std::initializer_list<int64_t> operands);

class ControlCode {
 public:
  ControlCode(kernels::codegen::Module& module, const kernels::codegen::TargetInfo& target);

  // The index of the next bundle (after draining: a branch target).
  uint32_t label();
  // Opens a debug-map entry for the module's own code of `opName` (the HLO
  // instruction) and emits `mark` so the profiler attributes what follows to it;
  // `close` ends it at the current bundle. Returns the entry's index.
  size_t openOp(const std::string& opName, const std::string& hloInstruction,
                const std::string& sourceFile, uint32_t sourceLine);
  void closeOp(size_t entry);

  // Copies `bytes` from HBM `src` to HBM `dst` and waits for it (no-op when
  // src == dst or bytes == 0).
  void copyHbm(uint64_t src, uint64_t dst, uint64_t bytes, const std::string& what);
  // Loads the value at HBM `src` (`bytes` = 1 for pred, 4 for s32) into scalar
  // register `reg`, zero-extended: a DMA into a reserved SMEM word, then `sld`.
  void loadScalar(uint64_t src, int bytes, int reg, const std::string& what);
  // Branches: the target is patched later with `patch` (returns the bundle).
  uint32_t branchIfZero(int reg);
  uint32_t branchIfNonZero(int reg);
  uint32_t jump();
  // A zero-initialized SMEM word of the module's own (loop counters).
  int64_t reserveWord(const std::string& what);
  // SMEM[word] = value.
  void setWord(int64_t word, int64_t value, int scratch);
  // SMEM[word] -= 1, then br.nz to a target patched later (returns the branch bundle).
  uint32_t decrementAndBranchIfNonZero(int64_t word, int reg);
  // sd = (sa == imm) ? 1 : 0, through a scratch register.
  void compareEqualImm(int dst, int src, int64_t imm, int scratch);
  void patch(uint32_t branchBundle, uint32_t target);
  // Waits until every register this code wrote is ready (end of a piece of code).
  void drain();

  // For the SPMD collectives (compiler/lower/collectives): one bundle of
  // `ops`, placed once the registers they read are ready.
  void emit(const std::vector<isa::Instruction>& ops);
  // The descriptors of an HBM -> HBM copy (1 MiB rows and a remainder row).
  static std::vector<isa::DmaDescriptor> hbmCopyDescriptors(uint64_t src, uint64_t dst,
                                                            uint64_t bytes);
  // SMEM words of the module's own holding `values` (a data segment); returns the first.
  int64_t smemWords(const std::vector<uint32_t>& values, const std::string& what);
  // The chip's SMEM words (0: no size), and the first not yet reserved.
  int64_t smemCapacityWords() const { return m_.smemCapacityWords; }
  int64_t nextSmemWord() const { return m_.nextSmemWord(); }
  // The descriptors as consecutive SMEM data segments; returns the first word.
  int64_t descriptorWords(const std::vector<isa::DmaDescriptor>& descs, const std::string& what);

 private:
  int64_t latencyOf(isa::Opcode op) const;
  uint32_t emitBranch(isa::Instruction branch);

  kernels::codegen::Module& m_;
  const kernels::codegen::TargetInfo& target_;
  int64_t cycle_ = 0;           // issue cycle of the next bundle, if nothing stalls
  std::vector<int64_t> ready_;  // per scalar register: the cycle its value is readable
  int64_t scalarWord_ = -1;     // the SMEM word scalars are loaded through
};

}  // namespace tpusim::lower
