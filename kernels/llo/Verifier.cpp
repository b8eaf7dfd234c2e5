#include "kernels/llo/Verifier.h"

#include <fmt/format.h>

#include <unordered_set>

#include "kernels/llo/Printer.h"

namespace tpusim::kernels::llo {
namespace {

class Checker {
 public:
  explicit Checker(std::vector<std::string>& errors) : errors_(errors) {}

  void function(const Function& fn) {
    scope_.clear();
    for (Value* a : fn.body.args) scope_.insert(a);
    block(fn.body);
  }

 private:
  std::vector<std::string>& errors_;
  std::unordered_set<const Value*> scope_;

  void fail(const Op& op, const std::string& what) {
    std::string where = op.loc.known() ? fmt::format("{}:{}: ", op.loc.file, op.loc.line) : "";
    std::string text = printOp(op);
    text = text.substr(0, text.find('\n'));
    errors_.push_back(fmt::format("{}'{}': {}", where, text, what));
  }

  void block(const Block& b) {
    std::vector<const Value*> added;
    for (Value* a : b.args) {
      scope_.insert(a);
      added.push_back(a);
    }
    for (const auto& op : b.ops) {
      check(*op);
      for (const Block& r : op->regions) block(r);
      for (Value* r : op->results) {
        scope_.insert(r);
        added.push_back(r);
      }
    }
    for (const Value* v : added) scope_.erase(v);
  }

  bool expectCount(const Op& op, size_t n) {
    if (op.operands.size() == n) return true;
    fail(op, fmt::format("expects {} operands, has {}", n, op.operands.size()));
    return false;
  }
  bool isScalar(const Op& op, size_t i, const char* what) {
    if (op.operands[i]->type.isScalar()) return true;
    fail(op, fmt::format("{} must be a scalar, is {}", what, op.operands[i]->type.str()));
    return false;
  }
  bool isTile(const Op& op, size_t i) {
    if (op.operands[i]->type.isTile()) return true;
    fail(op, fmt::format("operand {} must be a tile, is {}", i, op.operands[i]->type.str()));
    return false;
  }
  bool isMask(const Op& op, size_t i) {
    if (op.operands[i]->type.isMask()) return true;
    fail(op, fmt::format("operand {} must be a mask, is {}", i, op.operands[i]->type.str()));
    return false;
  }
  bool isRefIn(const Op& op, const Value* v, std::initializer_list<MemSpace> spaces) {
    if (!v->type.isRef()) {
      fail(op, fmt::format("%{} must be a ref, is {}", v->id, v->type.str()));
      return false;
    }
    for (MemSpace s : spaces)
      if (v->type.space == s) return true;
    fail(op, fmt::format("%{} is in {}, which this op cannot access", v->id,
                         memSpaceName(v->type.space)));
    return false;
  }
  // A ref followed by one scalar index per dimension starting at operand i.
  bool view(const Op& op, size_t i, std::initializer_list<MemSpace> spaces, size_t* next) {
    if (i >= op.operands.size()) {
      fail(op, "missing ref operand");
      return false;
    }
    const Value* ref = op.operands[i];
    if (!isRefIn(op, ref, spaces)) return false;
    size_t n = ref->type.shape.size();
    if (i + 1 + n > op.operands.size()) {
      fail(op, fmt::format("%{} has rank {} but fewer indices follow", ref->id, n));
      return false;
    }
    for (size_t d = 0; d < n; ++d)
      if (!isScalar(op, i + 1 + d, "an index")) return false;
    *next = i + 1 + n;
    return true;
  }
  static bool constant(const Value* v, int64_t* out) {
    if (!v->def || v->def->kind != OpKind::SConst) return false;
    *out = v->def->ints[0];
    return true;
  }
  void sameTileTypes(const Op& op) {
    for (size_t i = 1; i < op.operands.size(); ++i)
      if (op.operands[i]->type != op.operands[0]->type)
        fail(op, fmt::format("operand types differ: {} vs {}", op.operands[0]->type.str(),
                             op.operands[i]->type.str()));
  }

  void check(const Op& op) {
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i]) return fail(op, fmt::format("operand {} is null", i));
      if (!scope_.count(op.operands[i]))
        return fail(op, fmt::format("%{} is used before it is defined or out of its scope",
                                    op.operands[i]->id));
    }
    auto I = [&](size_t i) { return i < op.ints.size() ? op.ints[i] : int64_t(0); };
    size_t next = 0;
    switch (op.kind) {
      case OpKind::SConst:
        if (op.ints.size() != 1) fail(op, "needs its value");
        break;
      case OpKind::SBinary:
        if (expectCount(op, 2)) isScalar(op, 0, "a") && isScalar(op, 1, "b");
        break;
      case OpKind::SSelect:
        if (expectCount(op, 3))
          isScalar(op, 0, "cond") && isScalar(op, 1, "a") && isScalar(op, 2, "b");
        break;
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        if (I(0) < 0) fail(op, "negative grid axis");
        break;
      case OpKind::DeviceId:
      case OpKind::NumDevices:
        expectCount(op, 0);
        break;
      case OpKind::SLoad:
        if (view(op, 0, {MemSpace::Smem}, &next) && next != op.operands.size())
          fail(op, "extra operands");
        break;
      case OpKind::SStore:
        if (isScalar(op, 0, "the value") && view(op, 1, {MemSpace::Smem}, &next) &&
            next != op.operands.size())
          fail(op, "extra operands");
        break;
      case OpKind::VLoad:
      case OpKind::VStore: {
        size_t r = op.kind == OpKind::VStore ? 1 : 0;
        if (r == 1 && (op.operands.empty() || !isTile(op, 0))) break;
        if (!view(op, r, {MemSpace::Vmem}, &next)) break;
        if (next != op.operands.size()) fail(op, "extra operands");
        const Value* ref = op.operands[r];
        if (ref->type.rank() < 1) fail(op, "tile access to a rank-0 ref");
        if (r == 1 && op.operands[0]->type.dtype != ref->type.dtype)
          fail(op, fmt::format("stores a {} tile into a {} ref", op.operands[0]->type.str(),
                               ref->type.str()));
        if (r == 0 && op.result()->type.dtype != ref->type.dtype)
          fail(op, "loads a tile of another dtype than the ref's");
        if (op.kind == OpKind::VLoad && (I(0) < 0 || I(0) > 255 || I(1) < 1 || I(1) > 255))
          fail(op, "sublane stride must be in 0..255 and the sublane mask 1..255");
        if (op.kind == OpKind::VStore && (I(0) < 1 || I(0) > 255 || I(1) < 1 || I(1) > kLanes))
          fail(op, "sublane mask must be 1..255 and lanes 1..128");
        staticTileBounds(op, ref, r + 1);
        break;
      }
      case OpKind::VConst:
      case OpKind::VIota:
        if (!isTileDType(op.result()->type.dtype)) fail(op, "bad tile dtype");
        break;
      case OpKind::VSplat:
        if (expectCount(op, 1)) isScalar(op, 0, "the splat value");
        break;
      case OpKind::VBinary: {
        if (!expectCount(op, 2) || !isTile(op, 0) || !isTile(op, 1)) break;
        sameTileTypes(op);
        DType d = op.operands[0]->type.dtype;
        VecBin k = VecBin(I(0));
        bool bitwise = k == VecBin::And || k == VecBin::Or || k == VecBin::Xor ||
                       k == VecBin::Shl || k == VecBin::Shr || k == VecBin::Sra;
        if (d == DType::Bf16 || d == DType::S8)
          fail(op, "arithmetic on bf16/s8 tiles: cast to f32/s32 first");
        else if (bitwise && d != DType::S32)
          fail(op, "bitwise ops and shifts need s32 tiles");
        break;
      }
      case OpKind::VUnary: {
        if (!expectCount(op, 1) || !isTile(op, 0)) break;
        DType d = op.operands[0]->type.dtype;
        VecUn k = VecUn(I(0));
        if (d != DType::F32 && !(d == DType::S32 && (k == VecUn::Abs || k == VecUn::Neg)))
          fail(op, fmt::format("{} is not defined on {} tiles", vecUnName(k), isa::dtypeName(d)));
        break;
      }
      case OpKind::VCmp:
        if (expectCount(op, 2) && isTile(op, 0) && isTile(op, 1)) {
          sameTileTypes(op);
          DType d = op.operands[0]->type.dtype;
          if (d != DType::F32 && d != DType::S32) fail(op, "compares need f32 or s32 tiles");
        }
        break;
      case OpKind::VSelect:
        if (expectCount(op, 3) && isMask(op, 0) && isTile(op, 1) && isTile(op, 2) &&
            op.operands[1]->type != op.operands[2]->type)
          fail(op, "select arms differ in type");
        break;
      case OpKind::MaskBinary:
        if (expectCount(op, 2)) isMask(op, 0) && isMask(op, 1);
        break;
      case OpKind::MaskNot:
        if (expectCount(op, 1)) isMask(op, 0);
        break;
      case OpKind::VCast:
        if (expectCount(op, 1) && isTile(op, 0)) {
          DType from = op.operands[0]->type.dtype, to = op.dtype;
          bool bitcast = !op.ints.empty() && op.ints[0] == 1;
          bool ok = bitcast || (from == DType::F32 && (to == DType::S32 || to == DType::Bf16)) ||
                    (from == DType::S32 && (to == DType::F32 || to == DType::S8)) ||
                    (from == DType::Bf16 && to == DType::F32) ||
                    (from == DType::S8 && to == DType::S32);
          if (!ok)
            fail(op, fmt::format("no direct cast from {} to {}", isa::dtypeName(from),
                                 isa::dtypeName(to)));
        }
        break;
      case OpKind::VReduceLanes:
        if (expectCount(op, 1) && isTile(op, 0)) {
          DType d = op.operands[0]->type.dtype;
          if (d != DType::F32 && d != DType::S32) fail(op, "lane reductions need f32 or s32");
        }
        break;
      case OpKind::VRotSublanes:
      case OpKind::VRotLanes:
        if (expectCount(op, 1)) isTile(op, 0);
        break;
      case OpKind::VLanePerm:
        if (expectCount(op, 2) && isTile(op, 0) && isTile(op, 1) &&
            op.operands[1]->type.dtype != DType::S32)
          fail(op, "lane indices must be s32");
        break;
      case OpKind::AllocVmem:
        if (op.results.size() != 1 || !op.result()->type.isRef() ||
            op.result()->type.space != MemSpace::Vmem)
          fail(op, "alloc must produce one VMEM ref");
        break;
      case OpKind::Matmul:
        checkMatmul(op);
        break;
      case OpKind::MxuLatch:
        checkMxuLatch(op);
        break;
      case OpKind::MxuStart:
      case OpKind::MxuFinish:
        checkMxuSplit(op);
        break;
      case OpKind::DmaStart:
      case OpKind::DmaWait:
        checkDma(op);
        break;
      case OpKind::RemoteDmaStart:
        checkRemoteDma(op);
        break;
      case OpKind::SemSignal:
      case OpKind::SemWait:
        checkSemaphoreOp(op);
        break;
      case OpKind::For:
        if (op.operands.size() >= 2 && isScalar(op, 0, "lower bound") &&
            isScalar(op, 1, "upper bound")) {
          if (I(0) <= 0) fail(op, "loop step must be positive");
          checkCarries(op);
        } else if (op.operands.size() < 2) {
          fail(op, "a loop needs a lower and an upper bound");
        }
        break;
      case OpKind::Yield:
        break;  // checked with its loop (checkCarries)
      case OpKind::If:
        if (expectCount(op, 1) && isScalar(op, 0, "the condition") &&
            (op.regions.empty() || op.regions.size() > 2))
          fail(op, "an if has a then region and an optional else region");
        break;
      case OpKind::Return:
        for (size_t i = 0; i < op.operands.size(); ++i) isScalar(op, i, "a returned value");
        break;
    }
  }

  // A loop's carried values: one region argument after the induction
  // variable and one result per initial value, of its type (i32, tile or
  // mask), and the region ends with a yield of values of the same types.
  void checkCarries(const Op& op) {
    size_t n = op.operands.size() - 2;
    if (op.regions.size() != 1 || op.regions[0].args.size() != n + 1 || op.results.size() != n) {
      fail(op,
           "a loop has one region whose arguments are the induction variable and one per "
           "carried value, and one result per carried value");
      return;
    }
    const Block& b = op.regions[0];
    const Op* y = b.ops.empty() ? nullptr : b.ops.back().get();
    for (const auto& inner : b.ops)
      if (inner->kind == OpKind::Yield && inner.get() != y)
        fail(*inner, "yield must be the last op of a loop body");
    if (n == 0) {
      if (y && y->kind == OpKind::Yield && !y->operands.empty())
        fail(*y, "yield in a loop that carries no values");
      return;
    }
    if (!y || y->kind != OpKind::Yield || y->operands.size() != n) {
      fail(op, fmt::format("a loop carrying {} values must end its body with a yield of {}", n, n));
      return;
    }
    for (size_t k = 0; k < n; ++k) {
      const Type& t = op.operands[k + 2]->type;
      if (t.isRef())
        fail(op, fmt::format("carried value {} is a ref; carry i32, tiles or masks", k));
      if (!(b.args[k + 1]->type == t) || !(op.results[k]->type == t) ||
          !(y->operands[k]->type == t))
        fail(op, fmt::format("carried value {} ({}) has another type in the body, the yield or "
                             "the result",
                             k, t.str()));
    }
  }

  // Constant tile offsets must address rows/column tiles inside the ref.
  void staticTileBounds(const Op& op, const Value* ref, size_t first) {
    const auto& shape = ref->type.shape;
    size_t n = shape.size();
    for (size_t d = 0; d < n; ++d) {
      int64_t c;
      if (!constant(op.operands[first + d], &c)) continue;
      int64_t limit = shape[d];
      if (d + 1 == n) {
        if (c % kLanes != 0) fail(op, fmt::format("column offset {} is not a multiple of 128", c));
        limit = tiledLayout(shape).colTiles * kLanes;
      } else if (d + 2 == n) {
        limit = tiledLayout(shape).paddedRows;
      }
      if (c < 0 || c >= limit)
        fail(op,
             fmt::format("index {} out of bounds for dimension {} of {}", c, d, ref->type.str()));
    }
  }

  void checkMatmul(const Op& op) {
    size_t a = 0, b = 0, c = 0, end = 0;
    if (!view(op, 0, {MemSpace::Vmem}, &a) || !view(op, a, {MemSpace::Vmem}, &b) ||
        !view(op, b, {MemSpace::Vmem}, &c))
      return;
    end = c;
    if (op.ints.size() < 6 || op.ints.size() > 11)
      return fail(op,
                  "needs M, N, K, transposes, accumulate and optionally resident, latched, "
                  "the sum epilogue, the scaled rhs and the lhs diagonal blocks");
    const int64_t scaled = op.ints.size() >= 10 ? op.ints[9] : 0;
    if (scaled < 0 || scaled > 1) return fail(op, "scaled rhs must be 0 or 1");
    // The scale row after the rhs (ints[9]), then addend views (ints[8], the
    // sum epilogue: see Ir.h).
    size_t scaleAt = 0;
    if (scaled) {
      scaleAt = end;
      if (end >= op.operands.size()) return fail(op, "a scaled rhs needs a scale view");
      if (!view(op, end, {MemSpace::Vmem}, &end)) return;
    }
    std::vector<size_t> addends;
    while (end < op.operands.size()) {
      size_t next = 0;
      if (!view(op, end, {MemSpace::Vmem}, &next)) return;
      addends.push_back(end);
      end = next;
    }
    const int64_t resident = op.ints.size() >= 7 ? op.ints[6] : 0;
    const int64_t latched = op.ints.size() >= 8 ? op.ints[7] : 0;
    const int64_t sumEpilogue = op.ints.size() >= 9 ? op.ints[8] : 0;
    if (sumEpilogue < 0 || sumEpilogue > 2) fail(op, "the sum epilogue must be 0, 1 or 2");
    if ((sumEpilogue != 0) != !addends.empty())
      return fail(op, sumEpilogue ? "a sum epilogue needs addend views" : "extra operands");
    for (size_t at : addends)
      if (op.operands[at]->type.dtype != DType::Bf16 || op.operands[0]->type.dtype != DType::Bf16)
        fail(op, "a sum epilogue adds bf16 addends into a bf16 destination");
    // 2: latched in an earlier grid step (not checked in program order).
    if (latched < 0 || latched > 2) fail(op, "latched must be 0, 1 or 2");
    if (latched && (resident != 0 || op.ints[5] == 2 || op.ints[3] || op.ints[4]))
      fail(op, "a latched matmul neither transposes nor keeps its results in the MXU");
    if (op.ints[5] < 0 || op.ints[5] > 2) fail(op, "accumulate must be 0, 1 or 2");
    if (resident < 0 || resident > 2) fail(op, "resident must be 0, 1 or 2");
    // Going on from an MXU result slot needs the results kept there.
    if (op.ints[5] == 2 && resident == 0)
      fail(op, "accumulate 2 (continue in the MXU) needs a resident matmul");
    if (op.ints[5] == 1 && resident != 0)
      fail(op, "a resident matmul continues in the MXU (accumulate 2), it does not add to dst");
    const Type& dst = op.operands[0]->type;
    const Type& lhs = op.operands[a]->type;
    const Type& rhs = op.operands[b]->type;
    // bf16 x s8: int8 weights widened to bf16 on their way to the MXU.
    bool widen = lhs.dtype == DType::Bf16 && rhs.dtype == DType::S8;
    if (lhs.dtype != rhs.dtype && !widen) fail(op, "lhs and rhs dtypes differ");
    if (scaled &&
        (!widen || latched || op.ints[4] || op.operands[scaleAt]->type.dtype != DType::Bf16))
      fail(op, "a scaled rhs is bf16 x s8, not latched or transposed, with a bf16 scale row");
    // A bf16 destination takes the f32 results rounded as they are popped: a
    // plain matmul's only (no accumulating, no results kept in the MXU).
    const bool roundedDst =
        dst.dtype == DType::Bf16 && op.ints[5] == 0 && resident == 0 && !latched;
    if (sumEpilogue && (!roundedDst || lhs.dtype != DType::Bf16))
      fail(op, "a sum epilogue is for a plain bf16 matmul rounded into bf16");
    if (lhs.dtype == DType::Bf16 && dst.dtype != DType::F32 && !roundedDst)
      fail(op, "bf16 matmul accumulates into f32 (or, plain, rounds into bf16)");
    else if (lhs.dtype == DType::S8 && dst.dtype != DType::S32)
      fail(op, "int8 matmul accumulates into s32");
    else if (lhs.dtype != DType::Bf16 && lhs.dtype != DType::S8)
      fail(op, "matmul inputs must be bf16 or s8");
    for (size_t i = 0; i < 3; ++i)
      if (op.ints[i] <= 0) fail(op, "M, N and K must be positive");
    for (const Type* t : {&dst, &lhs, &rhs})
      if (t->rank() < 2) fail(op, "matmul operands need rank >= 2");
    // LHS diagonal blocks (ints[10]): G row blocks of M / G rows (whole row
    // tiles), each with its own K / G columns, of a plain bf16 matmul.
    const int64_t g = matmulLhsDiagonalBlocks(op);
    if (g < 1) fail(op, "lhs diagonal blocks must be >= 1");
    if (g > 1 && (op.ints[0] % (8 * g) != 0 || op.ints[2] % g != 0))
      fail(op, "lhs diagonal blocks need M a multiple of 8 G and K a multiple of G");
    if (g > 1 &&
        (op.ints[3] || latched || resident || scaled || sumEpilogue || lhs.dtype != DType::Bf16))
      fail(op, "lhs diagonal blocks are for a plain bf16 matmul without a transposed lhs");
  }

  // The weights a latched matmul reads: one VMEM view, bf16, K x N.
  void checkMxuLatch(const Op& op) {
    size_t a = 0;
    if (!view(op, 0, {MemSpace::Vmem}, &a)) return;
    if (a != op.operands.size()) return fail(op, "extra operands");
    if (op.ints.size() != 2 || op.ints[0] <= 0 || op.ints[1] <= 0)
      return fail(op, "needs positive K and N");
    if (op.operands[0]->type.dtype != DType::Bf16) fail(op, "latched weights must be bf16");
    if (op.operands[0]->type.rank() < 2) fail(op, "the weights need rank >= 2");
  }

  // A latched matmul split in time: mxu_start's lhs (bf16) or mxu_finish's dst (f32).
  void checkMxuSplit(const Op& op) {
    size_t a = 0;
    if (!view(op, 0, {MemSpace::Vmem}, &a)) return;
    if (a != op.operands.size()) return fail(op, "extra operands");
    const bool finish = op.kind == OpKind::MxuFinish;
    if (op.ints.size() != (finish ? 5u : 4u))
      return fail(op, finish ? "needs M, N, K, set and accumulate" : "needs M, N, K and set");
    for (size_t i = 0; i < 3; ++i)
      if (op.ints[i] <= 0) fail(op, "M, N and K must be positive");
    if (op.ints[3] < 0) fail(op, "the slot set must be >= 0");
    if (finish && (op.ints[4] < 0 || op.ints[4] > 1)) fail(op, "accumulate must be 0 or 1");
    const Type& t = op.operands[0]->type;
    if (t.dtype != (finish ? DType::F32 : DType::Bf16))
      fail(op, finish ? "mxu_finish stores f32" : "mxu_start streams bf16");
    if (t.rank() < 2) fail(op, "the view needs rank >= 2");
  }

  // device, src view, dst view (HBM or VMEM), send and recv semaphores.
  void checkRemoteDma(const Op& op) {
    std::initializer_list<MemSpace> mem = {MemSpace::Hbm, MemSpace::Vmem};
    size_t a = 0, b = 0, c = 0, d = 0;
    if (op.operands.empty() || !isScalar(op, 0, "the device") || !view(op, 1, mem, &a) ||
        !view(op, a, mem, &b) || !view(op, b, {MemSpace::Semaphore}, &c) ||
        !view(op, c, {MemSpace::Semaphore}, &d))
      return;
    if (d != op.operands.size()) return fail(op, "extra operands");
    checkCopySizes(op, op.operands[1]->type, op.operands[a]->type);
  }

  void checkSemaphoreOp(const Op& op) {
    auto I = [&](size_t i) { return i < op.ints.size() ? op.ints[i] : int64_t(0); };
    bool remote = op.kind == OpKind::SemSignal && I(1) == 1;
    size_t next = 0, first = remote ? 1 : 0;
    if (remote && (op.operands.empty() || !isScalar(op, 0, "the device"))) return;
    if (!view(op, first, {MemSpace::Semaphore}, &next)) return;
    if (next != op.operands.size()) return fail(op, "extra operands");
    if (op.ints.empty() || I(0) < 0 || I(0) > 0xFFFF) fail(op, "needs an amount in 0 .. 65535");
  }

  void checkCopySizes(const Op& op, const Type& src, const Type& dst) {
    if (src.dtype != dst.dtype) fail(op, "source and destination dtypes differ");
    if (src.rank() != dst.rank()) fail(op, "source and destination ranks differ");
    if (static_cast<int>(op.ints.size()) != src.rank())
      return fail(op, "needs one copy size per dimension");
    for (int d = 0; d < src.rank(); ++d) {
      int64_t n = op.ints[d];
      if (n <= 0 || n > src.shape[d] || (d < dst.rank() && n > dst.shape[d]))
        fail(op, fmt::format("copy size {} in dimension {} does not fit both refs", n, d));
    }
  }

  void checkDma(const Op& op) {
    std::initializer_list<MemSpace> mem = {MemSpace::Hbm, MemSpace::Vmem, MemSpace::Smem};
    size_t a = 0, b = 0, c = 0;
    if (!view(op, 0, mem, &a) || !view(op, a, mem, &b) || !view(op, b, {MemSpace::Semaphore}, &c))
      return;
    if (c != op.operands.size()) return fail(op, "extra operands");
    checkCopySizes(op, op.operands[0]->type, op.operands[a]->type);
  }
};

}  // namespace

std::vector<std::string> verifyFunction(const Function& fn) {
  std::vector<std::string> errors;
  Checker(errors).function(fn);
  return errors;
}

std::vector<std::string> verifyKernel(const Kernel& k) {
  std::vector<std::string> errors;
  auto add = [&](const std::string& e) {
    errors.push_back(fmt::format("kernel {}: {}", k.name, e));
  };
  if (k.semantics.size() != k.grid.size()) add("one dimension semantics per grid axis is needed");
  for (int64_t g : k.grid)
    if (g <= 0) add("grid dimensions must be positive");
  if (k.numScalarPrefetch < 0 || k.numScalarPrefetch > int(k.inputs.size()))
    add("scalar prefetch count exceeds the inputs");
  if (k.inMaps.size() + k.numScalarPrefetch != k.inputs.size())
    add("one block mapping per non-prefetch input is needed");
  if (k.outMaps.size() != k.outputs.size()) add("one block mapping per output is needed");
  auto checkMap = [&](const ArrayOperand& a, const BlockMapping& m) {
    if (m.space != MemSpace::Vmem) return;
    if (m.blockShape.size() != a.shape.size())
      add(fmt::format("block shape of '{}' has rank {}, the array {}", a.name, m.blockShape.size(),
                      a.shape.size()));
    if (!m.indexMap) return add(fmt::format("'{}' has no index map", a.name));
    for (const std::string& e : verifyFunction(*m.indexMap)) add("index map: " + e);
    if (m.indexMap->body.ops.empty() || m.indexMap->body.ops.back()->kind != OpKind::Return ||
        m.indexMap->body.ops.back()->operands.size() != a.shape.size())
      add(fmt::format("index map of '{}' must return {} block indices", a.name, a.shape.size()));
    if (m.buffers < 1) add(fmt::format("'{}' needs at least one buffer", a.name));
  };
  for (size_t i = 0; i < k.inMaps.size() && i + k.numScalarPrefetch < k.inputs.size(); ++i)
    checkMap(k.inputs[i + k.numScalarPrefetch], k.inMaps[i]);
  for (size_t i = 0; i < k.outMaps.size() && i < k.outputs.size(); ++i)
    checkMap(k.outputs[i], k.outMaps[i]);
  for (auto [in, out] : k.aliases)
    if (in < 0 || in >= int(k.inputs.size()) || out < 0 || out >= int(k.outputs.size()) ||
        k.inputs[in].shape != k.outputs[out].shape || k.inputs[in].dtype != k.outputs[out].dtype)
      add(fmt::format("alias in {} -> out {} needs two existing arrays of one shape and dtype", in,
                      out));
  if (!k.body) {
    add("no body");
  } else {
    for (const std::string& e : verifyFunction(*k.body)) add(e);
  }
  return errors;
}

}  // namespace tpusim::kernels::llo
