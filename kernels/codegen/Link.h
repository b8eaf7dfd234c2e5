// Linking compiled kernels into one program (what the HLO compiler does with
// one kernel per fusion).
//
// Each kernel is compiled for its place in the module:
//
//   codegen::Module m;
//   CompileOptions o;
//   o.standalone = false;                       // no halt, no buffer table
//   o.inputAddresses = {xAddr};                 // the caller's HBM buffer assignment
//   o.outputAddresses = {yAddr};
//   o.firstBundle = m.nextBundle();             // branch targets absolute in the module
//   o.smemBase = m.nextSmemWord();              // SMEM words no other kernel uses
//   appendKernel(m, compileKernel(kernel, target, o));
//   ... more kernels (or the caller's own bundles appended to m.program.code) ...
//   isa::Program prog = finishModule(m, {xBuffer, yBuffer});   // final halt + buffer table
//
// Why this is enough: a non-standalone kernel waits for every DMA it started
// before its last bundle, so sync flags are back at zero, its outputs are in
// HBM, and the next kernel may reuse every VMEM row and flag. SMEM is not
// shared: a kernel's data segments (DMA descriptor templates) are loaded
// before the run starts and written while it runs, so each kernel owns a
// disjoint SMEM range. Scalar and vector registers hold nothing across
// kernels.
//
// appendKernel appends the code (checking it was compiled for
// firstBundle == the current code size), the SMEM data segments (inside the
// kernel's range, disjoint from every range linked before), the symbol, the
// debug-map entries (with the kernel's `mark` immediates renumbered to the
// entries' new indices) and the cost entries. Errors are LinkError naming the
// kernel and the field.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "isa/Program.h"
#include "kernels/codegen/Compile.h"

namespace tpusim::kernels::codegen {

class LinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Module {
  isa::Program program;
  // SMEM words [begin, end) owned by each linked kernel (or reserved by the
  // caller with reserveSmem), with who owns them, for overlap errors.
  struct SmemRange {
    int64_t begin = 0, end = 0;
    std::string owner;
  };
  std::vector<SmemRange> smem;
  // The chip's SMEM size in words (core.smem_bytes / 4): a range past it is a
  // LinkError naming who needs how much, instead of a program the simulator
  // refuses to load. 0: no limit (tests that link without a chip).
  int64_t smemCapacityWords = 0;
  bool finished = false;

  // Store repeated kernels as instances of shared bodies (isa/SharedCode.h):
  // a kernel of at least kMinSharedBundles bundles whose every slot holds the
  // opcode of an earlier body's is stored as that body plus the operands that
  // differ (its branch targets, SMEM addresses, debug-map numbers), when at
  // most half its bundles differ. A kernel like that of an earlier kernel
  // stored plain turns that one into a body (so a kernel that never repeats
  // stays plain code); up to kMaxBodiesPerShape bodies per opcode layout. The
  // program runs the same bundles at the same places either way. Off by
  // default (the module lowerer turns it on; tpuc --no-shared-code).
  bool shareCode = false;
  static constexpr size_t kMinSharedBundles = 16;
  static constexpr size_t kMaxBodiesPerShape = 4;
  uint64_t instanceBundles = 0;  // bundles in program.instances
  // Opcode-layout hash -> bodies, and -> first bundles of kernels stored
  // plain that a repeat would turn into bodies.
  std::unordered_map<uint64_t, std::vector<uint32_t>> bodiesByShape, plainByShape;

  // Where the next kernel's code starts: CompileOptions::firstBundle.
  uint32_t nextBundle() const { return uint32_t(program.code.size() + instanceBundles); }
  // The caller's own bundle `pc` (appended to program.code), to patch it.
  isa::Bundle& ownBundle(uint32_t pc);
  // The first SMEM word after every range so far: CompileOptions::smemBase.
  int64_t nextSmemWord() const;
};

// Reserves SMEM words for the caller's own data (loop counters, constants)
// and returns the first one.
int64_t reserveSmem(Module& m, int64_t words, const std::string& owner);

void appendKernel(Module& m, const CompiledKernel& kernel);

// Appends the final `halt` (it waits for every outstanding DMA and MXU result)
// and the buffer table, checks that buffers of one space do not overlap and
// that every branch target is inside the code, and returns the program.
// The module cannot be appended to afterwards.
isa::Program finishModule(Module& m, std::vector<isa::BufferDesc> buffers);

}  // namespace tpusim::kernels::codegen
