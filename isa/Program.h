// A program: the in-memory form of a .tpuprog file. The assembler and the
// kernel code generator build one; the simulator runs one; ProgramFile.h reads
// and writes it (versioned, validated binary container, see isa/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/Bundle.h"
#include "isa/DmaDescriptor.h"

namespace tpusim::isa {

// New types go at the end: the numbers are stored in .tpuprog files. 64-bit
// integers are stored little-endian as in .npy, i.e. each element a pair of
// 32-bit words (low word first); kernels compute on the two words separately.
enum class DType : uint8_t { F32, Bf16, S32, S8, U8, S16, U16, Pred, F16, U32, S64, U64 };
constexpr int kNumDTypes = 12;
// "f32", "bf16", "s32", "s8", "u8", "s16", "u16", "pred", "f16", "u32", "s64", "u64"
const char* dtypeName(DType t);
int dtypeBytes(DType t);  // bytes per element (pred: 1)
bool dtypeFromName(const std::string& name, DType* out);

enum class BufferRole : uint8_t { Input, Output, Scratch, Constant };
constexpr int kNumBufferRoles = 4;
const char* bufferRoleName(BufferRole r);  // "input", "output", "scratch", "constant"
bool bufferRoleFromName(const std::string& name, BufferRole* out);

// A named tensor the program reads or writes. Inputs are filled (from .npy or
// random data) before the run; outputs are written out after it.
struct BufferDesc {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  MemorySpace space = MemorySpace::Hbm;
  uint64_t address = 0;  // bytes (VMEM: byte address = row * 512)
  uint64_t sizeBytes = 0;
  BufferRole role = BufferRole::Scratch;
  // Layout in memory: dense row-major (C order) when pairRows is 0. pairRows
  // = S > 0 (an s8 [K, N] HBM input, K a multiple of 2S, N of 128): the
  // packed, tiled int8 weight layout `mxu.wpush.s8x2` reads, as the chip
  // keeps int8 weights in tiles. Rows go in chunks of 2S, each chunk's
  // columns in tiles of 128, chunk after chunk, tile after tile; a tile is S
  // rows of 128 16-bit pairs, pair (r, l) of tile t in chunk c holding element
  // (2Sc + r, 128t + l) in its low byte and (2Sc + S + r, 128t + l) in its
  // high byte. A DMA widening 16-bit elements (no pair mode) then delivers a
  // paired weight block as one sequential HBM stream per chunk. The bytes are
  // the dense array's, reordered: the host converts (packBuffer / unpackBuffer).
  uint32_t pairRows = 0;
};
constexpr uint64_t kPairLayoutLanes = 128;  // columns per tile of the packed layout

// Whether `b` may have the packed layout its pairRows names; on false sets *why.
bool pairLayoutValid(const BufferDesc& b, std::string* why);
// Dense row-major bytes of `b` in its memory layout, and back (identity for
// pairRows 0). The sizes are the shape's dense bytes.
std::vector<uint8_t> packBuffer(const BufferDesc& b, const std::vector<uint8_t>& dense);
std::vector<uint8_t> unpackBuffer(const BufferDesc& b, const std::vector<uint8_t>& stored);

// Buffers must not overlap, except an input and an output with the same space,
// address and size: an input the caller donated to the output the program
// writes in place (XLA's input_output_alias), read in before and out after.
bool buffersOverlap(const BufferDesc& a, const BufferDesc& b);

// Initial memory contents (constants, DMA descriptors in SMEM, ...).
struct DataSegment {
  MemorySpace space = MemorySpace::Smem;
  uint64_t address = 0;  // bytes
  std::vector<uint8_t> bytes;
};

// A named entry point (a kernel's first bundle).
struct Symbol {
  std::string name;
  uint32_t bundle = 0;
};

// Bundles [begin, end) belong to op `opName` (kernel name or HLO instruction),
// with the source it came from. The `mark` instruction's immediate indexes this table.
struct DebugEntry {
  uint32_t begin = 0, end = 0;
  std::string opName;
  std::string hloInstruction;  // empty for hand-written kernels
  std::string sourceFile;
  uint32_t sourceLine = 0;
};

// Static cost of an op, for the roofline.
struct CostEntry {
  std::string opName;
  double flops = 0;
  uint64_t hbmBytesRead = 0, hbmBytesWritten = 0;
  uint64_t vmemBytesRead = 0, vmemBytesWritten = 0;
};

// The calling convention of a program compiled from an HLO module (tpuc
// writes it, tpu-as does not): which entry parameter and which part of the
// result each input and output buffer holds, so a tool given only the
// .tpuprog can feed and read it as the module's entry would be called.
// Stored in the optional "signature" section (isa/README.md).
struct SignatureLeaf {
  std::vector<int64_t> index;  // tuple index path within the value ({} = the value itself)
  std::string buffer;          // the input/output buffer holding this array
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
};

struct SignatureParameter {
  std::string name;  // the HLO instruction name (Arg_0.1); parameter number = position
  std::string type;  // the HLO shape, tuples included: "(f32[2,3], s32[])"
  std::vector<SignatureLeaf> leaves;  // its array leaves, in order
};

// input_output_alias: output `outputIndex` may live in (a part of) parameter
// `parameter`'s buffer: the caller donates that input.
struct SignatureAlias {
  std::vector<int64_t> outputIndex;
  int64_t parameter = 0;
  std::vector<int64_t> parameterIndex;
};

struct ProgramSignature {
  std::string module;  // the HLO module's name
  std::vector<SignatureParameter> parameters;
  std::string resultType;              // the entry root's HLO shape
  std::vector<SignatureLeaf> results;  // the result's array leaves, in order
  std::vector<SignatureAlias> aliases;
  // Devices the program was compiled for (an SPMD module: every chip runs it,
  // chip.id selects its part); 1 for a single chip.
  int64_t devices = 1;
};

// Code shared between kernel instances (format 1.2; isa/SharedCode.h). The
// layers of a model run the same kernels, differing in a few operands (branch
// targets, SMEM addresses, debug-map numbers): each kernel's code is stored
// once as a body, and every place that runs it as an instance that names the
// body and the operands that differ.
struct SharedBody {
  std::vector<Bundle> code;
};

// Operand `operand` of the op in slot instance `slot` of body bundle `bundle`
// holds `value` in this instance (the value as the decoder returns it).
struct CodePatch {
  uint32_t bundle = 0;
  uint8_t slot = 0, operand = 0;
  int64_t value = 0;
  bool operator==(const CodePatch& o) const {
    return bundle == o.bundle && slot == o.slot && operand == o.operand && value == o.value;
  }
};

// Bundles [at, at + body size) of the program are body `body` with `patches`
// applied (sorted by bundle, slot, operand; at most one per operand).
struct BodyInstance {
  uint32_t at = 0;
  uint32_t body = 0;
  std::vector<CodePatch> patches;
};

struct Program {
  std::string chip;  // preset the program was built for ("" = any)
  // The bundles, in order. With shared bodies (`instances` not empty) only
  // those outside every instance, in order: instance i's bundles sit at
  // instances[i].at, the bundles of `code` fill the other positions.
  // isa/SharedCode.h counts, walks and flattens both forms.
  std::vector<Bundle> code;
  std::vector<SharedBody> bodies;
  std::vector<BodyInstance> instances;  // sorted by `at`, not overlapping
  std::vector<DataSegment> data;
  std::vector<BufferDesc> buffers;
  std::vector<Symbol> symbols;
  std::vector<DebugEntry> debugMap;
  std::vector<CostEntry> costs;
  bool hasSignature = false;  // programs from tpu-as have none
  ProgramSignature signature;
};

}  // namespace tpusim::isa
