// LoweredModule::statsText: what `tpuc --print-stats` prints.
#include <fmt/format.h>

#include <map>

#include "compiler/lower/module/ModuleLowering.h"
#include "isa/SharedCode.h"

namespace tpusim::lower {

std::string LoweredModule::statsText() const {
  std::string out;
  std::string passList;
  for (const std::string& p : passes) passList += (passList.empty() ? "" : ",") + p;
  out += fmt::format("module '{}' for chip '{}'\n", buffers.moduleName, program.chip);
  out += fmt::format("passes: {}\n", passList);
  std::map<std::string, int64_t> kinds;
  for (const LoweredOp& op : ops) ++kinds[op.kind];
  out += fmt::format(
      "lowered: {} kernels, {} DMA fragments, {} control-flow instructions (kernels: {} "
      "compiled, {} derived from the kernel cache)\n",
      kinds["kernel"], kinds["dma"], kinds["control"], kernelsCompiled, kernelsDerived);
  if (kernelsPrefetched > 0)
    out += fmt::format(
        "cross-kernel prefetch: {} kernels' first blocks ({} B of HBM) started by the kernel "
        "before\n",
        kernelsPrefetched, prefetchedBytes);
  if (kernelsDeferred > 0)
    out += fmt::format(
        "deferred write-back: {} kernels' last write-backs waited for by the next kernel ({} at "
        "its end)\n",
        kernelsDeferred, drainedAtEnd);
  if (kernelsWithScheduleFallbacks > 0)
    out += fmt::format(
        "register pressure: {} kernels took a block's next schedule ({} times in all)\n",
        kernelsWithScheduleFallbacks, scheduleFallbacks);
  out += fmt::format("code: {} bundles, {} data segments, {} SMEM words\n", isa::codeSize(program),
                     program.data.size(), smemWords);
  if (isa::hasSharedCode(program)) {
    size_t bodyBundles = 0, patches = 0;
    for (const isa::SharedBody& b : program.bodies) bodyBundles += b.code.size();
    for (const isa::BodyInstance& in : program.instances) patches += in.patches.size();
    out += fmt::format(
        "shared code: {} bodies of {} bundles, {} instances with {} patched operands, {} bundles "
        "outside them\n",
        program.bodies.size(), bodyBundles, program.instances.size(), patches, program.code.size());
  }
  int64_t inputs = 0, outputs = 0, constants = 0;
  for (const isa::BufferDesc& b : program.buffers) {
    inputs += b.role == isa::BufferRole::Input;
    outputs += b.role == isa::BufferRole::Output;
    constants += b.role == isa::BufferRole::Constant;
  }
  out += fmt::format("buffers: {} inputs, {} outputs, {} constants\n", inputs, outputs, constants);
  out += fmt::format(
      "HBM: peak {} bytes ({}) of temporaries and values with reuse ({} without), {} bytes in "
      "all\n",
      buffers.peakBytes, humanBytes(buffers.peakBytes), buffers.totalBytes, hbmBytes);
  double flops = 0;
  for (const isa::CostEntry& c : program.costs) flops += c.flops;
  out += fmt::format("cost table: {} entries, {:.4g} FLOPs\n", program.costs.size(), flops);
  out += fmt::format("{:>8} {:>8}  {:<8} {}\n", "bundles", "first", "kind", "instruction");
  for (const LoweredOp& op : ops)
    out +=
        fmt::format("{:>8} {:>8}  {:<8} {}{}{}{}\n", op.endBundle - op.firstBundle, op.firstBundle,
                    op.kind, op.instruction, op.tiling.empty() ? "" : "  (" + op.tiling + ")",
                    op.prefetched.empty() ? "" : "  [" + op.prefetched + "]",
                    op.drained.empty() ? "" : "  [" + op.drained + "]");
  return out;
}

}  // namespace tpusim::lower
