#include "testbench/cosim/mxu/MxuStream.h"

#include <fmt/format.h>

#include <algorithm>

namespace tpusim::cosim {

using sim::MxuDtype;

const char* mxuOpName(MxuOp op) {
  switch (op) {
    case MxuOp::Push:
      return "wpush";
    case MxuOp::PushT:
      return "wpush.t";
    case MxuOp::Latch:
      return "latch";
    case MxuOp::Matmul:
      return "mm";
    case MxuOp::Pop:
      return "pop";
  }
  return "?";
}

std::string MxuStream::describe() const {
  return fmt::format("N={} seed={:#x} commands={}", n, seed, commands.size());
}

namespace {

// A bf16 bit pattern: mostly normal values near 1, or, with special values
// on, a mix that reaches every corner of the f32 arithmetic.
uint32_t randomBf16(std::mt19937_64& rng, bool special) {
  uint32_t sign = rng() & 1, mant = rng() & 0x7F, exp;
  if (!special) {
    exp = 120 + rng() % 15;  // 2^-7 .. 2^7
  } else {
    switch (rng() % 10) {
      case 0:
        exp = 0;
        mant = rng() % 3 == 0 ? 0 : mant;
        break;  // zero / subnormal
      case 1:
        exp = 0;
        mant |= 1;
        break;  // subnormal
      case 2:
        exp = 255;
        mant = rng() % 4 == 0 ? (mant | 1) : 0;
        break;  // inf, sometimes NaN
      case 3:
        exp = 230 + rng() % 25;
        break;  // near overflow
      case 4:
        exp = 1 + rng() % 20;
        break;  // products underflow
      default:
        exp = 110 + rng() % 35;
        break;
    }
  }
  // The upper half of the lane is garbage the MXU must ignore.
  return uint32_t(rng() & 0xFFFF0000u) | (sign << 15) | (exp << 7) | mant;
}

}  // namespace

MxuStream randomMxuStream(int n, uint64_t seed, const StreamShape& shape) {
  std::mt19937_64 rng(seed);
  MxuStream s;
  s.n = n;
  s.seed = seed;
  const int perOperand = n > 128 ? 2 : 1;
  const int tile = (n + 7) / 8;
  auto newData = [&](MxuDtype dtype) {
    int index = int(s.vregs.size());
    for (int v = 0; v < perOperand; ++v) {
      sim::VregData d;
      for (uint32_t& w : d)
        w = dtype == MxuDtype::Bf16 ? randomBf16(rng, shape.specialValues) : uint32_t(rng());
      s.vregs.push_back(d);
    }
    return index;
  };
  // A dtype that faults against d: another one, or s8x2 where the MXU has no packed mode.
  auto other = [&](MxuDtype d) {
    if (!shape.packedInt8 && rng() % 2) return MxuDtype::S8x2;
    const MxuDtype all[3] = {MxuDtype::Bf16, MxuDtype::S8, MxuDtype::S8x2};
    const int kinds = shape.packedInt8 ? 3 : 2;
    return all[(int(d) + 1 + int(rng() % uint64_t(kinds - 1))) % kinds];
  };
  auto randomDtype = [&] {
    return MxuDtype(rng() % (shape.packedInt8 ? 3 : 2));  // Bf16, S8[, S8x2]
  };

  int pushes = 0;
  // dtype of the staging / active weights (none before the first wpush / latch)
  bool hasStaging = false, hasActive = false;
  MxuDtype staging = MxuDtype::Bf16, active = MxuDtype::Bf16;
  // A few adjacent slots most of the time, so mma chains and pops of fresh
  // results happen; where they sit varies, so every slot of a large buffer is used.
  const int hotSlots = std::min(shape.slots, 1 + int(rng() % 4));
  const int hotBase = shape.slots > 16 ? int(rng() % uint64_t(shape.slots - hotSlots + 1)) : 0;
  for (int i = 0; i < shape.commands; ++i) {
    MxuCommand c;
    switch (rng() % 10) {
      case 0:
        c.gap = 1 + rng() % 4;
        break;
      case 1:
        c.gap = rng() % (2 * n + 1);
        break;
      case 2:
        c.gap = rng() % (3 * n + 21);
        break;
      default:
        c.gap = 0;
        break;  // as soon as ready: maximum overlap
    }
    const bool fault = shape.faults && rng() % 30 == 0;
    const uint64_t pick = rng() % 100;
    if (pick < 30)
      c.op = rng() % 4 == 0 ? MxuOp::PushT : MxuOp::Push;
    else if (pick < 42)
      c.op = MxuOp::Latch;
    else if (pick < 72)
      c.op = MxuOp::Matmul;
    else
      c.op = MxuOp::Pop;
    if ((c.op == MxuOp::Push || c.op == MxuOp::PushT) && pushes >= tile && !fault)
      c.op = MxuOp::Latch;

    switch (c.op) {
      case MxuOp::Push:
      case MxuOp::PushT: {
        const bool overflow = pushes >= tile;  // only chosen when faults are on
        bool mismatch = false;
        c.dtype = hasStaging ? staging : randomDtype();
        if (fault && hasStaging && rng() % 2) {
          c.dtype = other(staging);
          mismatch = true;
        }
        c.data = newData(c.dtype);
        if (!overflow && !mismatch) {  // a faulting command leaves the MXU unchanged
          ++pushes;
          staging = c.dtype;
          hasStaging = true;
        }
        break;
      }
      case MxuOp::Latch:
        pushes = 0;
        active = staging;
        hasActive = hasStaging;
        hasStaging = false;
        break;
      case MxuOp::Matmul:
        c.dtype = hasActive ? active : randomDtype();
        if (fault && hasActive) c.dtype = other(active);
        c.data = newData(c.dtype);
        c.slot = rng() % 8 == 0 ? int(rng() % shape.slots) : hotBase + int(rng() % hotSlots);
        c.accumulate = rng() % 2;
        break;
      case MxuOp::Pop:
        c.slot = rng() % 8 == 0 ? int(rng() % shape.slots) : hotBase + int(rng() % hotSlots);
        break;
    }
    s.commands.push_back(c);
  }
  return s;
}

MxuStream matmulMxuStream(int n, int tiles, int rowsPerTile, uint64_t seed) {
  std::mt19937_64 rng(seed);
  MxuStream s;
  s.n = n;
  s.seed = seed;
  const int perOperand = n > 128 ? 2 : 1;
  const int pushesPerTile = (n + 7) / 8, mmsPerTile = std::max(1, rowsPerTile / 8);
  auto newData = [&] {
    int index = int(s.vregs.size());
    for (int v = 0; v < perOperand; ++v) {
      sim::VregData d;
      for (uint32_t& w : d) w = randomBf16(rng, false);
      s.vregs.push_back(d);
    }
    return index;
  };
  // A few distinct operands, reused: the stream is about time, not data volume.
  std::vector<int> data;
  for (int i = 0; i < 8; ++i) data.push_back(newData());
  int next = 0;
  auto operand = [&] { return data[next++ % data.size()]; };
  auto push = [&] { s.commands.push_back({MxuOp::Push, 0, MxuDtype::Bf16, 0, false, operand()}); };
  for (int p = 0; p < pushesPerTile; ++p) push();
  s.commands.push_back({MxuOp::Latch, 0, MxuDtype::Bf16, 0, false, -1});
  for (int t = 0; t < tiles; ++t) {
    // This tile's mms on the LHS port, the next tile's weights on the weight port.
    for (int m = 0; m < mmsPerTile; ++m) {
      s.commands.push_back({MxuOp::Matmul, 0, MxuDtype::Bf16, m % 16, t > 0, operand()});
      if (t + 1 < tiles && m < pushesPerTile) push();
    }
    for (int p = mmsPerTile; t + 1 < tiles && p < pushesPerTile; ++p) push();
    if (t + 1 < tiles) s.commands.push_back({MxuOp::Latch, 0, MxuDtype::Bf16, 0, false, -1});
  }
  for (int slot = 0; slot < std::min(16, mmsPerTile); ++slot)
    s.commands.push_back({MxuOp::Pop, 0, MxuDtype::Bf16, slot, false, -1});
  return s;
}

MxuRunRecord runMxuStream(sim::MxuUnit& unit, const MxuStream& s, bool recordRows) {
  MxuRunRecord rec;
  if (recordRows)
    unit.setResultObserver([&](const sim::MxuResultRow& r) { rec.rows.push_back(r); });
  const int n = s.n;
  auto in = [&](int data) {
    sim::VregIn v;
    if (data >= 0) {
      v.lo = &s.vregs[data];
      if (n > 128) v.hi = &s.vregs[data + 1];
    }
    return v;
  };
  sim::VregData lo, hi;
  auto query = [&](const MxuCommand& c) -> uint64_t {
    switch (c.op) {
      case MxuOp::Push:
        return unit.weightPushReadyAt(false);
      case MxuOp::PushT:
        return unit.weightPushReadyAt(true);
      case MxuOp::Latch:
        return unit.latchReadyAt();
      case MxuOp::Matmul:
        return unit.matmulReadyAt();
      case MxuOp::Pop:
        return unit.popReadyAt(c.slot);
    }
    return 0;
  };
  auto issue = [&](const MxuCommand& c, uint64_t t) -> sim::MxuStatus {
    switch (c.op) {
      case MxuOp::Push:
      case MxuOp::PushT:
        return unit.weightPush(t, in(c.data), c.op == MxuOp::PushT, c.dtype);
      case MxuOp::Latch:
        return unit.latch(t);
      case MxuOp::Matmul:
        return unit.matmul(t, in(c.data), c.dtype, c.slot, c.accumulate);
      case MxuOp::Pop: {
        sim::MxuStatus st = unit.pop(t, c.slot, {&lo, n > 128 ? &hi : nullptr});
        if (unit.functional()) {
          rec.popped.push_back(lo);
          if (n > 128) rec.popped.push_back(hi);
        }
        return st;
      }
    }
    return {};
  };
  uint64_t prev = 0;
  try {
    for (size_t i = 0; i < s.commands.size();) {
      // A bundle, as the core issues it: an mpush-slot command and a pop right
      // behind it (gap 0) ask their ready cycles first, then issue together.
      size_t count = 1;
      if (s.commands[i].op != MxuOp::Pop && i + 1 < s.commands.size() &&
          s.commands[i + 1].op == MxuOp::Pop && s.commands[i + 1].gap == 0)
        count = 2;
      uint64_t t = prev + s.commands[i].gap;
      uint64_t ready[2] = {0, 0};
      for (size_t j = 0; j < count; ++j) {
        // The contract only promises answers >= the last issued command's cycle,
        // and the RTL has moved on to the first answer when asked the second.
        ready[j] = std::max({query(s.commands[i + j]), prev, j ? ready[0] : 0});
        t = std::max(t, ready[j]);
      }
      for (size_t j = 0; j < count; ++j) {
        sim::MxuStatus st = issue(s.commands[i + j], t);
        rec.readyAt.push_back(ready[j]);
        rec.issueCycle.push_back(t);
        rec.faults.push_back(st.fault());
      }
      prev = t;
      i += count;
    }
  } catch (const sim::MxuPanic& e) {
    rec.panic = e.what();
  }
  rec.endCycle = prev + 2 * n + 16;  // every row in flight has landed
  unit.finish(rec.endCycle);
  rec.stats = unit.stats();
  unit.setResultObserver(nullptr);
  return rec;
}

namespace {

std::string rowValues(const std::vector<uint32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{:08x}", i ? " " : "", v[i]);
  return out;
}

}  // namespace

std::string compareMxuRuns(const MxuStream& s, const MxuRunRecord& a, const MxuRunRecord& b) {
  if (!a.panic.empty() || !b.panic.empty())
    return fmt::format("panic after {} commands: model '{}', rtl '{}'",
                       std::min(a.issueCycle.size(), b.issueCycle.size()), a.panic, b.panic);
  for (size_t i = 0; i < s.commands.size(); ++i) {
    const MxuCommand& c = s.commands[i];
    if (a.readyAt[i] != b.readyAt[i] || a.issueCycle[i] != b.issueCycle[i] ||
        a.faults[i] != b.faults[i]) {
      std::string context;  // the commands leading up to it
      for (size_t k = i >= 6 ? i - 6 : 0; k < i; ++k)
        context += fmt::format("    command {} {} gap {} slot a{}: ready {} issue {}\n", k,
                               mxuOpName(s.commands[k].op), s.commands[k].gap, s.commands[k].slot,
                               a.readyAt[k], a.issueCycle[k]);
      return context + fmt::format(
                           "command {} ({} slot a{}): model ready {} issue {} fault '{}'; rtl "
                           "ready {} issue {} "
                           "fault '{}'",
                           i, mxuOpName(c.op), c.slot, a.readyAt[i], a.issueCycle[i], a.faults[i],
                           b.readyAt[i], b.issueCycle[i], b.faults[i]);
    }
  }
  // Result rows: the cycle each becomes readable, its slot, and its values.
  for (size_t i = 0; i < std::max(a.rows.size(), b.rows.size()); ++i) {
    if (i >= a.rows.size() || i >= b.rows.size())
      return fmt::format("result rows: model wrote {}, rtl wrote {}", a.rows.size(), b.rows.size());
    const sim::MxuResultRow &x = a.rows[i], &y = b.rows[i];
    if (x.cycle != y.cycle || x.slot != y.slot || x.row != y.row || x.values != y.values) {
      std::string detail;
      for (size_t c = 0; c < std::min(x.values.size(), y.values.size()); ++c)
        if (x.values[c] != y.values[c]) {
          detail = fmt::format(" (first differing column {}: model {:08x}, rtl {:08x})", c,
                               x.values[c], y.values[c]);
          break;
        }
      return fmt::format(
          "result row {}: model writes a{} row {} readable at cycle {}: [{}]\n"
          "                rtl writes a{} row {} readable at cycle {}: [{}]{}",
          i, x.slot, x.row, x.cycle, rowValues(x.values), y.slot, y.row, y.cycle,
          rowValues(y.values), detail);
    }
  }
  if (a.popped.size() != b.popped.size()) return "different number of pops";
  for (size_t i = 0; i < a.popped.size(); ++i)
    if (a.popped[i] != b.popped[i]) {
      for (size_t w = 0; w < a.popped[i].size(); ++w)
        if (a.popped[i][w] != b.popped[i][w])
          return fmt::format("pop {}: word [{}][{}]: model {:08x}, rtl {:08x}", i, w / 128, w % 128,
                             a.popped[i][w], b.popped[i][w]);
    }
  const sim::MxuStats &p = a.stats, &q = b.stats;
  if (p.pushes != q.pushes || p.latches != q.latches || p.matmuls != q.matmuls ||
      p.rowsStreamed != q.rowsStreamed || p.busyCycles != q.busyCycles || p.pops != q.pops)
    return "stats differ";
  return {};
}

}  // namespace tpusim::cosim
