#include "kernels/lib/Collectives.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "kernels/lib/Matmul.h"

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {

// (p - s) mod n for 0 <= p < n and a step 0 <= s < n, without a division
// (the scalar unit divides only by powers of two).
Scalar ringIndex(Scalar p, int64_t s, int n) {
  s %= n;
  return s == 0 ? p : select(p >= s, p - s, p + (n - s));
}

// table[d] for the device id d (a chain of selects: n is small).
Scalar lookup(Scalar d, const std::vector<int>& table) {
  Scalar v = table.back();
  for (size_t i = table.size() - 1; i-- > 0;) v = select(d == int64_t(i), table[i], v);
  return v;
}

BlockSpec whole(std::vector<int64_t> shape) {
  return BlockSpec(std::move(shape),
                   [](const GridIndex&) {
                     return std::vector<Scalar>{0, 0};
                   })
      .buffered(1);
}

// One direction round a ring: this device's position in it and its neighbours.
struct RingView {
  Scalar pos, next, prev;
};

// The ring `order` (device ids in ring order) walked forwards or backwards.
RingView ringView(Scalar d, const std::vector<int>& order, bool forward) {
  const int n = int(order.size());
  std::vector<int> pos(static_cast<size_t>(n)), next(pos), prev(pos);
  for (int p = 0; p < n; ++p) {
    int dev = order[size_t(p)];
    pos[size_t(dev)] = forward ? p : (n - p) % n;
    next[size_t(dev)] = order[size_t((p + (forward ? 1 : n - 1)) % n)];
    prev[size_t(dev)] = order[size_t((p + (forward ? n - 1 : 1)) % n)];
  }
  return {lookup(d, pos), lookup(d, next), lookup(d, prev)};
}

}  // namespace

std::vector<int> ringOrder(int n, const std::string& topology) {
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[size_t(i)] = i;
  if (topology.empty()) return order;
  int r = 0, c = 0;
  char x = 0;
  if (std::sscanf(topology.c_str(), "%dx%d%c", &r, &c, &x) != 2 || r < 1 || c < 1)
    throw Error(
        fmt::format("ring order: topology '{}' is not RxC (a 2-D slice such as 2x4)", topology));
  if (r * c != n)
    throw Error(fmt::format("ring order: topology {} has {} chips, the kernel {} devices", topology,
                            r * c, n));
  // Device ids are row-major. A Hamiltonian cycle of the grid keeps every ring
  // step one hop (none exists when both sides are odd: the line order then).
  const bool transpose = r % 2 != 0;
  int rows = transpose ? c : r, cols = transpose ? r : c;
  if (r == 1 || c == 1 || rows % 2 != 0) return order;
  auto id = [&](int i, int j) { return transpose ? j * c + i : i * c + j; };
  order.clear();
  order.push_back(id(0, 0));
  for (int i = 0; i < rows; ++i)
    for (int k = 1; k < cols; ++k) order.push_back(id(i, i % 2 == 0 ? k : cols - k));
  for (int i = rows - 1; i >= 1; --i) order.push_back(id(i, 0));
  return order;
}

PallasCall ringAllReduceCall(int n, int64_t rows, int64_t cols, const RingOptions& opt) {
  if (n < 2) throw Error("ring_all_reduce: needs at least 2 devices");
  if (rows % (8 * n) != 0)
    throw Error(fmt::format("ring_all_reduce: rows ({}) must be a multiple of 8 x devices ({})",
                            rows, 8 * n));
  const int dirs = opt.bidirectional ? 2 : 1;
  if (opt.bidirectional && cols % 256 != 0)
    throw Error(fmt::format(
        "ring_all_reduce: a bidirectional ring splits the columns in two halves of whole 128-lane "
        "tiles: cols ({}) must be a multiple of 256",
        cols));
  const std::vector<int> order = opt.order.empty() ? ringOrder(n, "") : opt.order;
  if (int(order.size()) != n) throw Error("ring_all_reduce: the ring order needs every device");
  const int64_t chunk = rows / n, half = cols / dirs;
  CallConfig c;
  c.name =
      fmt::format("ring_all_reduce_{}x{}_{}dev{}", rows, cols, n, opt.bidirectional ? "_bidi" : "");
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({rows, cols})};
  c.out_specs = {whole({rows, cols})};
  // Per direction: two receive buffers, send and receive semaphores of the
  // reduce-scatter (one per buffer) and of the all-gather, a credit
  // semaphore; then the barrier semaphore.
  for (int k = 0; k < dirs; ++k)
    for (ScratchSpec s : {VMEM({chunk, half}, F32), VMEM({chunk, half}, F32),
                          SemaphoreType::DMA({2}), SemaphoreType::DMA({2}), SemaphoreType::DMA({1}),
                          SemaphoreType::DMA({1}), SemaphoreType::REGULAR({1})})
      c.scratch.push_back(s);
  c.scratch.push_back(SemaphoreType::BARRIER());
  c.compiler_params.vmem_limit_bytes = int64_t(2 * rows + 2 * chunk) * cols * 4 + (16 << 20);
  return pallas_call(
      [=](const std::vector<Ref>& r) {
        const Ref &x = r[0], &o = r[1], &barrier = r.back();
        struct Dir {
          Ref recv[2], rsSend, rsRecv, agSend, agRecv, credit;
          RingView ring;
          int64_t col0;
        };
        Scalar d = device_id();
        std::vector<Dir> dir;
        for (int k = 0; k < dirs; ++k) {
          const Ref* s = &r[size_t(2 + 7 * k)];
          dir.push_back(Dir{
              {s[0], s[1]}, s[2], s[3], s[4], s[5], s[6], ringView(d, order, k == 0), k * half});
        }
        auto window = [&](const Dir& v, Scalar chunkIndex) {
          return o.window({ds(chunkIndex * chunk, chunk), ds(v.col0, half)});
        };
        o.store(x.load());
        // Reduce-scatter, both directions at once: at step s send the partial
        // sum of chunk pos - s, add the received chunk pos - s - 1.
        for (int s = 0; s + 1 < n; ++s) {
          const int slot = s % 2;
          std::vector<RemoteCopy> copies;
          for (const Dir& v : dir) {
            if (s >= 2) semaphore_wait(v.credit.at(0));  // next has drained recv[slot]
            copies.push_back(make_async_remote_copy(window(v, ringIndex(v.ring.pos, s, n)),
                                                    v.recv[slot].window(), v.rsSend.at(slot),
                                                    v.rsRecv.at(slot), v.ring.next));
            copies.back().start();
          }
          for (size_t k = 0; k < dir.size(); ++k) {
            const Dir& v = dir[k];
            copies[k].wait_recv();
            Slice rs = ds(ringIndex(v.ring.pos, s + 1, n) * chunk, chunk), cs = ds(v.col0, half);
            o.store(rs, cs, o.load(rs, cs) + v.recv[slot].load());
            if (s + 2 <= n - 2) semaphore_signal(v.credit.at(0), 1, v.ring.prev);
          }
          for (const RemoteCopy& cp : copies) cp.wait_send();
        }
        // The previous device may write into this `out` once this
        // reduce-scatter is over (in either direction).
        for (const Dir& v : dir) semaphore_signal(barrier.at(0), 1, v.ring.prev);
        semaphore_wait(barrier.at(0), dirs);
        // All-gather: forward the finished chunk pos + 1 - s into next's `out`.
        for (int s = 0; s + 1 < n; ++s) {
          std::vector<RemoteCopy> copies;
          for (const Dir& v : dir) {
            Scalar chunkIndex = ringIndex(v.ring.pos, s + n - 1, n);
            copies.push_back(make_async_remote_copy(window(v, chunkIndex), window(v, chunkIndex),
                                                    v.agSend.at(0), v.agRecv.at(0), v.ring.next));
            copies.back().start();
          }
          for (const RemoteCopy& cp : copies) cp.wait_recv();
          for (const RemoteCopy& cp : copies) cp.wait_send();
        }
      },
      c);
}

PallasCall allGatherMatmulCall(int n, int64_t m, int64_t k, int64_t nc, Schedule schedule,
                               std::vector<int> order) {
  const bool overlap = schedule != Schedule::Serial;
  const bool copies = schedule != Schedule::MatmulOnly,
             matmuls = schedule != Schedule::TransferOnly;
  if (n < 2) throw Error("all_gather_matmul: needs at least 2 devices");
  if (order.empty()) order = ringOrder(n, "");
  if (int(order.size()) != n) throw Error("all_gather_matmul: the ring order needs every device");
  CallConfig c;
  const char* suffix[] = {"", "_serial", "_matmul_only", "_transfer_only"};
  c.name = fmt::format("all_gather_matmul_{}x{}x{}_{}dev{}", m, k, nc, n, suffix[int(schedule)]);
  c.out_shapes = {{{m * n, nc}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({m, k}), whole({k, nc})};
  c.out_specs = {whole({m * n, nc})};
  c.scratch = {VMEM({m, k}, BF16), VMEM({m, k}, BF16), SemaphoreType::DMA({2}),
               SemaphoreType::DMA({2}), SemaphoreType::REGULAR({1})};
  c.compiler_params.vmem_limit_bytes =
      int64_t(3 * m * k + k * nc) * 4 * 2 + m * n * nc * 4 * 2 + (16 << 20);
  return pallas_call(
      [=](const std::vector<Ref>& r) {
        const Ref &x = r[0], &y = r[1], &o = r[2], &send = r[5], &recv = r[6], &credit = r[7];
        const Ref buf[2] = {r[3], r[4]};
        RingView ring = ringView(device_id(), order, true);
        Scalar right = ring.next, left = ring.prev;
        Ref cur = x;
        for (int s = 0; s < n; ++s) {
          const int slot = s % 2;
          const bool forward = copies && s + 1 < n;
          std::optional<RemoteCopy> copy;
          if (forward) {
            if (s >= 2) semaphore_wait(credit.at(0));  // d + 1 is done with buf[slot]
            copy.emplace(
                make_async_remote_copy(cur, buf[slot], send.at(slot), recv.at(slot), right));
            copy->start();
            if (!overlap) copy->wait_recv();
          }
          // The shard of the device s places back round the ring.
          Scalar shard = lookup(ringIndex(ring.pos, s, n), order);
          if (matmuls) o.store(ds(shard * m, m), ds(0, nc), dot(cur.load(), y.load()));
          if (forward) {
            if (overlap) copy->wait_recv();
            copy->wait_send();
          }
          // cur (buf[(s - 1) % 2]) is free: d - 1 writes it again at its step s + 1.
          if (copies && s >= 1 && s + 1 <= n - 2) semaphore_signal(credit.at(0), 1, left);
          if (forward) cur = buf[slot];
        }
      },
      c);
}

namespace {

int devicesParam(const Params& p) {
  int64_t n = p.integer("devices", 2);
  if (n > 4096) p.invalid("devices", "at most 4096");
  return int(n);
}

// The ring order for the `topology` parameter ("" = devices in id order).
std::vector<int> orderParam(const Params& p, int n) {
  try {
    return ringOrder(n, p.text("topology"));
  } catch (const Error& e) {
    p.invalid("topology", e.what());
  }
}

}  // namespace

KernelEntry ringAllReduceEntry() {
  KernelEntry e;
  e.name = "ring_all_reduce";
  e.spmd = true;
  e.description =
      "SPMD: out = sum over devices of x (f32), a ring reduce-scatter then all-gather over ICI";
  e.params = {
      {"devices", "2", "chips (run with tpusim --topology of as many)"},
      {"rows", "64", "rows of x (a multiple of 8 x devices)"},
      {"cols", "256", "columns of x (a multiple of 256 when bidirectional)"},
      {"bidirectional", "true", "half of the columns round the ring each way"},
      {"topology", "", "the slice (RxC, e.g. 2x4): a ring of one-hop steps; empty: id order"}};
  e.build = [](const Params& p) {
    int n = devicesParam(p);
    int64_t rows = p.integer("rows", 1), cols = p.integer("cols", 1);
    if (rows % (8 * n) != 0) p.invalid("rows", fmt::format("must be a multiple of {}", 8 * n));
    RingOptions opt{orderParam(p, n), p.flag("bidirectional")};
    if (opt.bidirectional && cols % 256 != 0)
      p.invalid("cols", "must be a multiple of 256 for a bidirectional ring");
    LibraryKernel lk{
        ringAllReduceCall(n, rows, cols, opt), {{{rows, cols}, F32, "x"}}, {}, {2e-5, 0.1}};
    lk.devices = n;
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      std::vector<double> sum(in.at(0).size(), 0.0);
      for (int d = 0; d < n; ++d)
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += in.at(size_t(d))[i];
      return std::vector<std::vector<double>>(size_t(n), sum);
    };
    return lk;
  };
  return e;
}

KernelEntry allGatherMatmulEntry() {
  KernelEntry e;
  e.name = "all_gather_matmul";
  e.spmd = true;
  e.description =
      "SPMD collective matmul: out = all_gather(x) @ y (bf16 -> f32), the next shard's remote "
      "copy overlapping the current shard's matmul";
  e.params = {
      {"devices", "2", "chips (run with tpusim --topology of as many)"},
      {"m", "128", "rows of each device's shard of x"},
      {"k", "256", "columns of x, rows of y"},
      {"n", "256", "columns of y and out"},
      {"schedule", "overlap",
       "overlap; serial: wait for the next shard before each matmul; matmul_only, "
       "transfer_only: one half of the work, to measure the overlap (no reference)"},
      {"topology", "", "the slice (RxC, e.g. 2x4): a ring of one-hop steps; empty: id order"}};
  e.build = [](const Params& p) {
    int n = devicesParam(p);
    int64_t m = p.integer("m", 1), k = p.integer("k", 1), nc = p.integer("n", 1);
    const std::string& sched = p.text("schedule");
    const char* names[] = {"overlap", "serial", "matmul_only", "transfer_only"};
    int which = -1;
    for (int i = 0; i < 4; ++i)
      if (sched == names[i]) which = i;
    if (which < 0) p.invalid("schedule", "expected overlap, serial, matmul_only or transfer_only");
    const Schedule schedule = Schedule(which);
    LibraryKernel lk{allGatherMatmulCall(n, m, k, nc, schedule, orderParam(p, n)),
                     {{{m, k}, BF16, "x"}, {{k, nc}, BF16, "y"}},
                     {},
                     {1e-5 + 1e-6 * double(k), 1e-2}};
    lk.devices = n;
    if (schedule == Schedule::MatmulOnly || schedule == Schedule::TransferOnly) return lk;
    lk.reference = [=](const std::vector<std::vector<double>>& in) {
      std::vector<std::vector<double>> out;
      for (int d = 0; d < n; ++d) {
        std::vector<double> o;
        for (int j = 0; j < n; ++j) {
          std::vector<double> part =
              matmulReference(in.at(size_t(2 * j)), in.at(size_t(2 * d + 1)), m, nc, k);
          o.insert(o.end(), part.begin(), part.end());
        }
        out.push_back(std::move(o));
      }
      return out;
    };
    return lk;
  };
  return e;
}

}  // namespace tpusim::kernels::lib
