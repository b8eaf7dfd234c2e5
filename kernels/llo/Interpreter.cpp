#include "kernels/llo/Interpreter.h"

#include <fmt/format.h>

#include <unordered_map>

#include "isa/support/Numerics.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::llo {

std::unique_ptr<Buffer> Buffer::make(std::string name, Type type, uint32_t fill) {
  auto b = std::make_unique<Buffer>();
  b->name = std::move(name);
  b->type = std::move(type);
  if (b->type.space == MemSpace::Semaphore) {
    b->semaphores.assign(b->type.numElements(), 0);
  } else if (b->type.space == MemSpace::Vmem) {
    b->words.assign(tiledLayout(b->type.shape).totalRows() * kLanes, fill);
  } else {
    b->words.assign(b->type.numElements(), fill);
  }
  return b;
}

bool Buffer::inBounds(const std::vector<int64_t>& index) const {
  if (index.size() != type.shape.size()) return false;
  for (size_t d = 0; d < index.size(); ++d)
    if (index[d] < 0 || index[d] >= type.shape[d]) return false;
  return true;
}

uint32_t& Buffer::at(const std::vector<int64_t>& index) {
  const auto& shape = type.shape;
  size_t n = shape.size();
  if (type.space == MemSpace::Vmem) {
    TiledLayout l = tiledLayout(shape);
    int64_t m = 0;
    for (size_t d = 0; d + 2 < n; ++d) m = m * shape[d] + index[d];
    int64_t r = n >= 2 ? index[n - 2] : 0, c = n >= 1 ? index[n - 1] : 0;
    return words[l.row(m, r, c / kLanes) * kLanes + c % kLanes];
  }
  int64_t flat = 0;
  for (size_t d = 0; d < n; ++d) flat = flat * shape[d] + index[d];
  return words[flat];
}

namespace {

struct RtValue {
  int32_t scalar = 0;
  std::shared_ptr<TileData> tile;
  std::shared_ptr<MaskData> mask;
  Buffer* buffer = nullptr;
};

class Run {
 public:
  Run(const InterpOptions& o, const GridContext& g, int64_t& counter, DeviceLink* link,
      LatchedWeights& latched)
      : latched_(latched), opt_(o), grid_(g), counter_(counter), link_(link) {}

  std::vector<int32_t> function(const Function& fn, const std::vector<Arg>& args) {
    if (args.size() != fn.body.args.size())
      throw InterpretError(fmt::format("function @{} takes {} arguments, {} given", fn.name,
                                       fn.body.args.size(), args.size()));
    for (size_t i = 0; i < args.size(); ++i) {
      const Value* a = fn.body.args[i];
      RtValue v;
      if (a->type.isRef()) {
        if (!args[i].buffer)
          throw InterpretError(fmt::format("argument {} of @{} needs a buffer", i, fn.name));
        v.buffer = args[i].buffer;
      } else {
        v.scalar = args[i].scalar;
      }
      env_[a] = v;
    }
    block(fn.body);
    return returned_;
  }

 private:
  // The MXUs' latched weights: the interpreter's, kept across grid steps.
  LatchedWeights& latched_;
  const InterpOptions& opt_;
  const GridContext& grid_;
  int64_t& counter_;
  DeviceLink* link_;
  std::unordered_map<const Value*, RtValue> env_;
  std::vector<std::unique_ptr<Buffer>> temps_;
  std::vector<int32_t> returned_;

  [[noreturn]] void fail(const Op& op, const std::string& what) {
    std::string where = op.loc.known() ? fmt::format("{}:{}: ", op.loc.file, op.loc.line) : "";
    std::string text = printOp(op);
    throw InterpretError(
        fmt::format("{}{}: in '{}'", where, what, text.substr(0, text.find('\n'))));
  }

  int32_t S(const Value* v) { return env_.at(v).scalar; }
  const TileData& T(const Value* v) { return *env_.at(v).tile; }
  const MaskData& M(const Value* v) { return *env_.at(v).mask; }
  Buffer* B(const Value* v) { return env_.at(v).buffer; }
  void setS(const Value* v, int32_t s) { env_[v] = RtValue{s, nullptr, nullptr, nullptr}; }
  void setT(const Value* v, TileData t) {
    env_[v] = RtValue{0, std::make_shared<TileData>(t), nullptr, nullptr};
  }
  void setM(const Value* v, MaskData m) {
    env_[v] = RtValue{0, nullptr, std::make_shared<MaskData>(m), nullptr};
  }

  void block(const Block& b) {
    for (const auto& op : b.ops) {
      ++counter_;
      exec(*op);
    }
  }

  std::vector<int64_t> indices(const Op& op, size_t first, size_t n) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < n; ++i) idx.push_back(S(op.operands[first + i]));
    return idx;
  }

  int32_t scalarBin(const Op& op, ScalarBin k, int32_t a, int32_t b) {
    std::optional<int32_t> r = evalScalarBin(k, a, b);
    if (!r) fail(op, "scalar division by zero");
    return *r;
  }

  // Physical word index of row r, column tile ct of matrix `lead` of a VMEM ref,
  // checked to lie inside that matrix's column tile.
  size_t tileRowWord(const Op& op, Buffer* buf, const std::vector<int64_t>& lead, int64_t r,
                     int64_t col) {
    const auto& shape = buf->type.shape;
    TiledLayout l = tiledLayout(shape);
    int64_t m = 0;
    for (size_t d = 0; d < lead.size(); ++d) {
      if (lead[d] < 0 || lead[d] >= shape[d])
        fail(op, fmt::format("index {} out of bounds for dimension {} of {}", lead[d], d,
                             buf->type.str()));
      m = m * shape[d] + lead[d];
    }
    if (col % kLanes != 0) fail(op, fmt::format("column offset {} is not a multiple of 128", col));
    if (col < 0 || col / kLanes >= l.colTiles)
      fail(op, fmt::format("column offset {} outside {}", col, buf->type.str()));
    if (r < 0 || r >= l.paddedRows)
      fail(op,
           fmt::format("row {} outside {} (padded to {} rows)", r, buf->type.str(), l.paddedRows));
    return size_t(l.row(m, r, col / kLanes)) * kLanes;
  }

  void vload(const Op& op) {
    Buffer* buf = B(op.operands[0]);
    size_t n = buf->type.shape.size();
    auto idx = indices(op, 1, n);
    std::vector<int64_t> lead(idx.begin(), idx.end() - std::min<size_t>(2, n));
    int64_t r = n >= 2 ? idx[n - 2] : 0, c = idx[n - 1];
    int64_t stride = op.ints[0], sublanes = op.ints[1];
    TileData t{};
    for (int s = 0; s < kSublanes; ++s) {
      if (!(sublanes >> s & 1)) continue;
      size_t w = tileRowWord(op, buf, lead, r + s * stride, c);
      for (int l = 0; l < kLanes; ++l) t[s * kLanes + l] = buf->words[w + l];
    }
    setT(op.result(), t);
  }

  void vstore(const Op& op) {
    const TileData& t = T(op.operands[0]);
    Buffer* buf = B(op.operands[1]);
    size_t n = buf->type.shape.size();
    auto idx = indices(op, 2, n);
    std::vector<int64_t> lead(idx.begin(), idx.end() - std::min<size_t>(2, n));
    int64_t r = n >= 2 ? idx[n - 2] : 0, c = idx[n - 1];
    int64_t sublanes = op.ints[0], lanes = op.ints[1];
    for (int s = 0; s < kSublanes; ++s) {
      if (!(sublanes >> s & 1)) continue;
      size_t w = tileRowWord(op, buf, lead, r + s, c);
      for (int l = 0; l < lanes; ++l) buf->words[w + l] = t[s * kLanes + l];
    }
  }

  // Element (i, j) of a 2D window of a VMEM ref at the given view indices.
  struct Window {
    Buffer* buf;
    std::vector<int64_t> base;
    uint32_t& at(int64_t i, int64_t j) {
      std::vector<int64_t> idx = base;
      idx[idx.size() - 2] += i;
      idx[idx.size() - 1] += j;
      return buf->at(idx);
    }
  };
  Window window(const Op& op, const ViewRange& v, int64_t rows, int64_t cols, const char* what) {
    Buffer* buf = B(v.ref);
    std::vector<int64_t> base;
    for (Value* i : v.indices) base.push_back(S(i));
    size_t n = base.size();
    if (base[n - 1] % kLanes != 0)
      fail(op, fmt::format("{} column offset {} is not a multiple of 128", what, base[n - 1]));
    std::vector<int64_t> last = base;
    last[n - 2] += rows - 1;
    last[n - 1] += cols - 1;
    if (!buf->inBounds(base) || !buf->inBounds(last))
      fail(op, fmt::format("{} window {}x{} at {} outside {}", what, rows, cols, shapeStr(base),
                           buf->type.str()));
    return Window{buf, base};
  }

  void mxuLatch(const Op& op) {
    int64_t K = op.ints[0], N = op.ints[1];
    Window rhs = window(op, opViews(op)[0], K, N, "latched weights");
    latched_ = {true, K, N, std::vector<uint32_t>(size_t(K * N))};
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) latched_.w[size_t(k * N + n)] = rhs.at(k, n);
  }

  // Results of mxu_start waiting in the MXUs' slot sets for their mxu_finish.
  struct Pending {
    int64_t M = 0, N = 0, K = 0;
    std::vector<uint32_t> out;
  };
  std::map<int64_t, Pending> pending_;

  void mxuStart(const Op& op) {
    int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2], set = op.ints[3];
    if (!latched_.valid || latched_.K != K || latched_.N != N)
      fail(op, fmt::format("no {}x{} weights latched (mxu_latch, with no other matmul after it in "
                           "this grid step)",
                           K, N));
    if (pending_.count(set))
      fail(op, fmt::format("slot set {} still holds results no mxu_finish has taken", set));
    Window lhs = window(op, opViews(op)[0], M, K, "lhs");
    Pending p{M, N, K, std::vector<uint32_t>(size_t(M * N))};
    std::vector<uint32_t> a(K), b(K);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k) b[k] = latched_.w[size_t(k * N + n)];
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k) a[k] = lhs.at(m, k);
        p.out[size_t(m * N + n)] = mxuDotBf16(a.data(), b.data(), K, opt_.mxuSize);
      }
    }
    pending_[set] = std::move(p);
  }

  void mxuFinish(const Op& op) {
    int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2], set = op.ints[3];
    auto it = pending_.find(set);
    if (it == pending_.end() || it->second.M != M || it->second.N != N || it->second.K != K)
      fail(op, fmt::format("slot set {} holds no {}x{}x{} mxu_start results", set, M, N, K));
    Window dst = window(op, opViews(op)[0], M, N, "destination");
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        uint32_t& d = dst.at(m, n);
        uint32_t r = it->second.out[size_t(m * N + n)];
        d = op.ints[4] ? f32ResultBits(floatOf(d) + floatOf(r)) : r;
      }
    pending_.erase(it);
  }

  void matmul(const Op& op) {
    auto views = opViews(op);
    int64_t M = op.ints[0], N = op.ints[1], K = op.ints[2];
    bool tl = op.ints[3], tr = op.ints[4];
    const int64_t accumulate = op.ints[5];
    const bool fromLatch = op.ints.size() > 7 && op.ints[7] >= 1;
    Window dst = window(op, views[0], M, N, "destination");
    // LHS diagonal blocks: row m of the LHS is row m % (M / G) of the view,
    // zero outside K columns [g K / G, (g + 1) K / G), g = m / (M / G).
    const int64_t diag = matmulLhsDiagonalBlocks(op), m0 = M / diag, kb = K / diag;
    Window lhs = tl ? window(op, views[1], K, M, "lhs") : window(op, views[1], m0, K, "lhs");
    Window rhs = tr ? window(op, views[2], N, K, "rhs") : window(op, views[2], K, N, "rhs");
    if (fromLatch && (!latched_.valid || latched_.K != K || latched_.N != N))
      fail(op, latched_.valid ? fmt::format("the latched weights are {}x{}, the matmul needs {}x{}",
                                            latched_.K, latched_.N, K, N)
                              : std::string("no weights latched (mxu_latch, with no other matmul "
                                            "after it in this grid step)"));
    if (!pending_.empty())
      fail(op, fmt::format("a matmul while slot set {} holds mxu_start results (it would reuse "
                           "their result slots)",
                           pending_.begin()->first));
    if (!fromLatch) latched_.valid = false;
    bool bf16 = lhs.buf->type.dtype == DType::Bf16;
    // s8 weights of a bf16 matmul are widened to bf16 as they are read (exact).
    bool widen = bf16 && rhs.buf->type.dtype == DType::S8;
    // Scaled s8 weights: bf16(f32(w) * f32(scale[n])), one rounding (the
    // product of an s8 and a bf16 is exact in f32), as the HLO's bf16
    // multiply of the converted weights rounds.
    const bool scaled = matmulScaled(op);
    Window scale = scaled ? window(op, views[3], 1, N, "scale") : Window{};
    std::vector<uint32_t> a(K), b(K);
    std::vector<uint32_t> out(size_t(M * N));
    for (int64_t n = 0; n < N; ++n) {
      const float s = scaled ? bf16WordToF32(scale.at(0, n)) : 1.0f;
      for (int64_t k = 0; k < K; ++k) {
        b[k] = fromLatch ? latched_.w[size_t(k * N + n)] : tr ? rhs.at(n, k) : rhs.at(k, n);
        if (widen && scaled)
          b[k] = tpusim::f32ToBf16Bits(floatOf(f32ResultBits(float(s8WordToS32(b[k])) * s)));
        else if (widen)
          b[k] = tpusim::f32ToBf16Bits(float(s8WordToS32(b[k])));
      }
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t k = 0; k < K; ++k)
          a[k] = tl ? lhs.at(k, m) : k / kb == m / m0 ? lhs.at(m % m0, k) : 0u;
        // accumulate 2: the MXU result slot goes on from dst's value (s32
        // adds wrap, so int8 is the same as adding afterwards).
        if (accumulate == 2 && bf16)
          out[m * N + n] = mxuDotBf16From(dst.at(m, n), a.data(), b.data(), K, opt_.mxuSize);
        else
          out[m * N + n] = bf16 ? mxuDotBf16(a.data(), b.data(), K, opt_.mxuSize)
                                : mxuDotS8(a.data(), b.data(), K);
      }
    }
    // Results are written after every input is read: dst may overlap nothing else.
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        uint32_t& d = dst.at(m, n);
        uint32_t r = out[m * N + n];
        if (accumulate == 1 || (accumulate == 2 && !bf16))
          r = bf16 ? f32ResultBits(floatOf(d) + floatOf(r)) : d + r;
        // A bf16 destination: the f32 result rounded (vcvt.bf16.f32 on the pop).
        if (dst.buf->type.dtype == DType::Bf16) r = tpusim::f32ToBf16Bits(floatOf(r));
        d = r;
      }
    // The sum epilogue (Ops.def): the addends folded left, then added to the
    // rounded dot, each sum in f32 and rounded to bf16 (bf16 bits in the low
    // 16 bits of a word, as the element-wise bf16 add leaves them).
    if (views.size() > matmulFirstAddend(op)) {
      std::vector<Window> addends;
      for (size_t i = matmulFirstAddend(op); i < views.size(); ++i)
        addends.push_back(window(op, views[i], M, N, "addend"));
      auto add = [](uint32_t x, uint32_t y) {  // bf16 words: cvt, vadd.f32, cvt
        float sum = floatOf(f32ResultBits(bf16WordToF32(x) + bf16WordToF32(y)));
        return tpusim::f32ToBf16Bits(sum);
      };
      const bool dotFirst = op.ints.at(8) == 1;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          uint32_t s = addends[0].at(m, n);
          for (size_t i = 1; i < addends.size(); ++i) s = add(s, addends[i].at(m, n));
          uint32_t& d = dst.at(m, n);
          d = dotFirst ? add(d, s) : add(s, d);
        }
    }
  }

  // Flat index of a semaphore view, checked.
  int64_t semIndex(const Op& op, const ViewRange& v) {
    Buffer* sem = B(v.ref);
    std::vector<int64_t> idx;
    for (Value* i : v.indices) idx.push_back(S(i));
    if (!sem->inBounds(idx))
      fail(op, fmt::format("semaphore index {} outside {}", shapeStr(idx), sem->type.str()));
    int64_t flat = 0;
    for (size_t d = 0; d < idx.size(); ++d) flat = flat * sem->type.shape[d] + idx[d];
    return flat;
  }

  // Waits until `sem[flat]` >= value and subtracts it. Alone, a wait nothing
  // can satisfy any more is an error; with other devices they may signal it.
  void semWait(const Op& op, Buffer* sem, int64_t flat, int64_t value, const char* what) {
    if (sem->semaphores[flat] < value) {
      if (!link_)
        fail(op, fmt::format("{} (this would deadlock on the machine: semaphore {}[{}] holds {}, "
                             "the wait needs {})",
                             what, sem->name, flat, sem->semaphores[flat], value));
      std::string where = op.loc.known() ? fmt::format(" at {}:{}", op.loc.file, op.loc.line) : "";
      link_->block(sem, flat, value, fmt::format("{}[{}]{}", sem->name, flat, where));
    }
    sem->semaphores[flat] -= value;
  }

  // The device operand of a remote op: another device of the run.
  int remoteTarget(const Op& op) {
    int32_t d = S(remoteDevice(op));
    if (!link_)
      fail(op,
           "a remote copy or signal needs several devices (dsl::interpretDevices); this "
           "kernel runs alone");
    if (d < 0 || d >= link_->deviceCount())
      fail(op,
           fmt::format("device {} does not exist (devices 0..{})", d, link_->deviceCount() - 1));
    if (d == link_->deviceId())
      fail(op, fmt::format("device {} targets itself: a remote copy or signal goes to another "
                           "device (the machine's dma.remote / sync.remote fault on their own "
                           "chip); use a local copy or a signal without device",
                           d));
    return d;
  }

  Buffer* peerOf(const Op& op, Buffer* local, int device) {
    Buffer* b = link_->peer(local, device);
    if (!b)
      fail(op, fmt::format("'{}' is no kernel operand or scratch buffer: remote copies and "
                           "signals reach only those on another device",
                           local->name));
    return b;
  }

  // Copies the window `sizes` at src's view indices to dst's (dst may be another
  // device's buffer of the same type).
  void copyWindow(const Op& op, const ViewRange& sv, const ViewRange& dv, Buffer* src,
                  Buffer* dst) {
    std::vector<int64_t> s0, d0;
    for (Value* i : sv.indices) s0.push_back(S(i));
    for (Value* i : dv.indices) d0.push_back(S(i));
    const std::vector<int64_t>& sizes = op.ints;
    std::vector<int64_t> sl = s0, dl = d0;
    for (size_t d = 0; d < sizes.size(); ++d) {
      sl[d] += sizes[d] - 1;
      dl[d] += sizes[d] - 1;
    }
    if (!src->inBounds(s0) || !src->inBounds(sl))
      fail(op, fmt::format("source window {} + {} outside {}", shapeStr(s0), shapeStr(sizes),
                           src->type.str()));
    if (!dst->inBounds(d0) || !dst->inBounds(dl))
      fail(op, fmt::format("destination window {} + {} outside {}", shapeStr(d0), shapeStr(sizes),
                           dst->type.str()));
    // HBM holds elements of dtypeBytes; a copy touching HBM moves only those low
    // bytes of each VMEM/SMEM word, and zeroes the upper bytes of a VMEM/SMEM
    // word it writes, as the DMA's widening mode does (isa/DmaDescriptor.h).
    bool narrow = src->type.space == MemSpace::Hbm || dst->type.space == MemSpace::Hbm;
    int bytes = isa::dtypeBytes(src->type.dtype);
    uint32_t take = (!narrow || bytes >= 4) ? ~0u : (1u << (8 * bytes)) - 1u;
    uint32_t keep = dst->type.space == MemSpace::Hbm ? ~take : 0u;
    std::vector<int64_t> i(sizes.size(), 0);
    while (true) {
      std::vector<int64_t> si = s0, di = d0;
      for (size_t d = 0; d < i.size(); ++d) {
        si[d] += i[d];
        di[d] += i[d];
      }
      uint32_t& w = dst->at(di);
      w = (w & keep) | (src->at(si) & take);
      int d = int(i.size()) - 1;
      while (d >= 0 && ++i[d] == sizes[d]) i[d--] = 0;
      if (d < 0) break;
    }
  }

  void dma(const Op& op) {
    auto views = opViews(op);
    Buffer* sem = B(views[2].ref);
    int64_t flat = semIndex(op, views[2]);
    if (op.kind == OpKind::DmaWait)
      return semWait(op, sem, flat, 1, "waits for a DMA that was never started");
    copyWindow(op, views[0], views[1], B(views[0].ref), B(views[1].ref));
    ++sem->semaphores[flat];
  }

  // A remote copy completes at once: the data lands in the same buffer of the
  // target device, its receive semaphore and this device's send semaphore count it.
  void remoteDma(const Op& op) {
    auto views = opViews(op);
    int device = remoteTarget(op);
    Buffer* send = B(views[2].ref);
    Buffer* recv = peerOf(op, B(views[3].ref), device);
    int64_t sendIdx = semIndex(op, views[2]), recvIdx = semIndex(op, views[3]);
    copyWindow(op, views[0], views[1], B(views[0].ref), peerOf(op, B(views[1].ref), device));
    ++send->semaphores[sendIdx];
    ++recv->semaphores[recvIdx];
  }

  void semaphoreOp(const Op& op) {
    auto views = opViews(op);
    Buffer* sem = B(views[0].ref);
    int64_t flat = semIndex(op, views[0]);
    if (op.kind == OpKind::SemWait)
      return semWait(op, sem, flat, op.ints[0], "waits for a semaphore nothing signals");
    if (remoteDevice(op)) sem = peerOf(op, sem, remoteTarget(op));
    sem->semaphores[flat] += op.ints[0];
  }

  void exec(const Op& op) {
    const auto& o = op.operands;
    switch (op.kind) {
      case OpKind::SConst:
        return setS(op.result(), int32_t(op.ints[0]));
      case OpKind::SBinary:
        return setS(op.result(), scalarBin(op, ScalarBin(op.ints[0]), S(o[0]), S(o[1])));
      case OpKind::SSelect:
        return setS(op.result(), S(o[0]) ? S(o[1]) : S(o[2]));
      case OpKind::ProgramId:
      case OpKind::NumPrograms: {
        size_t axis = size_t(op.ints[0]);
        if (axis >= grid_.grid.size())
          fail(op, fmt::format("grid axis {} of a {}-dimensional grid", axis, grid_.grid.size()));
        return setS(op.result(),
                    int32_t(op.kind == OpKind::ProgramId ? grid_.ids[axis] : grid_.grid[axis]));
      }
      case OpKind::SLoad:
      case OpKind::SStore: {
        size_t r = op.kind == OpKind::SStore ? 1 : 0;
        Buffer* buf = B(o[r]);
        auto idx = indices(op, r + 1, buf->type.shape.size());
        if (!buf->inBounds(idx))
          fail(op, fmt::format("index {} outside {}", shapeStr(idx), buf->type.str()));
        if (r)
          buf->at(idx) = uint32_t(S(o[0]));
        else
          setS(op.result(), int32_t(buf->at(idx)));
        return;
      }
      case OpKind::VLoad:
        return vload(op);
      case OpKind::VStore:
        return vstore(op);
      case OpKind::VConst: {
        TileData t;
        t.fill(uint32_t(op.ints[0]));
        return setT(op.result(), t);
      }
      case OpKind::VSplat: {
        TileData t;
        t.fill(uint32_t(S(o[0])));
        return setT(op.result(), t);
      }
      case OpKind::VIota: {
        TileData t;
        for (int i = 0; i < kTileElems; ++i)
          t[i] = op.ints[0] == 0 ? uint32_t(i % kLanes) : uint32_t(i / kLanes);
        return setT(op.result(), t);
      }
      case OpKind::VBinary:
        return setT(op.result(),
                    tileBinary(VecBin(op.ints[0]), o[0]->type.dtype, T(o[0]), T(o[1])));
      case OpKind::VUnary:
        return setT(op.result(), tileUnary(VecUn(op.ints[0]), o[0]->type.dtype, T(o[0])));
      case OpKind::VCmp:
        return setM(op.result(), tileCompare(Cmp(op.ints[0]), o[0]->type.dtype, T(o[0]), T(o[1])));
      case OpKind::VSelect: {
        const MaskData& m = M(o[0]);
        const TileData &a = T(o[1]), &b = T(o[2]);
        TileData t;
        for (int i = 0; i < kTileElems; ++i) t[i] = m[i] ? a[i] : b[i];
        return setT(op.result(), t);
      }
      case OpKind::MaskBinary:
        return setM(op.result(), op.ints[0] == 0 ? (M(o[0]) & M(o[1])) : (M(o[0]) | M(o[1])));
      case OpKind::MaskNot:
        return setM(op.result(), ~M(o[0]));
      case OpKind::VCast:
        if (!op.ints.empty() && op.ints[0] == 1) return setT(op.result(), T(o[0]));  // bitcast
        return setT(op.result(), tileCast(o[0]->type.dtype, op.dtype, T(o[0])));
      case OpKind::VReduceLanes:
        return setT(op.result(), tileReduceLanes(Reduce(op.ints[0]), o[0]->type.dtype, T(o[0])));
      case OpKind::VRotSublanes:
        return setT(op.result(), tileRotSublanes(T(o[0]), int(op.ints[0])));
      case OpKind::VRotLanes:
        return setT(op.result(), tileRotLanes(T(o[0]), int(op.ints[0])));
      case OpKind::VLanePerm:
        return setT(op.result(), tileLanePerm(T(o[0]), T(o[1])));
      case OpKind::AllocVmem: {
        temps_.push_back(Buffer::make(fmt::format("tmp{}", op.result()->id), op.result()->type));
        env_[op.result()] = RtValue{0, nullptr, nullptr, temps_.back().get()};
        return;
      }
      case OpKind::Matmul:
        return matmul(op);
      case OpKind::MxuLatch:
        return mxuLatch(op);
      case OpKind::MxuStart:
        return mxuStart(op);
      case OpKind::MxuFinish:
        return mxuFinish(op);
      case OpKind::DmaStart:
      case OpKind::DmaWait:
        return dma(op);
      case OpKind::RemoteDmaStart:
        return remoteDma(op);
      case OpKind::SemSignal:
      case OpKind::SemWait:
        return semaphoreOp(op);
      case OpKind::DeviceId:
        return setS(op.result(), link_ ? link_->deviceId() : 0);
      case OpKind::NumDevices:
        return setS(op.result(), link_ ? link_->deviceCount() : 1);
      case OpKind::For: {
        int64_t lo = S(o[0]), hi = S(o[1]), step = op.ints[0];
        const auto& args = op.regions[0].args;
        std::vector<RtValue> carry;
        for (size_t k = 2; k < o.size(); ++k) carry.push_back(env_.at(o[k]));
        for (int64_t i = lo; i < hi; i += step) {
          setS(args[0], int32_t(i));
          for (size_t k = 0; k < carry.size(); ++k) env_[args[k + 1]] = carry[k];
          block(op.regions[0]);
          if (!carry.empty()) {
            const Op& y = *op.regions[0].ops.back();
            for (size_t k = 0; k < carry.size(); ++k) carry[k] = env_.at(y.operands[k]);
          }
        }
        for (size_t k = 0; k < carry.size(); ++k) env_[op.results[k]] = carry[k];
        return;
      }
      case OpKind::Yield:
        return;  // the enclosing for reads its operands
      case OpKind::If:
        if (S(o[0]))
          block(op.regions[0]);
        else if (op.regions.size() > 1)
          block(op.regions[1]);
        return;
      case OpKind::Return:
        returned_.clear();
        for (Value* v : o) returned_.push_back(S(v));
        return;
    }
  }
};

}  // namespace

std::vector<int32_t> Interpreter::run(const Function& fn, const std::vector<Arg>& args,
                                      const GridContext& grid) {
  Run r(options_, grid, opsExecuted_, link_, latched_);
  return r.function(fn, args);
}

}  // namespace tpusim::kernels::llo
