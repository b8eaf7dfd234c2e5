// Every HLO opcode the text format may hold, with its spelling in HLO text.
// An opcode name not in this list is a parse error (file:line:col).
#pragma once

#include <optional>
#include <string_view>

namespace tpusim::hlo {

// V(EnumName, "text-name")
#define TPUSIM_HLO_OPCODE_LIST(V)                       \
  V(Abs, "abs")                                         \
  V(Add, "add")                                         \
  V(AddDependency, "add-dependency")                    \
  V(AfterAll, "after-all")                              \
  V(AllGather, "all-gather")                            \
  V(AllGatherStart, "all-gather-start")                 \
  V(AllGatherDone, "all-gather-done")                   \
  V(AllReduce, "all-reduce")                            \
  V(AllReduceStart, "all-reduce-start")                 \
  V(AllReduceDone, "all-reduce-done")                   \
  V(AllToAll, "all-to-all")                             \
  V(And, "and")                                         \
  V(AsyncStart, "async-start")                          \
  V(AsyncUpdate, "async-update")                        \
  V(AsyncDone, "async-done")                            \
  V(Atan2, "atan2")                                     \
  V(BatchNormGrad, "batch-norm-grad")                   \
  V(BatchNormInference, "batch-norm-inference")         \
  V(BatchNormTraining, "batch-norm-training")           \
  V(Bitcast, "bitcast")                                 \
  V(BitcastConvert, "bitcast-convert")                  \
  V(Broadcast, "broadcast")                             \
  V(Call, "call")                                       \
  V(Cbrt, "cbrt")                                       \
  V(Ceil, "ceil")                                       \
  V(Cholesky, "cholesky")                               \
  V(Clamp, "clamp")                                     \
  V(CollectiveBroadcast, "collective-broadcast")        \
  V(CollectivePermute, "collective-permute")            \
  V(CollectivePermuteStart, "collective-permute-start") \
  V(CollectivePermuteDone, "collective-permute-done")   \
  V(Compare, "compare")                                 \
  V(Complex, "complex")                                 \
  V(Concatenate, "concatenate")                         \
  V(Conditional, "conditional")                         \
  V(Constant, "constant")                               \
  V(Convert, "convert")                                 \
  V(Convolution, "convolution")                         \
  V(Copy, "copy")                                       \
  V(CopyStart, "copy-start")                            \
  V(CopyDone, "copy-done")                              \
  V(Cosine, "cosine")                                   \
  V(CountLeadingZeros, "count-leading-zeros")           \
  V(CustomCall, "custom-call")                          \
  V(Divide, "divide")                                   \
  V(Domain, "domain")                                   \
  V(Dot, "dot")                                         \
  V(DynamicReshape, "dynamic-reshape")                  \
  V(DynamicSlice, "dynamic-slice")                      \
  V(DynamicUpdateSlice, "dynamic-update-slice")         \
  V(Erf, "erf")                                         \
  V(Exp, "exponential")                                 \
  V(Expm1, "exponential-minus-one")                     \
  V(Fft, "fft")                                         \
  V(Floor, "floor")                                     \
  V(Fusion, "fusion")                                   \
  V(Gather, "gather")                                   \
  V(GetDimensionSize, "get-dimension-size")             \
  V(GetTupleElement, "get-tuple-element")               \
  V(Imag, "imag")                                       \
  V(Infeed, "infeed")                                   \
  V(Iota, "iota")                                       \
  V(IsFinite, "is-finite")                              \
  V(Log, "log")                                         \
  V(Log1p, "log-plus-one")                              \
  V(Logistic, "logistic")                               \
  V(Map, "map")                                         \
  V(Maximum, "maximum")                                 \
  V(Minimum, "minimum")                                 \
  V(Multiply, "multiply")                               \
  V(Negate, "negate")                                   \
  V(Not, "not")                                         \
  V(OptimizationBarrier, "opt-barrier")                 \
  V(Or, "or")                                           \
  V(Outfeed, "outfeed")                                 \
  V(Pad, "pad")                                         \
  V(Parameter, "parameter")                             \
  V(PartitionId, "partition-id")                        \
  V(PopulationCount, "popcnt")                          \
  V(Power, "power")                                     \
  V(RaggedAllToAll, "ragged-all-to-all")                \
  V(Real, "real")                                       \
  V(Recv, "recv")                                       \
  V(RecvDone, "recv-done")                              \
  V(Reduce, "reduce")                                   \
  V(ReducePrecision, "reduce-precision")                \
  V(ReduceScatter, "reduce-scatter")                    \
  V(ReduceWindow, "reduce-window")                      \
  V(Remainder, "remainder")                             \
  V(ReplicaId, "replica-id")                            \
  V(Reshape, "reshape")                                 \
  V(Reverse, "reverse")                                 \
  V(Rng, "rng")                                         \
  V(RngBitGenerator, "rng-bit-generator")               \
  V(RngGetAndUpdateState, "rng-get-and-update-state")   \
  V(RoundNearestAfz, "round-nearest-afz")               \
  V(RoundNearestEven, "round-nearest-even")             \
  V(Rsqrt, "rsqrt")                                     \
  V(Scatter, "scatter")                                 \
  V(Select, "select")                                   \
  V(SelectAndScatter, "select-and-scatter")             \
  V(Send, "send")                                       \
  V(SendDone, "send-done")                              \
  V(SetDimensionSize, "set-dimension-size")             \
  V(ShiftLeft, "shift-left")                            \
  V(ShiftRightArithmetic, "shift-right-arithmetic")     \
  V(ShiftRightLogical, "shift-right-logical")           \
  V(Sign, "sign")                                       \
  V(Sine, "sine")                                       \
  V(Slice, "slice")                                     \
  V(Sort, "sort")                                       \
  V(Sqrt, "sqrt")                                       \
  V(StochasticConvert, "stochastic-convert")            \
  V(Subtract, "subtract")                               \
  V(Tan, "tan")                                         \
  V(Tanh, "tanh")                                       \
  V(TopK, "topk")                                       \
  V(Transpose, "transpose")                             \
  V(TriangularSolve, "triangular-solve")                \
  V(Tuple, "tuple")                                     \
  V(While, "while")                                     \
  V(Xor, "xor")

enum class HloOpcode {
#define TPUSIM_HLO_OPCODE_ENUM(e, s) e,
  TPUSIM_HLO_OPCODE_LIST(TPUSIM_HLO_OPCODE_ENUM)
#undef TPUSIM_HLO_OPCODE_ENUM
};

// "add", "get-tuple-element", ...
std::string_view opcodeName(HloOpcode op);
// The inverse of opcodeName; nullopt for an unknown name.
std::optional<HloOpcode> parseOpcode(std::string_view name);
int opcodeCount();

// Element-wise with one operand (negate, exponential, convert, ...): result dims = operand dims.
bool isElementwiseUnary(HloOpcode op);
// Element-wise with two operands of equal shape (add, compare, and, power, ...).
bool isElementwiseBinary(HloOpcode op);
// Unary or binary element-wise, or select/clamp.
bool isElementwise(HloOpcode op);
// The collectives and their -start/-done forms.
bool isCollective(HloOpcode op);

}  // namespace tpusim::hlo
