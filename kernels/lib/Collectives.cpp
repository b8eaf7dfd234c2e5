#include "kernels/lib/Collectives.h"

#include <fmt/format.h>

#include <optional>

#include "kernels/lib/Matmul.h"

namespace tpusim::kernels::lib {

using namespace dsl;

namespace {

// (d - s) mod n for 0 <= d < n and a step 0 <= s < n, without a division
// (the scalar unit divides only by powers of two).
Scalar ringIndex(Scalar d, int64_t s, int n) {
  s %= n;
  return s == 0 ? d : select(d >= s, d - s, d + (n - s));
}

Scalar rightOf(Scalar d, int n) { return select(d == n - 1, 0, d + 1); }
Scalar leftOf(Scalar d, int n) { return select(d == 0, n - 1, d - 1); }

BlockSpec whole(std::vector<int64_t> shape) {
  return BlockSpec(std::move(shape), [](const GridIndex&) { return std::vector<Scalar>{0, 0}; });
}

}  // namespace

PallasCall ringAllReduceCall(int n, int64_t rows, int64_t cols) {
  if (n < 2) throw Error("ring_all_reduce: needs at least 2 devices");
  if (rows % (8 * n) != 0)
    throw Error(fmt::format("ring_all_reduce: rows ({}) must be a multiple of 8 x devices ({})",
                            rows, 8 * n));
  const int64_t chunk = rows / n;
  CallConfig c;
  c.name = fmt::format("ring_all_reduce_{}x{}_{}dev", rows, cols, n);
  c.out_shapes = {{{rows, cols}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({rows, cols})};
  c.out_specs = {whole({rows, cols})};
  c.scratch = {VMEM({chunk, cols}, F32),    VMEM({chunk, cols}, F32), SemaphoreType::DMA({2}),
               SemaphoreType::DMA({2}),     SemaphoreType::DMA({1}),  SemaphoreType::DMA({1}),
               SemaphoreType::REGULAR({1}), SemaphoreType::BARRIER()};
  c.compiler_params.vmem_limit_bytes = int64_t(2 * rows + 2 * chunk) * cols * 4 + (16 << 20);
  return pallas_call(
      [=](const std::vector<Ref>& r) {
        const Ref &x = r[0], &o = r[1], &rsSend = r[4], &rsRecv = r[5], &agSend = r[6],
                  &agRecv = r[7], &credit = r[8], &barrier = r[9];
        const Ref recv[2] = {r[2], r[3]};
        Scalar d = device_id(), right = rightOf(d, n), left = leftOf(d, n);
        auto rowsOf = [&](Scalar chunkIndex) {
          return std::vector<Slice>{ds(chunkIndex * chunk, chunk), ds(0, cols)};
        };
        o.store(x.load());
        // Reduce-scatter.
        for (int s = 0; s + 1 < n; ++s) {
          const int slot = s % 2;
          Scalar sendChunk = ringIndex(d, s, n), recvChunk = ringIndex(d, s + 1, n);
          if (s >= 2) semaphore_wait(credit.at(0));  // d + 1 has drained recv[slot]
          RemoteCopy copy = make_async_remote_copy(o.window(rowsOf(sendChunk)), recv[slot].window(),
                                                   rsSend.at(slot), rsRecv.at(slot), right);
          copy.start();
          copy.wait_recv();
          Slice rs = ds(recvChunk * chunk, chunk), cs = ds(0, cols);
          o.store(rs, cs, o.load(rs, cs) + recv[slot].load());
          if (s + 2 <= n - 2) semaphore_signal(credit.at(0), 1, left);
          copy.wait_send();
        }
        // d - 1 may write into this `out` once this reduce-scatter is over.
        semaphore_signal(barrier.at(0), 1, left);
        semaphore_wait(barrier.at(0));
        // All-gather: forward the finished chunk d + 1 - s.
        for (int s = 0; s + 1 < n; ++s) {
          Scalar chunkIndex = ringIndex(d, s + n - 1, n);
          RemoteCopy copy =
              make_async_remote_copy(o.window(rowsOf(chunkIndex)), o.window(rowsOf(chunkIndex)),
                                     agSend.at(0), agRecv.at(0), right);
          copy.start();
          copy.wait_recv();
          copy.wait_send();
        }
      },
      c);
}

PallasCall allGatherMatmulCall(int n, int64_t m, int64_t k, int64_t nc, bool overlap) {
  if (n < 2) throw Error("all_gather_matmul: needs at least 2 devices");
  CallConfig c;
  c.name = fmt::format("all_gather_matmul_{}x{}x{}_{}dev{}", m, k, nc, n, overlap ? "" : "_serial");
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
        Scalar d = device_id(), right = rightOf(d, n), left = leftOf(d, n);
        Ref cur = x;
        for (int s = 0; s < n; ++s) {
          const int slot = s % 2;
          const bool forward = s + 1 < n;
          std::optional<RemoteCopy> copy;
          if (forward) {
            if (s >= 2) semaphore_wait(credit.at(0));  // d + 1 is done with buf[slot]
            copy.emplace(
                make_async_remote_copy(cur, buf[slot], send.at(slot), recv.at(slot), right));
            copy->start();
            if (!overlap) copy->wait_recv();
          }
          Scalar shard = ringIndex(d, s, n);
          o.store(ds(shard * m, m), ds(0, nc), dot(cur.load(), y.load()));
          if (forward) {
            if (overlap) copy->wait_recv();
            copy->wait_send();
          }
          // cur (buf[(s - 1) % 2]) is free: d - 1 writes it again at its step s + 1.
          if (s >= 1 && s + 1 <= n - 2) semaphore_signal(credit.at(0), 1, left);
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

}  // namespace

KernelEntry ringAllReduceEntry() {
  KernelEntry e;
  e.name = "ring_all_reduce";
  e.description =
      "SPMD: out = sum over devices of x (f32), a ring reduce-scatter then all-gather over ICI";
  e.params = {{"devices", "2", "chips (run with tpusim --topology of as many)"},
              {"rows", "64", "rows of x (a multiple of 8 x devices)"},
              {"cols", "256", "columns of x"}};
  e.build = [](const Params& p) {
    int n = devicesParam(p);
    int64_t rows = p.integer("rows", 1), cols = p.integer("cols", 1);
    if (rows % (8 * n) != 0) p.invalid("rows", fmt::format("must be a multiple of {}", 8 * n));
    LibraryKernel lk{ringAllReduceCall(n, rows, cols), {{{rows, cols}, F32, "x"}}, {}, {2e-5, 0.1}};
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
  e.description =
      "SPMD collective matmul: out = all_gather(x) @ y (bf16 -> f32), the next shard's remote "
      "copy overlapping the current shard's matmul";
  e.params = {{"devices", "2", "chips (run with tpusim --topology of as many)"},
              {"m", "128", "rows of each device's shard of x"},
              {"k", "256", "columns of x, rows of y"},
              {"n", "256", "columns of y and out"},
              {"overlap", "true", "false: wait for the next shard before each matmul"}};
  e.build = [](const Params& p) {
    int n = devicesParam(p);
    int64_t m = p.integer("m", 1), k = p.integer("k", 1), nc = p.integer("n", 1);
    LibraryKernel lk{allGatherMatmulCall(n, m, k, nc, p.flag("overlap")),
                     {{{m, k}, BF16, "x"}, {{k, nc}, BF16, "y"}},
                     {},
                     {1e-5 + 1e-6 * double(k), 1e-2}};
    lk.devices = n;
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
