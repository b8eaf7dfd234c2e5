// Cross-kernel prefetch (kernels/codegen/Prefetch.h, docs/compiler.md): which
// first blocks a kernel may start for the next one (never a buffer it writes),
// where they land, and what the module compiler makes of a chain of dots.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdlib>

#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/lower/fusion/FusionLowering.h"
#include "compiler/lower/module/ModuleLowering.h"
#include "kernels/codegen/Prefetch.h"
#include "testbench/unit/HloTestUtil.h"

using namespace tpusim;
namespace codegen = kernels::codegen;

namespace {

std::unique_ptr<hlo::HloModule> parse(const std::string& text) { return testing::parseHlo(text); }

// Two projections in a row: the second reads the first one's result and its
// own weight.
const char* kChain = R"(
HloModule chain
ENTRY main {
  x = bf16[256,1024] parameter(0)
  w1 = bf16[1024,1024] parameter(1)
  w2 = bf16[1024,1024] parameter(2)
  d1 = f32[256,1024] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c1 = bf16[256,1024] convert(d1)
  ROOT d2 = f32[256,1024] dot(c1, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

const lower::TargetDescription& v5eDesc() {
  static lower::TargetDescription t = lower::loadTarget("v5e");
  return t;
}
const codegen::TargetInfo& v5e() {
  static codegen::TargetInfo t = codegen::TargetInfo::fromChip(v5eDesc().chip);
  return t;
}

lower::LoweredModule lowerChain(bool prefetch) {
  auto m = parse(kChain);
  driver::ModuleLoweringOptions o;
  o.lower.crossKernelPrefetch = prefetch;
  return driver::compileModule(*m, v5eDesc(), v5e(), o);
}

}  // namespace

TEST_CASE("the prefetch plan never reads what the running kernel writes", "[compiler][prefetch]") {
  auto m = parse(kChain);
  const hlo::HloInstruction* d2 = m->entry()->findInstruction("d2");
  REQUIRE(d2);
  lower::LoweredKernel lk = lower::lowerToKernel(*d2, v5e());
  REQUIRE(lk.kernel->inputs.size() == 2);
  const int64_t lhs = 0x100000, rhs = 0x400000;  // c1 (512 KiB), w2 (2 MiB)
  const int64_t lhsBytes = 256 * 1024 * 2, all = v5e().vmemRows();

  SECTION("nothing written: both first blocks, at the top, in input order") {
    codegen::PrefetchPlan p = codegen::planPrefetch(*lk.kernel, v5e(), {lhs, rhs}, {}, true, all);
    REQUIRE(p.streams.size() == 2);
    CHECK(p.streams[0].input == 0);
    CHECK(p.streams[0].bufRow == all - p.streams[0].rows);
    CHECK(p.streams[0].flag == v5e().syncFlags - 1);
    CHECK(p.streams[1].bufRow == all - p.rows);
    CHECK(p.flags == 2);
    for (const codegen::PrefetchCopy& c : p.copies) {
      const bool first = c.flag == p.streams[0].flag;
      const int64_t src = first ? lhs : rhs;
      CHECK(int64_t(c.desc.srcAddr) >= src);
      CHECK(c.desc.src == isa::MemorySpace::Hbm);
      CHECK(c.desc.dst == isa::MemorySpace::Vmem);
      // Into buffer 0 of the stream: the one its prologue fills first.
      const codegen::PrefetchedStream& s = p.streams[first ? 0 : 1];
      CHECK(int64_t(c.desc.dstAddr) >= s.bufRow * isa::kVmemRowBytes);
      CHECK(int64_t(c.desc.dstAddr) < (s.bufRow + s.rows / 2) * isa::kVmemRowBytes);
    }
    codegen::PrefetchPlan bottom =
        codegen::planPrefetch(*lk.kernel, v5e(), {lhs, rhs}, {}, false, all);
    CHECK(bottom.streams.at(0).bufRow == 0);
    CHECK(bottom.streams.at(0).flag == 0);
    CHECK(bottom.streams.at(1).bufRow == bottom.streams[0].rows);
  }
  SECTION("an input the running kernel writes is not prefetched, not even one byte of it") {
    for (codegen::HbmRange w :
         {codegen::HbmRange{lhs, lhs + lhsBytes},
          codegen::HbmRange{lhs + lhsBytes - 1, lhs + lhsBytes}, codegen::HbmRange{0, lhs + 1}}) {
      codegen::PrefetchPlan p =
          codegen::planPrefetch(*lk.kernel, v5e(), {lhs, rhs}, {w}, true, all);
      REQUIRE(p.streams.size() == 1);
      CHECK(p.streams[0].input == 1);
      for (const codegen::PrefetchCopy& c : p.copies)
        CHECK((int64_t(c.desc.srcAddr) >= w.end || int64_t(c.desc.srcAddr) < w.begin));
    }
    // A range just past it touches nothing.
    codegen::PrefetchPlan p = codegen::planPrefetch(
        *lk.kernel, v5e(), {lhs, rhs}, {{lhs + lhsBytes, lhs + lhsBytes + 64}}, true, all);
    CHECK(p.streams.size() == 2);
  }
  SECTION("an unknown address or no VMEM room: nothing") {
    CHECK(codegen::planPrefetch(*lk.kernel, v5e(), {-1, -1}, {}, true, all).empty());
    CHECK(codegen::planPrefetch(*lk.kernel, v5e(), {lhs, rhs}, {}, true, 8).empty());
  }
}

TEST_CASE("a chain of projections: the weight is prefetched, the activation is not",
          "[compiler][prefetch]") {
  lower::LoweredModule on = lowerChain(true), off = lowerChain(false);
  CHECK(off.kernelsPrefetched == 0);
  REQUIRE(on.kernelsPrefetched == 1);
  CHECK(on.prefetchedBytes == 1024 * 1024 * 2);  // w2's first (and only) block
  std::vector<const lower::LoweredOp*> kernels;
  for (const lower::LoweredOp& op : on.ops)
    if (op.kind == "kernel") kernels.push_back(&op);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0]->prefetched.empty());
  // Only w2: the kernel's other input is the first kernel's result.
  CHECK(kernels[1]->prefetched.find("'w2'") != std::string::npos);
  CHECK(kernels[1]->prefetched.find(',') == std::string::npos);
  CHECK(kernels[1]->prefetched.find("started by %" + kernels[0]->instruction) != std::string::npos);
  // The issuing kernel holds the prefetch's descriptors in its own SMEM.
  CHECK(on.smemWords > off.smemWords);
}

TEST_CASE("a projection's weight is started across the short norm kernels before it",
          "[compiler][prefetch]") {
  const char* src = std::getenv("TPUSIM_SOURCE_DIR");
  hlo::ParseResult r =
      hlo::parseHloFile(std::string(src ? src : ".") + "/traces/llama_micro_decode.hlo");
  INFO(r.error);
  REQUIRE(r.ok());
  auto m = std::move(r.modules.at(0));
  lower::LoweredModule l = driver::compileModule(*m, v5eDesc(), v5e());
  int across = 0;
  for (size_t i = 0; i < l.ops.size(); ++i) {
    const std::string& note = l.ops[i].prefetched;
    if (note.empty()) continue;
    REQUIRE(l.ops[i].kind == "kernel");
    const std::string issuer = note.substr(note.rfind('%') + 1);
    if (i > 0 && l.ops[i - 1].instruction == issuer) continue;
    // Started further back: the ops between are kernels that start nothing
    // and are not prefetched themselves, or DMA fragments (the KV-cache
    // updates here), never control code; at most 4 kernels (KernelNeighbours::
    // kMaxAhead - 1: since branch int8j the score dot starts the o
    // projection's weight across the attention's 4 short kernels).
    size_t j = i;
    int kernelsBetween = 0;
    while (j > 0 && l.ops[j - 1].instruction != issuer) {
      --j;
      INFO(l.ops[j].instruction << " between " << issuer << " and " << l.ops[i].instruction);
      CHECK((l.ops[j].kind == "kernel" || l.ops[j].kind == "dma"));
      CHECK(l.ops[j].prefetched.empty());
      kernelsBetween += l.ops[j].kind == "kernel";
    }
    REQUIRE(j > 0);
    CHECK(kernelsBetween <= 4);
    ++across;
  }
  CHECK(across >= 1);
}

TEST_CASE("a next kernel whose plan does not fit is not taken as one that loads nothing",
          "[compiler][prefetch]") {
  // A dot, a transpose of its result (a DMA fragment: it keeps the DMA queues'
  // flags), a sum of 61 parameters (61 first blocks: too many flags beside the
  // fragment, so its plan is dropped) and a second dot whose first blocks
  // (258 KiB) outweigh the sum's arrays (248 KiB) but not three times over.
  // The sum loads its own first blocks, so the rule for a next kernel that
  // loads next to nothing must not start the second dot's blocks across it.
  const int n = 61;
  std::string params, body, prev = "p0";
  for (int i = 0; i < n; ++i) {
    params += fmt::format(", p{}: f32[8,128]", i);
    body += fmt::format("  %p{} = f32[8,128]{{1,0}} parameter({})\n", i, 4 + i);
  }
  for (int i = 1; i < n; ++i) {
    body += fmt::format("  %a{} = f32[8,128]{{1,0}} add(%{}, %p{})\n", i, prev, i);
    prev = fmt::format("a{}", i);
  }
  const std::string text = fmt::format(R"(
HloModule far_after_rejected_next
ENTRY %main (x: bf16[8,1024], w1: bf16[1024,2048], w2: bf16[256,1024], x2: bf16[8,256]{}) -> (f32[2048,8], f32[8,128], f32[8,1024]) {{
  %x = bf16[8,1024]{{1,0}} parameter(0)
  %w1 = bf16[1024,2048]{{1,0}} parameter(1)
  %w2 = bf16[256,1024]{{1,0}} parameter(2)
  %x2 = bf16[8,256]{{1,0}} parameter(3)
{}  %s = f32[8,2048]{{1,0}} dot(%x, %w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  %t = f32[2048,8]{{1,0}} transpose(%s), dimensions={{1,0}}
  %o = f32[8,1024]{{1,0}} dot(%x2, %w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT %r = (f32[2048,8]{{1,0}}, f32[8,128]{{1,0}}, f32[8,1024]{{1,0}}) tuple(%t, %{}, %o)
}})",
                                       params, body, prev);
  auto m = parse(text);
  lower::LoweredModule l = driver::compileModule(*m, v5eDesc(), v5e());
  std::vector<const lower::LoweredOp*> kernels;
  for (const lower::LoweredOp& op : l.ops)
    if (op.kind == "kernel") kernels.push_back(&op);
  REQUIRE(kernels.size() == 3);
  INFO(kernels[2]->prefetched);
  CHECK(kernels[1]->prefetched.empty());
  // Started by the sum, the kernel right before it; not by the first dot.
  CHECK(kernels[2]->prefetched.find("'w2'") != std::string::npos);
  CHECK(kernels[2]->prefetched.find("started by %" + kernels[1]->instruction) != std::string::npos);
}
