// The kernel IR ("LLO"): SSA values in virtual registers, operations close to
// the ISA, structured loops and conditionals, and the kernel: a Pallas-style
// call (grid, block mappings, body) around one body function.
// The DSL builds it by tracing, interpret mode runs it, codegen lowers it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/llo/Types.h"

namespace tpusim::kernels::llo {

enum class OpKind : uint8_t {
#define LLO_OP(e, name, operands, results, attrs) e,
#include "kernels/llo/Ops.def"
};
const char* opKindName(OpKind k);

// Scalar binary ops (wrapping 32-bit; Div/Rem truncate toward zero; compares give 0/1).
enum class ScalarBin : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Min,
  Max,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge
};
// `a k b` as the machine computes it; no value for a division by zero.
// INT32_MIN / -1 wraps (INT32_MIN, remainder 0).
std::optional<int32_t> evalScalarBin(ScalarBin k, int32_t a, int32_t b);
// Element-wise tile ops; f32 follows IEEE RNE, s32 wraps (see isa/Opcodes.def).
enum class VecBin : uint8_t { Add, Sub, Mul, Max, Min, And, Or, Xor, Shl, Shr, Sra };
// RoundBf16: an f32 rounded to bf16 precision, kept as f32 (vrnd.bf16.f32).
enum class VecUn : uint8_t { Abs, Neg, Exp, Log, Rsqrt, Rcp, Tanh, Sqrt, RoundBf16 };
enum class Cmp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
enum class Reduce : uint8_t { Sum, Max };
enum class DimSemantics : uint8_t { Parallel, Arbitrary };

const char* scalarBinName(ScalarBin k);
const char* vecBinName(VecBin k);
const char* vecUnName(VecUn k);
const char* cmpName(Cmp k);
const char* reduceName(Reduce k);
const char* dimSemanticsName(DimSemantics d);

// Where the DSL call that made an op is (filled from __builtin_FILE/LINE).
struct SourceLoc {
  std::string file;
  int line = 0;
  bool known() const { return line > 0; }
};

struct Op;

struct Value {
  int id = -1;  // unique within its function; printed as %id
  Type type;
  Op* def = nullptr;  // null for function and region arguments
  std::string hint;   // a readable name for the printer ("x", "acc", "i")
};

struct Block {
  std::vector<Value*> args;
  std::vector<std::unique_ptr<Op>> ops;
};

struct Op {
  OpKind kind;
  std::vector<Value*> operands;
  std::vector<Value*> results;
  std::vector<int64_t> ints;  // attributes, meaning per kind (Ops.def)
  DType dtype = DType::S32;   // VConst/VSplat/VCast: element type of the result
  std::vector<Block> regions;
  SourceLoc loc;
  // VPU work a later MXU matmul of its block may overlap (a dot's computed
  // LHS, DotOptions::lhs_by_columns): the scheduler does not hold the
  // matmul back behind it (codegen/Scheduler.cpp). Not printed: the DSL sets
  // it the same way for the same IR.
  bool overlap = false;

  Value* result() const { return results.empty() ? nullptr : results[0]; }
};

// A function: arguments and a body. The kernel body and every index map is one.
struct Function {
  std::string name;
  Block body;
  std::deque<Value> values;  // owns every value of the function (stable addresses)

  Value* newValue(Type t, std::string hint = "");
  Value* addArg(Type t, std::string hint = "");
};

// Operand positions of ops whose operands include ref views.
struct ViewRange {
  Value* ref;
  std::vector<Value*> indices;
};
// For Matmul / DmaStart / DmaWait: the views in operand order (a matmul's
// dst, lhs, rhs, its scale row if scaled, then its sum epilogue's addends);
// RemoteDmaStart: src, dst, send sem, recv sem; SemSignal / SemWait: the sem.
std::vector<ViewRange> opViews(const Op& op);
// A Matmul whose s8 weights are scaled per column (ints[9], Ops.def): its
// views[3] is the scale row and the addends start at view 4.
bool matmulScaled(const Op& op);
size_t matmulFirstAddend(const Op& op);
// A Matmul's LHS diagonal blocks G (ints[10], Ops.def; 1 when absent): the
// lhs view is M / G rows, and row block g of the M x K LHS is those rows with
// every K column outside [g K / G, (g + 1) K / G) zero.
int64_t matmulLhsDiagonalBlocks(const Op& op);
// The device operand of a RemoteDmaStart or a remote SemSignal, else null.
Value* remoteDevice(const Op& op);

// How one array operand of a kernel is presented to the body (Pallas BlockSpec).
struct BlockMapping {
  // Vmem: blocks copied in and out by the pipeline. Smem: the whole array in
  // SMEM. Hbm (Pallas ANY): the body gets the HBM ref and copies itself.
  MemSpace space = MemSpace::Vmem;
  std::vector<int64_t> blockShape;     // Vmem only; same rank as the array
  std::unique_ptr<Function> indexMap;  // args: grid ids, then prefetch refs; returns block indices
  int buffers = 2;                     // Buffered(n)
  SourceLoc loc;
};

struct ArrayOperand {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // inputs only: a strided view of its buffer (llo::Type::strides)
  // Inputs only: S > 0 when the buffer is in the packed s8x2 HBM layout
  // (isa::BufferDesc::pairRows; tpuc's choice); the body must read it as
  // PairPack.h's paired weights with blocks of whole 2S-row chunks.
  int64_t pairRows = 0;

  Type hbmType() const { return Type::ref(MemSpace::Hbm, dtype, shape, strides); }
  // The shape of the buffer behind the array: `shape` with a strided view's
  // dims in memory order (largest stride first).
  std::vector<int64_t> bufferShape() const;
};

// One pallas_call. Body arguments, in order: scalar-prefetch refs (SMEM),
// the other inputs, the outputs (as the block mappings present them), scratch refs.
struct Kernel {
  std::string name;
  SourceLoc loc;
  std::vector<int64_t> grid;
  std::vector<DimSemantics> semantics;
  int numScalarPrefetch = 0;           // the first inputs; they are also index-map arguments
  int64_t tailStepsWithoutInputs = 0;  // dsl::CompilerParams::tail_steps_without_inputs
  int64_t scheduleLookahead = 0;       // dsl::CompilerParams::schedule_lookahead
  std::vector<ArrayOperand> inputs, outputs;
  std::vector<BlockMapping> inMaps, outMaps;  // inMaps covers the non-prefetch inputs
  std::vector<Type> scratch;
  std::vector<std::pair<int, int>> aliases;  // (input index, output index)
  std::unique_ptr<Function> body;

  int64_t gridPoints() const;
};

// Appends ops at an insertion point; every op gets the builder's current location.
class Builder {
 public:
  Builder(Function* fn, Block* block) : fn_(fn), block_(block) {}
  Function* function() const { return fn_; }
  Block* block() const { return block_; }
  void setBlock(Block* b) { block_ = b; }
  void setLoc(SourceLoc loc) { loc_ = std::move(loc); }
  const SourceLoc& loc() const { return loc_; }
  // Ops created while set are marked Op::overlap.
  void setOverlap(bool on) { overlap_ = on; }
  bool overlap() const { return overlap_; }

  // Creates an op with the given result types (values are made here).
  Op* create(OpKind kind, std::vector<Value*> operands, std::vector<Type> resultTypes,
             std::vector<int64_t> ints = {}, DType dtype = DType::S32);

  Value* sconst(int64_t v);
  Value* sbin(ScalarBin k, Value* a, Value* b);
  Value* vbin(VecBin k, Value* a, Value* b);
  Value* vun(VecUn k, Value* a);
  Value* vconst(uint32_t bits, DType d);
  Value* vcast(Value* a, DType to);
  // The same 32-bit lanes seen as another tile dtype (no instruction).
  Value* vbitcast(Value* a, DType to);
  // A counted loop; returns the op, whose region 0 has the induction variable
  // as argument, then one argument per carried value (i32, tile or mask; the
  // types of `inits`). A loop that carries values ends its region with a
  // yield of the next values; its results are the values after the last trip
  // (`inits` when it runs zero times).
  Op* forLoop(Value* lower, Value* upper, int64_t step, const std::string& ivHint = "i",
              const std::vector<Value*>& inits = {});
  Op* ifOp(Value* cond, bool withElse);

 private:
  Function* fn_;
  Block* block_;
  SourceLoc loc_;
  bool overlap_ = false;
};

}  // namespace tpusim::kernels::llo
