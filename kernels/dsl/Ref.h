// Refs: the kernel's view of a buffer (Pallas Ref). VMEM refs are loaded and
// stored as Arrays over windows of their last two dims; SMEM refs hold scalars;
// HBM (ANY) refs can only be copied with async copies; semaphore refs count DMA
// completions. `at(i)` fixes the leading dimension (Pallas `ref[i]`).
#pragma once

#include <functional>
#include <vector>

#include "kernels/dsl/Array.h"

namespace tpusim::kernels::dsl {

using llo::MemSpace;

// A window of `size` elements from `start` along one dimension (Pallas pl.ds).
struct Slice {
  Scalar start;
  int64_t size;
};
inline Slice ds(Scalar start, int64_t size) { return Slice{start, size}; }

class Ref;

// A window of a ref for async copies: one Slice per dimension.
struct Window;

class Ref {
 public:
  Ref() = default;
  explicit Ref(llo::Value* v) : v_(v) {}
  llo::Value* value() const { return v_; }
  // Shape and rank after the fixed leading indices.
  std::vector<int64_t> shape() const;
  int rank() const { return static_cast<int>(shape().size()); }
  DType dtype() const { return v_->type.dtype; }
  MemSpace space() const { return v_->type.space; }
  const std::vector<Scalar>& leadIndices() const { return lead_; }

  Ref at(Scalar i) const;

  // VMEM: the whole (last two dims) window, or a window of rows and columns
  // (the column start must be a multiple of 128).
  Array load(Loc loc = Loc::here()) const;
  Array load(Slice rows, Slice cols, Loc loc = Loc::here()) const;
  void store(const Array& value, Loc loc = Loc::here()) const;
  void store(Slice rows, Slice cols, const Array& value, Loc loc = Loc::here()) const;

  // SMEM: one scalar (indices for the remaining dims).
  Scalar get(std::vector<Scalar> indices, Loc loc = Loc::here()) const;
  void set(std::vector<Scalar> indices, Scalar value, Loc loc = Loc::here()) const;

  // A window for async copies; no slices = the whole ref.
  Window window(std::vector<Slice> slices = {}) const;

 private:
  llo::Value* v_ = nullptr;
  std::vector<Scalar> lead_;
};

struct Window {
  Ref ref;
  std::vector<Slice> slices;  // one per remaining dimension of ref
};

// An asynchronous DMA copy signalling `sem` (a semaphore ref with its index fixed
// by at()); wait() blocks until it has completed (Pallas make_async_copy).
class AsyncCopy {
 public:
  AsyncCopy(Window src, Window dst, Ref sem)
      : src_(std::move(src)), dst_(std::move(dst)), sem_(std::move(sem)) {}
  void start(Loc loc = Loc::here()) const;
  void wait(Loc loc = Loc::here()) const;

 private:
  void emit(llo::OpKind kind, const Loc& loc) const;
  Window src_, dst_;
  Ref sem_;
};
AsyncCopy make_async_copy(Window src, Window dst, Ref sem);

// A copy from this device's `src` window to the `dst` window of the same ref on
// device `device_id` (Pallas pltpu.make_async_remote_copy): HBM or VMEM on
// either side, no dtype conversion (bf16 / int8 only between refs of one space).
// start() issues it; when its last byte has left, `send_sem` here counts it
// (wait_send(): the source may be reused); when it has arrived, `recv_sem` on
// the target counts it (the target's wait_recv()). Every device runs the same
// kernel, so the target waits with the same copy's wait_recv(). Semaphores are
// indexed down to one element (sem.at(i)); the device may not be this one.
class RemoteCopy {
 public:
  RemoteCopy(Window src, Window dst, Ref send_sem, Ref recv_sem, Scalar device_id, Loc loc);
  void start(Loc loc = Loc::here()) const;
  void wait_send(Loc loc = Loc::here()) const;
  void wait_recv(Loc loc = Loc::here()) const;

 private:
  void wait(const Ref& sem, const Loc& loc) const;
  Window src_, dst_;
  Ref send_, recv_;
  Scalar device_;
};
RemoteCopy make_async_remote_copy(Window src, Window dst, Ref send_sem, Ref recv_sem,
                                  Scalar device_id, Loc loc = Loc::here());
// The same on whole refs.
RemoteCopy make_async_remote_copy(const Ref& src, const Ref& dst, Ref send_sem, Ref recv_sem,
                                  Scalar device_id, Loc loc = Loc::here());
// The brief name of it: remote_copy(src, dst, send_sem, recv_sem, device_id).
inline RemoteCopy remote_copy(Window src, Window dst, Ref send_sem, Ref recv_sem, Scalar device_id,
                              Loc loc = Loc::here()) {
  return make_async_remote_copy(std::move(src), std::move(dst), std::move(send_sem),
                                std::move(recv_sem), device_id, loc);
}
inline RemoteCopy remote_copy(const Ref& src, const Ref& dst, Ref send_sem, Ref recv_sem,
                              Scalar device_id, Loc loc = Loc::here()) {
  return make_async_remote_copy(src, dst, std::move(send_sem), std::move(recv_sem), device_id, loc);
}

// Semaphores (pltpu.semaphore_signal / semaphore_wait): add `inc` (a constant,
// 0 .. 65535) to `sem` here, or to the same semaphore on another device; wait
// until `sem` holds at least `value`, then subtract it. A barrier: signal each
// peer's barrier semaphore once, then wait for as many signals.
void semaphore_signal(const Ref& sem, int64_t inc = 1, Loc loc = Loc::here());
void semaphore_signal(const Ref& sem, int64_t inc, Scalar device_id, Loc loc = Loc::here());
void semaphore_wait(const Ref& sem, int64_t value = 1, Loc loc = Loc::here());

// refs[k][...] = values[k] for every k, in one tile loop: the whole windows of
// the refs (after their fixed leading indices) must have one shape. A value
// the arrays share is computed once per tile, in registers (as within one
// store), instead of once per store.
void store_together(const std::vector<Ref>& refs, const std::vector<Array>& values,
                    Loc loc = Loc::here());
// The same, and in the same tile loop accs[j][...] += the row tiles of sums[j]
// (f32 arrays over the windows' shape) in row order: each acc is an f32 [8, cols]
// window, one accumulator tile per column tile; sum(sum(acc[...], 0), 1) is then
// the sum of sums[j]. A kernel that stores an element-wise output and sums a
// value computed from the same tiles (the loss's gradient and its one-hot sum)
// walks them once.
void store_together(const std::vector<Ref>& refs, const std::vector<Array>& values,
                    const std::vector<Ref>& accs, const std::vector<Array>& sums,
                    Loc loc = Loc::here());
// The same over the columns `cols` of every ref (all of their rows): a block
// of whole rows walked one column window after another, the accumulators
// [8, cols.size] each.
void store_together(const std::vector<Ref>& refs, Slice cols, const std::vector<Array>& values,
                    const std::vector<Ref>& accs, const std::vector<Array>& sums,
                    Loc loc = Loc::here());

// Structured control flow traced into the kernel IR.
void when(Scalar cond, const std::function<void()>& then, Loc loc = Loc::here());
void when_else(Scalar cond, const std::function<void()>& then,
               const std::function<void()>& otherwise, Loc loc = Loc::here());
void fori_loop(Scalar lower, Scalar upper, const std::function<void(Scalar)>& body,
               Loc loc = Loc::here());
// lax.fori_loop(lower, upper, body, init) with a carry: body(i, carry)
// returns the next carry; the result is the carry after the last trip (init
// when the loop runs zero times). Carried arrays stay in vector registers, at
// most kMaxCarriedTiles (8,128) tiles in all (keep bigger state in a scratch
// ref); their shapes and dtypes may not change from trip to trip.
constexpr int kMaxCarriedTiles = 32;
Scalar fori_loop(Scalar lower, Scalar upper, const std::function<Scalar(Scalar, Scalar)>& body,
                 Scalar init, Loc loc = Loc::here());
Array fori_loop(Scalar lower, Scalar upper, const std::function<Array(Scalar, Array)>& body,
                const Array& init, Loc loc = Loc::here());
std::vector<Array> fori_loop(
    Scalar lower, Scalar upper,
    const std::function<std::vector<Array>(Scalar, const std::vector<Array>&)>& body,
    const std::vector<Array>& init, Loc loc = Loc::here());

// A latched dot split in time (software pipelining across loop iterations):
// mxu_start streams x [M, K] through the weights mxu_latch left (K x n) into
// result slot set `set` of the MXUs (slots set x M/8 ...) and returns at
// once; mxu_finish pops that set into dst[rows, cols] (M x n; accumulate:
// adds to it), the chunks summed in k order: a plain dot's bits. No other
// dot may run between them (interpret mode checks); a finish in a loop body
// before the start of the same set pops the previous iteration's results,
// and the code generator keeps the body long enough for them.
void mxu_start(const Array& x, int64_t n, int64_t set, Loc loc = Loc::here());
void mxu_finish(const Ref& dst, Slice rows, Slice cols, int64_t k, int64_t set, bool accumulate,
                Loc loc = Loc::here());

}  // namespace tpusim::kernels::dsl
