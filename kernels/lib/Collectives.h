// SPMD library kernels that talk over ICI with the DSL's remote copies
// (make_async_remote_copy, semaphore_signal / _wait, device_id): every device
// runs the same kernel on its own inputs. Ring order: device d sends to
// d + 1 and receives from d - 1 (mod devices).
//
// ring_all_reduce: out = the sum over devices of x, on every device (f32).
//   The rows are cut into `devices` chunks; bidirectional: the left half of
//   the columns goes round the ring forwards, the right half backwards, both
//   at once (each link carries traffic both ways). Reduce-scatter: at step s (0 ..
//   n-2) device d sends its partial sum of chunk d - s to d + 1 and adds the
//   chunk d - s - 1 it receives from d - 1 into its own; two receive buffers
//   with a credit semaphore (the receiver frees a buffer before the sender
//   reuses it). Then each device signals its left neighbour on the barrier
//   semaphore (its reduce-scatter is over, so its `out` may be written) and
//   waits for its right one. All-gather: at step s device d forwards the
//   finished chunk d + 1 - s straight into d + 1's `out`.
//
// all_gather_matmul (collective matmul): out[j*m:(j+1)*m, :] = x_j @ y, x_j
//   device j's [m, k] shard, y this device's [k, n]. At step s device d
//   multiplies the shard of device d - s while the remote copy of that shard
//   to d + 1 is in flight, then waits for the next shard from d - 1 (two
//   receive buffers and a credit semaphore as above).
#pragma once

#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

// The devices in ring order for a 2-D slice "RxC" (ids row-major): a
// Hamiltonian cycle of the grid when one side is even (2x4: 0 1 2 3 7 6 5 4),
// so every ring step is one hop; otherwise, and for "", 0 .. n-1.
std::vector<int> ringOrder(int devices, const std::string& topology);

struct RingOptions {
  std::vector<int> order;      // ring order of the device ids; empty: 0 .. n-1
  bool bidirectional = false;  // half of the columns each way round (cols % 256 == 0)
};

// rows a multiple of 8 * devices.
dsl::PallasCall ringAllReduceCall(int devices, int64_t rows, int64_t cols,
                                  const RingOptions& options = {});
// Overlap: the collective matmul. Serial: each step waits for the next shard
// before its matmul. MatmulOnly / TransferOnly: only the matmuls (every step
// on the own shard) or only the ring of copies: the parts, for measuring what
// the overlap saves (their outputs are not the product).
enum class Schedule { Overlap, Serial, MatmulOnly, TransferOnly };
dsl::PallasCall allGatherMatmulCall(int devices, int64_t m, int64_t k, int64_t n,
                                    Schedule schedule = Schedule::Overlap,
                                    std::vector<int> order = {});

KernelEntry ringAllReduceEntry();
KernelEntry allGatherMatmulEntry();

}  // namespace tpusim::kernels::lib
