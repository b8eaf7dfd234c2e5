#include "sim/mxu/MxuModel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "isa/support/Numerics.h"
#include "sim/mxu/MxuRowKernels.h"

namespace tpusim::sim {
namespace {

// "Never happened": far enough below 0 that adding N or 8 stays negative.
constexpr int64_t kNever = -(int64_t{1} << 40);
constexpr int kRows = isa::kSublanes;  // LHS rows per mm, result rows per slot

}  // namespace

MxuModel::MxuModel(int n, int slots, bool functional, bool packedInt8)
    : n_(n),
      slots_(slots),
      functional_(functional),
      rules_(n, packedInt8),
      lastIssue_(0),
      lastPush_(kNever),
      lastLatch_(kNever),
      lastMm_(kNever),
      lastPop_(kNever) {
  if (n < 1 || n > 256 || (n > isa::kLanes && n != 2 * isa::kLanes))
    throw MxuPanic(fmt::format("MxuModel: unsupported array size {}", n));
  slotState_.resize(slots);
  for (Slot& s : slotState_) {
    s.lastIssue = s.readyAt = s.prevReadyAt = kNever;
    if (functional_) s.committed.assign(kRows * n, 0);
  }
  if (functional_) {
    staging_.assign(size_t(n) * n, 0);
    active_.assign(size_t(n) * n, 0);
    activeF32_.assign(size_t(n) * n, 0.0f);
    activeS32_.assign(size_t(n) * n, 0);
    if (packedInt8) activeHiS32_.assign(size_t(n) * n, 0);
    rowF32_.resize(n);
    outF32_.resize(n);
    terms_.resize(n);
    weightRowFinite_.assign(size_t(n), 1);
    rowS32_.resize(n);
    outS32_.resize(n);
    if (packedInt8) {
      rowHiS32_.resize(n);
      outHiS32_.resize(n);
    }
  }
}

// ---- ready cycles (isa/README.md, "MXU", rules 1-4) ----------------------

uint64_t MxuModel::weightPushReadyAt(bool transposed) {
  int64_t t = std::max({now(), lastPush_ + 8, lastLatch_ + 1});
  if (transposed) t = std::max(t, lastLatch_ + n_);
  return uint64_t(t);
}

uint64_t MxuModel::latchReadyAt() {
  return uint64_t(std::max({now(), lastPush_ + 8, lastMm_ + 8, lastLatch_ + n_}));
}

uint64_t MxuModel::matmulReadyAt() {
  return uint64_t(std::max({now(), lastMm_ + 8, lastLatch_ + 1}));
}

uint64_t MxuModel::popReadyAt(int slot) {
  if (slot < 0 || slot >= slots_) throw MxuPanic(fmt::format("MXU pop: no slot a{}", slot));
  // Counts every mm issued so far, also one in the current cycle, so the answer
  // holds for any later cycle; pop() itself lets a pop share the cycle of an mm
  // to its slot (the bundle asked before issuing either).
  return uint64_t(std::max({now(), lastPop_ + 1, slotState_[slot].readyAt}));
}

void MxuModel::checkReady(const char* what, uint64_t cycle, int64_t readyAt) const {
  if (int64_t(cycle) < readyAt)
    throw MxuPanic(fmt::format("MXU {} issued at cycle {} but it is not ready before cycle {}",
                               what, cycle, readyAt));
}

void MxuModel::noteIssue(uint64_t cycle) { lastIssue_ = std::max(lastIssue_, int64_t(cycle)); }

uint32_t MxuModel::lane(VregIn v, int sublane, int element) const {
  if (element < isa::kLanes) return at(*v.lo, sublane, element);
  return at(*v.hi, sublane, element - isa::kLanes);
}

static void requireVregs(VregIn v, int n, const char* what) {
  if (!v.lo || (n > isa::kLanes && !v.hi))
    throw MxuPanic(fmt::format("MXU {}: missing source vreg{} for N = {}", what,
                               n > isa::kLanes ? " pair" : "", n));
}

// ---- commands -------------------------------------------------------------

MxuStatus MxuModel::weightPush(uint64_t cycle, VregIn rows, bool transposed, MxuDtype dtype) {
  checkReady(transposed ? "wpush.t" : "wpush", cycle, int64_t(weightPushReadyAt(transposed)));
  if (MxuStatus f = rules_.checkPush(dtype); !f.ok()) return f;
  if (functional_) {
    requireVregs(rows, n_, "wpush");
    const int base = 8 * rules_.pushIndex();
    for (int s = 0; s < kRows && base + s < n_; ++s)
      for (int i = 0; i < n_; ++i) {
        uint16_t v = uint16_t(lane(rows, s, i));
        if (transposed)
          staging_[size_t(i) * n_ + base + s] = v;  // column base+s, row i
        else
          staging_[size_t(base + s) * n_ + i] = v;  // row base+s, column i
      }
  }
  rules_.onPush(dtype);
  lastPush_ = int64_t(cycle);
  noteIssue(cycle);
  ++stats_.pushes;
  return {};
}

MxuStatus MxuModel::latch(uint64_t cycle) {
  checkReady("latch", cycle, int64_t(latchReadyAt()));
  rules_.onLatch();
  if (functional_) prepareActive();
  lastLatch_ = int64_t(cycle);
  noteIssue(cycle);
  ++stats_.latches;
  return {};
}

void MxuModel::prepareActive() {
  active_.swap(staging_);
  std::fill(staging_.begin(), staging_.end(), 0);
  // The f32 and s32 views are built by the first mm that reads them: a latch
  // serves one dtype, and in decode-shaped work a single mm.
  f32View_ = s32View_ = false;
}

void MxuModel::buildF32View() {
  for (size_t i = 0; i < active_.size(); ++i) activeF32_[i] = bf16BitsToF32(active_[i]);
  // A zero LHS element times a finite weight adds +-0: the sum does not move
  // (MxuRowKernels.h). Against inf or NaN it makes NaN, so such rows always count.
  for (int k = 0; k < n_; ++k) {
    bool finite = true;
    for (int c = 0; c < n_; ++c) finite &= std::isfinite(activeF32_[size_t(k) * n_ + c]);
    weightRowFinite_[size_t(k)] = finite;
  }
  f32View_ = true;
}

void MxuModel::buildS32View() {
  for (size_t i = 0; i < active_.size(); ++i) {
    activeS32_[i] = int8_t(uint8_t(active_[i]));
    if (!activeHiS32_.empty()) activeHiS32_[i] = int8_t(uint8_t(active_[i] >> 8));
  }
  s32View_ = true;
}

MxuStatus MxuModel::matmul(uint64_t cycle, VregIn lhs, MxuDtype dtype, int slot, bool accumulate) {
  checkReady(accumulate ? "mma" : "mm", cycle, int64_t(matmulReadyAt()));
  if (slot < 0 || slot >= slots_) throw MxuPanic(fmt::format("MXU mm: no slot a{}", slot));
  if (MxuStatus f = rules_.checkMatmul(dtype); !f.ok()) return f;
  Slot& s = slotState_[slot];
  const int64_t t = int64_t(cycle);
  const int64_t firstRow = t + 2 * n_;  // row j is readable from t + j + 2N

  std::vector<uint32_t> result;
  if (functional_) {
    requireVregs(lhs, n_, "mm");
    if (dtype == MxuDtype::Bf16 && !f32View_) buildF32View();
    if (dtype != MxuDtype::Bf16 && !s32View_) buildS32View();
    const std::vector<uint32_t>& prior = s.pending.empty() ? s.committed : s.pending.back().values;
    // A slot's values are 8 x N words per mm: reuse the buffers pops retire
    // instead of a heap allocation per mm.
    if (!spare_.empty()) {
      result = std::move(spare_.back());
      spare_.pop_back();
    }
    if (accumulate)
      result.assign(prior.begin(), prior.end());
    else
      result.assign(size_t(kRows) * n_, 0);
    for (int j = 0; j < kRows; ++j) {
      uint32_t* out = &result[size_t(j) * n_];
      if (dtype == MxuDtype::Bf16) {
        int count = 0;
        for (int k = 0; k < n_; ++k) {
          rowF32_[k] = bf16BitsToF32(uint16_t(lane(lhs, j, k)));
          terms_[size_t(count)] = k;
          count += rowF32_[k] != 0.0f || !weightRowFinite_[size_t(k)];
        }
        mxuRowF32(rowF32_.data(), activeF32_.data(), outF32_.data(), n_, terms_.data(), count);
        for (int c = 0; c < n_; ++c) {
          float r = accumulate ? floatOf(out[c]) + outF32_[c] : outF32_[c];
          out[c] = bitsOf(canonicalizeNan(r));
        }
      } else {
        // Integer sums: a zero term never changes them.
        int count = 0;
        for (int k = 0; k < n_; ++k) {
          rowS32_[k] = int8_t(uint8_t(lane(lhs, j, k)));
          terms_[size_t(count)] = k;
          count += rowS32_[k] != 0;
        }
        mxuRowS32(rowS32_.data(), activeS32_.data(), outS32_.data(), n_, terms_.data(), count);
        if (dtype == MxuDtype::S8x2) {
          // The high bytes: K elements N..2N-1 of the tile (s32 sums wrap, so
          // the order of the two halves does not matter).
          int hiCount = 0;
          for (int k = 0; k < n_; ++k) {
            rowHiS32_[k] = int8_t(uint8_t(lane(lhs, j, k) >> 8));
            terms_[size_t(hiCount)] = k;
            hiCount += rowHiS32_[k] != 0;
          }
          mxuRowS32(rowHiS32_.data(), activeHiS32_.data(), outHiS32_.data(), n_, terms_.data(),
                    hiCount);
          for (int c = 0; c < n_; ++c) outS32_[c] += outHiS32_[c];
        }
        for (int c = 0; c < n_; ++c) out[c] = accumulate ? out[c] + outS32_[c] : outS32_[c];
      }
    }
  }
  if (observer_) {
    for (int j = 0; j < kRows; ++j) {
      MxuResultRow row{uint64_t(firstRow + j), slot, j, {}};
      if (functional_) row.values.assign(&result[size_t(j) * n_], &result[size_t(j + 1) * n_]);
      observer_(row);
    }
  }
  if (functional_) s.pending.push_back({t, std::move(result)});
  s.prevReadyAt = s.readyAt;
  s.readyAt = firstRow + kRows - 1;
  s.lastIssue = t;
  lastMm_ = t;
  noteIssue(cycle);
  ++stats_.matmuls;
  stats_.rowsStreamed += kRows;
  stats_.busyCycles += kRows;
  return {};
}

MxuStatus MxuModel::pop(uint64_t cycle, int slot, VregOut out) {
  if (slot < 0 || slot >= slots_) throw MxuPanic(fmt::format("MXU pop: no slot a{}", slot));
  Slot& s = slotState_[slot];
  const int64_t t = int64_t(cycle);
  // An mm to this slot in this very cycle does not hold the pop back: the pop
  // reads the previous contents (isa/README.md, MXU rule 4).
  const int64_t slotReady = s.lastIssue == t ? s.prevReadyAt : s.readyAt;
  checkReady("pop", cycle, std::max({now(), lastPop_ + 1, slotReady}));
  if (functional_) {
    while (!s.pending.empty() && s.pending.front().issue < t) {
      s.committed.swap(s.pending.front().values);
      spare_.push_back(std::move(s.pending.front().values));
      s.pending.pop_front();
    }
    if (!out.lo || (n_ > isa::kLanes && !out.hi))
      throw MxuPanic(fmt::format("MXU pop: missing destination vreg for N = {}", n_));
    out.lo->fill(0);
    if (out.hi) out.hi->fill(0);
    for (int j = 0; j < kRows; ++j)
      for (int c = 0; c < n_; ++c) {
        uint32_t v = s.committed[size_t(j) * n_ + c];
        if (c < isa::kLanes)
          at(*out.lo, j, c) = v;
        else
          at(*out.hi, j, c - isa::kLanes) = v;
      }
  }
  lastPop_ = t;
  noteIssue(cycle);
  ++stats_.pops;
  return {};
}

}  // namespace tpusim::sim
