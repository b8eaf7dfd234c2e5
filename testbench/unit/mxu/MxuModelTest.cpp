// MxuModel alone: the timing rules of isa/README.md ("MXU") with expected
// cycles written in terms of N, the numerics against a plain scalar reference
// of the spec's formula, and the faults.
#include <catch2/catch.hpp>

#include <random>

#include "isa/support/Numerics.h"
#include "isa/target/MxuConfig.h"
#include "sim/mxu/MxuModel.h"
#include "testbench/cosim/mxu/MxuStream.h"

using namespace tpusim;
using namespace tpusim::sim;

namespace {

constexpr int kRows = 8;

// A weight matrix / LHS block as raw 16-bit lanes, row-major.
using Matrix = std::vector<uint16_t>;

uint16_t randomBf16(std::mt19937_64& rng) {
  return uint16_t((rng() & 1) << 15 | (120 + rng() % 15) << 7 | (rng() & 0x7F));
}

Matrix randomMatrix(std::mt19937_64& rng, int rows, int cols, MxuDtype dtype) {
  Matrix m(size_t(rows) * cols);
  for (uint16_t& v : m) v = dtype == MxuDtype::Bf16 ? randomBf16(rng) : uint16_t(rng() & 0xFF);
  return m;
}

// Rows r0..r0+7 of m (cols wide) as vregs: lanes beyond the matrix hold garbage.
std::vector<VregData> toVregs(const Matrix& m, int cols, int r0, std::mt19937_64& rng) {
  std::vector<VregData> v(cols > 128 ? 2 : 1);
  for (VregData& d : v)
    for (uint32_t& w : d) w = uint32_t(rng());
  for (int s = 0; s < kRows; ++s)
    for (int c = 0; c < cols; ++c) {
      uint32_t val = (uint32_t(rng()) & 0xFFFF0000u) | m[size_t(r0 + s) * cols + c];
      at(v[c / 128], s, c % 128) = val;
    }
  return v;
}
VregIn in(const std::vector<VregData>& v) { return {&v[0], v.size() > 1 ? &v[1] : nullptr}; }

// The spec's formula, one multiply and one add at a time.
std::vector<uint32_t> reference(const Matrix& w, const Matrix& a, int n, MxuDtype dtype,
                                const std::vector<uint32_t>* prior) {
  std::vector<uint32_t> out(size_t(kRows) * n);
  for (int j = 0; j < kRows; ++j)
    for (int c = 0; c < n; ++c) {
      uint32_t& o = out[size_t(j) * n + c];
      if (dtype == MxuDtype::Bf16) {
        float r = 0.0f;
        for (int k = 0; k < n; ++k) {
          float p = bf16BitsToF32(a[size_t(j) * n + k]) * bf16BitsToF32(w[size_t(k) * n + c]);
          r = r + p;
        }
        if (prior) r = floatOf((*prior)[size_t(j) * n + c]) + r;
        o = bitsOf(canonicalizeNan(r));
      } else {
        uint32_t r = 0;
        for (int k = 0; k < n; ++k)
          r += uint32_t(int8_t(uint8_t(a[size_t(j) * n + k])) *
                        int8_t(uint8_t(w[size_t(k) * n + c])));
        o = prior ? (*prior)[size_t(j) * n + c] + r : r;
      }
    }
  return out;
}

// Pops slot at `cycle` (the test knows when the slot's last mm is done).
// sameBundle: the pop shares its cycle with an mm issued just before it.
std::vector<uint32_t> popSlot(MxuModel& m, int slot, int n, uint64_t cycle,
                              bool sameBundle = false) {
  VregData lo, hi;
  if (!sameBundle) REQUIRE(m.popReadyAt(slot) <= cycle);
  REQUIRE(m.pop(cycle, slot, {&lo, n > 128 ? &hi : nullptr}).ok());
  std::vector<uint32_t> out(size_t(kRows) * n);
  for (int j = 0; j < kRows; ++j) {
    for (int c = 0; c < n; ++c) out[size_t(j) * n + c] = at(c < 128 ? lo : hi, j, c % 128);
    for (int c = n; c < 128; ++c) REQUIRE(at(lo, j, c) == 0);  // lanes >= N read as zero
  }
  return out;
}

// Pushes all of w (N x N) at the earliest cycles, transposed or not, then latches.
void loadWeights(MxuModel& m, const Matrix& w, MxuDtype dtype, bool transposed,
                 std::mt19937_64& rng) {
  const int n = m.size();
  Matrix src = w;
  if (transposed)  // wpush.t of W^T puts W in the array
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) src[size_t(r) * n + c] = w[size_t(c) * n + r];
  Matrix padded(size_t(8 * ((n + 7) / 8)) * n, 0);
  std::copy(src.begin(), src.end(), padded.begin());
  for (int p = 0; p < (n + 7) / 8; ++p) {
    auto v = toVregs(padded, n, 8 * p, rng);
    REQUIRE(m.weightPush(m.weightPushReadyAt(transposed), in(v), transposed, dtype).ok());
  }
  REQUIRE(m.latch(m.latchReadyAt()).ok());
}

// Issues an mm at the earliest cycle; returns the cycle its slot is ready.
uint64_t mm(MxuModel& m, const std::vector<VregData>& v, MxuDtype dtype, int slot, bool acc) {
  const uint64_t t = m.matmulReadyAt();
  REQUIRE(m.matmul(t, in(v), dtype, slot, acc).ok());
  return t + 7 + 2 * m.size();
}

}  // namespace

TEST_CASE("MXU ready cycles follow the ISA rules for every size") {
  for (int n : {4, 8, 16, 128, 256}) {
    INFO("N = " << n);
    MxuModel m(n, 16, false);
    const int tile = (n + 7) / 8;
    VregIn none;
    // wpush occupies the weight port for 8 cycles
    REQUIRE(m.weightPushReadyAt(false) == 0);
    REQUIRE(m.weightPush(0, none, false, MxuDtype::Bf16).ok());
    REQUIRE(m.weightPushReadyAt(false) == 8);
    REQUIRE_THROWS_AS(m.weightPush(7, none, false, MxuDtype::Bf16), MxuPanic);
    // the LHS port is independent of the weight port
    REQUIRE(m.matmulReadyAt() == 0);
    REQUIRE(m.matmul(0, none, MxuDtype::Bf16, 3, false).ok());
    REQUIRE(m.matmulReadyAt() == 8);
    // the answer counts the mm just issued: the slot is ready after its last row
    REQUIRE(m.popReadyAt(3) == uint64_t(7 + 2 * n));
    // but a pop in the mm's own cycle (same bundle) reads the previous contents
    REQUIRE(m.pop(0, 3, {}).ok());
    REQUIRE(m.popReadyAt(4) == 1);  // one pop per cycle; a slot never written is ready
    REQUIRE_THROWS_AS(m.pop(1, 3, {}), MxuPanic);
    REQUIRE_THROWS_AS(m.pop(uint64_t(6 + 2 * n), 3, {}), MxuPanic);
    // the latch waits for both ports
    REQUIRE(m.latchReadyAt() == 8);
    const uint64_t tl = 8 + 5;
    REQUIRE(m.latch(tl).ok());
    REQUIRE(m.weightPushReadyAt(false) == tl + 1);
    REQUIRE(m.weightPushReadyAt(true) == tl + n);  // transposed: the latch must pass every row
    REQUIRE(m.matmulReadyAt() == tl + 1);
    REQUIRE(m.latchReadyAt() == tl + n);  // the previous latch must have left the array
    // a whole tile of pushes, then the latch waits for the last one's 8 cycles
    uint64_t t = tl + 1;
    for (int p = 0; p < tile; ++p, t += 8) {
      REQUIRE(m.weightPushReadyAt(false) == t);
      REQUIRE(m.weightPush(t, none, false, MxuDtype::Bf16).ok());
    }
    REQUIRE(m.latchReadyAt() == std::max<uint64_t>(t, tl + n));
    REQUIRE(m.stats().pushes == uint64_t(1 + tile));
    REQUIRE(m.stats().rowsStreamed == 8);
  }
}

TEST_CASE("MXU pop rules: one per cycle, and an mm of the same cycle does not hold it back") {
  const int n = 16;
  MxuModel m(n, 16, true);
  std::mt19937_64 rng(3);
  Matrix w = randomMatrix(rng, n, n, MxuDtype::Bf16), a = randomMatrix(rng, 8, n, MxuDtype::Bf16);
  loadWeights(m, w, MxuDtype::Bf16, false, rng);
  auto va = toVregs(a, n, 0, rng);
  const uint64_t t0 = m.matmulReadyAt();
  REQUIRE(m.matmul(t0, in(va), MxuDtype::Bf16, 0, false).ok());
  const uint64_t ready = t0 + 7 + 2 * n;
  VregData scratch;
  REQUIRE(m.pop(t0 + 1, 3, {&scratch, nullptr}).ok());  // time moves on
  REQUIRE(m.popReadyAt(0) == ready);
  // a second mm into a0 issued exactly when the first is ready; a pop in that
  // cycle reads the first result
  auto va2 = toVregs(randomMatrix(rng, 8, n, MxuDtype::Bf16), n, 0, rng);
  REQUIRE(m.popReadyAt(0) == ready);  // asked before the bundle issues
  REQUIRE(m.matmul(ready, in(va2), MxuDtype::Bf16, 0, true).ok());
  REQUIRE(popSlot(m, 0, n, ready, true) == reference(w, a, n, MxuDtype::Bf16, nullptr));
  // the pop port is used in this cycle: the next pop (any slot) is one cycle later
  REQUIRE(m.popReadyAt(5) == ready + 1);
  REQUIRE(m.pop(ready + 1, 5, {&scratch, nullptr}).ok());
  // and a0 is ready again only when the mma's last row has landed
  REQUIRE(m.popReadyAt(0) == ready + 7 + 2 * n);
}

TEST_CASE("MXU result rows land at t + j + 2N") {
  for (int n : {4, 32}) {
    MxuModel m(n, 16, false);
    std::vector<MxuResultRow> rows;
    m.setResultObserver([&](const MxuResultRow& r) { rows.push_back(r); });
    REQUIRE(m.matmul(10, {}, MxuDtype::S8, 2, false).ok());
    REQUIRE(rows.size() == 8);
    for (int j = 0; j < 8; ++j) {
      REQUIRE(rows[j].cycle == uint64_t(10 + j + 2 * n));
      REQUIRE(rows[j].slot == 2);
      REQUIRE(rows[j].row == j);
    }
  }
}

TEST_CASE("MXU numerics equal the spec's formula: bf16 and int8, mm and mma, transposed") {
  std::mt19937_64 rng(42);
  for (int n : {4, 8, 16, 64, 128, 256})
    for (MxuDtype dtype : {MxuDtype::Bf16, MxuDtype::S8})
      for (bool transposed : {false, true}) {
        INFO("N = " << n << " dtype " << mxuDtypeName(dtype) << " transposed " << transposed);
        MxuModel m(n, 16, true);
        Matrix w = randomMatrix(rng, n, n, dtype);
        loadWeights(m, w, dtype, transposed, rng);
        Matrix a1 = randomMatrix(rng, 8, n, dtype), a2 = randomMatrix(rng, 8, n, dtype);
        auto v1 = toVregs(a1, n, 0, rng), v2 = toVregs(a2, n, 0, rng);
        mm(m, v1, dtype, 7, false);
        const uint64_t ready = mm(m, v2, dtype, 7, true);
        std::vector<uint32_t> r1 = reference(w, a1, n, dtype, nullptr);
        REQUIRE(popSlot(m, 7, n, ready) == reference(w, a2, n, dtype, &r1));
      }
}

TEST_CASE("MXU packed int8 (s8x2): a 2N-deep K tile, low bytes K 0..N-1, high bytes N..2N-1") {
  std::mt19937_64 rng(17);
  for (int n : {4, 8, 16, 128, 256})
    for (bool transposed : {false, true}) {
      INFO("N = " << n << " transposed " << transposed);
      MxuModel m(n, 16, true, true);
      // W is 2N x N, A is 8 x 2N, both int8; packed: value (k, c) holds k and k + N.
      Matrix w = randomMatrix(rng, 2 * n, n, MxuDtype::S8);
      Matrix a1 = randomMatrix(rng, 8, 2 * n, MxuDtype::S8);
      Matrix a2 = randomMatrix(rng, 8, 2 * n, MxuDtype::S8);
      Matrix wp(size_t(n) * n), ap1(size_t(8) * n), ap2(size_t(8) * n);
      for (int k = 0; k < n; ++k)
        for (int c = 0; c < n; ++c)
          wp[size_t(k) * n + c] = uint16_t(w[size_t(k) * n + c] | w[size_t(k + n) * n + c] << 8);
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < n; ++k) {
          ap1[size_t(j) * n + k] =
              uint16_t(a1[size_t(j) * 2 * n + k] | a1[size_t(j) * 2 * n + k + n] << 8);
          ap2[size_t(j) * n + k] =
              uint16_t(a2[size_t(j) * 2 * n + k] | a2[size_t(j) * 2 * n + k + n] << 8);
        }
      loadWeights(m, wp, MxuDtype::S8x2, transposed, rng);
      auto v1 = toVregs(ap1, n, 0, rng), v2 = toVregs(ap2, n, 0, rng);
      mm(m, v1, MxuDtype::S8x2, 3, false);
      const uint64_t ready = mm(m, v2, MxuDtype::S8x2, 3, true);
      // a1 x W + a2 x W, the plain int8 dot over all 2N values of K
      std::vector<uint32_t> want(size_t(8) * n, 0);
      for (const Matrix* a : {&a1, &a2})
        for (int j = 0; j < 8; ++j)
          for (int c = 0; c < n; ++c)
            for (int k = 0; k < 2 * n; ++k)
              want[size_t(j) * n + c] += uint32_t(int8_t(uint8_t((*a)[size_t(j) * 2 * n + k])) *
                                                  int8_t(uint8_t(w[size_t(k) * n + c])));
      REQUIRE(popSlot(m, 3, n, ready) == want);
      REQUIRE(m.stats().matmuls == 2);  // at the s8 timing: one mm per 8 rows
    }
}

TEST_CASE("MXU packed int8 is a fault on an MXU without it (mxu.int8_rate 1)") {
  MxuModel m(16, 16, false);  // packedInt8 = false
  VregIn none;
  MxuStatus st = m.weightPush(0, none, false, MxuDtype::S8x2);
  REQUIRE(st.fault().find("no packed int8 mode") != std::string::npos);
  st = m.matmul(0, none, MxuDtype::S8x2, 0, false);
  REQUIRE(st.fault().find("mm.s8x2") != std::string::npos);
  REQUIRE(m.stats().pushes == 0);
  REQUIRE(m.stats().matmuls == 0);
  MxuModel p(16, 16, false, true);
  REQUIRE(p.weightPush(0, none, false, MxuDtype::S8x2).ok());
  REQUIRE(p.latch(p.latchReadyAt()).ok());
  st = p.matmul(p.matmulReadyAt(), none, MxuDtype::S8, 0, false);
  REQUIRE(st.fault().find("mm.s8 against active s8x2 weights") != std::string::npos);
}

TEST_CASE("MXU weights loaded behind running mms do not disturb them; latch clears staging") {
  const int n = 16;
  std::mt19937_64 rng(5);
  MxuModel m(n, 16, true);
  Matrix wa = randomMatrix(rng, n, n, MxuDtype::Bf16), wb = randomMatrix(rng, n, n, MxuDtype::Bf16);
  loadWeights(m, wa, MxuDtype::Bf16, false, rng);
  Matrix a = randomMatrix(rng, 8, n, MxuDtype::Bf16);
  auto va = toVregs(a, n, 0, rng);
  const uint64_t ready0 = mm(m, va, MxuDtype::Bf16, 0, false);
  // only the first 8 rows of wb: the rest of the new tile must read as zero
  auto top = toVregs(wb, n, 0, rng);
  REQUIRE(m.weightPush(m.weightPushReadyAt(false), in(top), false, MxuDtype::Bf16).ok());
  REQUIRE(m.latch(m.latchReadyAt()).ok());
  const uint64_t ready1 = mm(m, va, MxuDtype::Bf16, 1, false);
  REQUIRE(popSlot(m, 0, n, std::max(ready0, m.matmulReadyAt())) ==
          reference(wa, a, n, MxuDtype::Bf16, nullptr));
  Matrix half = wb;
  std::fill(half.begin() + 8 * n, half.end(), 0);
  REQUIRE(popSlot(m, 1, n, ready1) == reference(half, a, n, MxuDtype::Bf16, nullptr));
}

TEST_CASE("MXU special values: NaN is canonical, infinities and subnormals per IEEE") {
  const int n = 8;
  MxuModel m(n, 16, true);
  std::mt19937_64 rng(9);
  Matrix w(n * n, 0x3F80);  // all ones
  w[0] = 0x7F80;            // W[0][0] = +inf
  w[1] = 0x0001;            // W[0][1] = smallest bf16 subnormal
  loadWeights(m, w, MxuDtype::Bf16, false, rng);
  Matrix a(8 * n, 0x0000);
  a[0] = 0x3F80;  // row 0: a[0] = 1 -> column 0 is inf, column 1 subnormal
  a[n] = 0xFFC1;  // row 1: a NaN with a payload
  a[2 * n] = 0x0000, a[2 * n + 1] = 0x8000;  // row 2: 0 * inf = NaN in column 0
  auto va = toVregs(a, n, 0, rng);
  std::vector<uint32_t> r = popSlot(m, 0, n, mm(m, va, MxuDtype::Bf16, 0, false));
  REQUIRE(r[0] == 0x7F800000u);
  REQUIRE(r[1] == 0x00010000u);  // bf16 subnormal * 1, kept
  REQUIRE(r[n] == kCanonicalNanBits);
  REQUIRE(r[2 * n] == kCanonicalNanBits);
  REQUIRE(r == reference(w, a, n, MxuDtype::Bf16, nullptr));
}

TEST_CASE("MXU faults: staging overflow and dtype mismatches leave the MXU unchanged") {
  const int n = 16;
  MxuModel m(n, 16, false);
  VregIn none;
  REQUIRE(m.weightPush(0, none, false, MxuDtype::S8).ok());
  MxuStatus st = m.weightPush(8, none, false, MxuDtype::Bf16);
  REQUIRE_FALSE(st.ok());
  REQUIRE(st.fault().find("dtype mismatch") != std::string::npos);
  REQUIRE(m.weightPush(8, none, false, MxuDtype::S8).ok());
  st = m.weightPush(16, none, false, MxuDtype::S8);
  REQUIRE(st.fault().find("staging overflow") != std::string::npos);
  REQUIRE(st.fault().find("holds 2") != std::string::npos);
  REQUIRE(m.stats().pushes == 2);
  REQUIRE(m.latch(m.latchReadyAt()).ok());
  st = m.matmul(m.matmulReadyAt(), none, MxuDtype::Bf16, 0, false);
  REQUIRE(st.fault().find("mm.bf16 against active s8 weights") != std::string::npos);
  REQUIRE(m.stats().matmuls == 0);
  REQUIRE(m.matmul(m.matmulReadyAt(), none, MxuDtype::S8, 0, false).ok());
  // before any weights are latched, zeros match either dtype
  MxuModel fresh(n, 16, false);
  REQUIRE(fresh.matmul(0, none, MxuDtype::Bf16, 0, false).ok());
  REQUIRE(fresh.matmul(8, none, MxuDtype::S8, 0, false).ok());
  REQUIRE_THROWS_AS(fresh.pop(0, 16, {}), MxuPanic);  // no such slot
}

TEST_CASE("MXU timing-only mode gives the same cycles as functional mode") {
  for (int n : {8, 32}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      cosim::StreamShape shape;
      shape.faults = true;
      cosim::MxuStream s = cosim::randomMxuStream(n, seed, shape);
      MxuModel f(n, 16, true, true), t(n, 16, false, true);
      cosim::MxuRunRecord a = cosim::runMxuStream(f, s), b = cosim::runMxuStream(t, s);
      REQUIRE(a.issueCycle == b.issueCycle);
      REQUIRE(a.readyAt == b.readyAt);
      REQUIRE(a.faults == b.faults);
      REQUIRE(a.rows.size() == b.rows.size());
    }
  }
}

TEST_CASE("MXU dense matmul stream keeps the array busy") {
  for (int n : {16, 128}) {
    MxuModel m(n, 16, false);
    const int tiles = 8, rows = 2 * n;
    cosim::MxuRunRecord r =
        cosim::runMxuStream(m, cosim::matmulMxuStream(n, tiles, rows, 1), false);
    // busy cycles / cycles from the first mm to the last row leaving the array
    const uint64_t busy = m.stats().busyCycles;
    REQUIRE(busy == uint64_t(tiles) * rows);
    const uint64_t firstMm = 8 * uint64_t((n + 7) / 8) + 1;
    const uint64_t lastMmEnd = firstMm + busy;
    INFO("N = " << n << " mm span " << lastMmEnd - firstMm);
    REQUIRE(double(busy) / double(lastMmEnd - firstMm) > 0.97);
    (void)r;
  }
}
