// SwiGLU feed-forward: out[m, d] = (silu(x @ W_gate) * (x @ W_up)) @ w_down,
// x [m, d] and w_down [f, d], bf16; W_gate and W_up are d x f matrices stored
// either as [f, d] (layout "fd", the layout of a torch nn.Linear weight: a d_ff
// block is whole contiguous rows) or as [d, f] (layout "df", a Flax kernel).
// f32 accumulation, out f32 or bf16.
//
// One fused pallas_call with the grid (m / bm, f / bf), the d_ff axis innermost
// and "arbitrary": each step multiplies the x row block by one d_ff block of
// W_gate and W_up, forms h = silu(g) * u in VMEM, and accumulates
// h @ (the matching row block of w_down) into an f32 [bm, d] scratch. Why fused:
// the [m, f] intermediates never go to HBM (a sequence of calls would write and
// read g and u, 2 * m * f * 4 bytes each way), x is fetched once per row block,
// and with bm >= m each weight byte is read exactly once, which is what bounds
// the kernel for decode and small-batch shapes. silu(g) = g * sigmoid(g) with
// sigmoid(g) = (1 + tanh(g / 2)) / 2: one EUP op per element instead of the
// two of 1 / (1 + exp(-g)), and no overflow of exp for large |g|.
// h is rounded to bf16 for the MXU (as a bf16 model does).
#pragma once

#include "kernels/lib/Registry.h"

namespace tpusim::kernels::lib {

struct SwiGluOptions {
  int64_t bm = 128;      // rows of x per block
  int64_t bf = 512;      // d_ff entries per grid step
  bool gateUpFd = true;  // W_gate and W_up stored [f, d] (else [d, f])
  llo::DType outType = dsl::F32;
  // The DSL's VMEM budget (0 = its default, 16 MiB); each weight block takes
  // 4 * d * bf bytes, twice (double buffering). The code generator still
  // checks the chip's VMEM.
  int64_t vmemLimitBytes = int64_t(96) << 20;
};

dsl::PallasCall swiGluCall(int64_t m, int64_t d, int64_t f, const SwiGluOptions& options = {});

// The input arrays: x, w_gate, w_up, w_down (shapes per options.gateUpFd).
std::vector<dsl::ShapeDtype> swiGluInputs(int64_t m, int64_t d, int64_t f, bool gateUpFd);

// Plain C++ reference in double precision (no intermediate rounding).
std::vector<double> swiGluReference(const std::vector<double>& x, const std::vector<double>& wGate,
                                    const std::vector<double>& wUp,
                                    const std::vector<double>& wDown, int64_t m, int64_t d,
                                    int64_t f, bool gateUpFd);

// The registry entry "swiglu".
KernelEntry swiGluEntry();

}  // namespace tpusim::kernels::lib
