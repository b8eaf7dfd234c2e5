// The bf16 matmul's generated code keeps the MXUs busy: with the results
// resident in the MXU slots for the whole K (one K block), the step's bundles
// come within a few percent of the MXU-bound ideal (every MXU streaming one
// 8-row LHS tile every 8 cycles), and a body of 26k instructions schedules in
// seconds (the scheduler is not quadratic). compileKernel re-checks every
// block against the timing rules, so the code is also hazard-free.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <tuple>

#include "kernels/codegen/Compile.h"
#include "kernels/lib/AttentionBackward.h"
#include "kernels/lib/Matmul.h"

using namespace tpusim::kernels;

namespace {
std::string chipsDir() {
  if (const char* src = std::getenv("TPUSIM_SOURCE_DIR")) return std::string(src) + "/sim/chips";
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/testbench/")) + "/sim/chips";
}
}  // namespace

TEST_CASE("a K-resident bf16 matmul block is within 15% of the MXU bound") {
  codegen::TargetInfo t = codegen::loadTargetByName("v5e", chipsDir());
  const int64_t m = 512, n = 1024, k = 2048;
  auto call = lib::matmulCall(m, n, k, llo::DType::Bf16, {m, n, k});
  auto kernel = call.trace({{{m, k}, llo::DType::Bf16, "x"}, {{k, n}, llo::DType::Bf16, "y"}});
  auto t0 = std::chrono::steady_clock::now();
  codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // One grid step: (m/8) x (n/128) x (k/128) mm ops of 8 cycles over 4 MXUs.
  int64_t ideal = (m / 8) * (n / 128) * (k / 128) * 8 / t.mxuCount;
  INFO("bundles " << ck.stats.bundles << ", ideal " << ideal << ", compile " << seconds << " s");
  CHECK(ck.stats.instructions > 25000);
  CHECK(ck.stats.bundles >= ideal);
  CHECK(double(ck.stats.bundles) <= 1.15 * double(ideal));
  CHECK(seconds < 60.0);
}

TEST_CASE("several K blocks and ragged shapes still compile hazard-free") {
  codegen::TargetInfo t = codegen::loadTargetByName("v5e", chipsDir());
  for (auto [m, n, k, b] : {std::tuple{256, 512, 1024, lib::MatmulBlocks{256, 512, 256}},
                            std::tuple{264, 384, 300, lib::MatmulBlocks{264, 384, 300}},
                            std::tuple{128, 1024, 256, lib::MatmulBlocks{128, 128, 256}}}) {
    INFO(m << "x" << n << "x" << k);
    auto call = lib::matmulCall(m, n, k, llo::DType::Bf16, b);
    auto kernel = call.trace({{{m, k}, llo::DType::Bf16, "x"}, {{k, n}, llo::DType::Bf16, "y"}});
    CHECK_NOTHROW(codegen::compileKernel(*kernel, t));
  }
}

// Decode attention runs one small matmul per head (M = 1). Consecutive
// matmuls share the MXUs (LowerMatmul.cpp): each op's work items start at the
// MXU after the previous op's last, in the next free result slots, so the
// heads' weight pushes follow one another on every weight port instead of
// each head filling the MXUs, waiting 2N + 7 cycles for its one result row
// and draining them before the next. The step then takes about the weight
// ports' time: 16 heads x 4 weight tiles of 128 cycles over 4 MXUs.
TEST_CASE("consecutive M = 1 matmuls share the MXUs instead of draining between them") {
  codegen::TargetInfo t = codegen::loadTargetByName("v5e", chipsDir());
  const int64_t heads = 16, n = 512, k = 128;
  dsl::CallConfig c;
  c.name = "heads";
  c.out_shapes = {{{heads, 1, n}, llo::DType::F32, "out"}};
  c.grid = {1};
  auto whole = [](std::vector<int64_t> shape) {
    return dsl::BlockSpec(std::move(shape), [](const dsl::GridIndex&) {
      return std::vector<dsl::Scalar>{dsl::Scalar(0), dsl::Scalar(0), dsl::Scalar(0)};
    });
  };
  c.in_specs = {whole({heads, 1, k}), whole({heads, k, n})};
  c.out_specs = {whole({heads, 1, n})};
  auto call = dsl::pallas_call(
      [=](dsl::Ref q, dsl::Ref w, dsl::Ref o) {
        for (int64_t h = 0; h < heads; ++h) {
          dsl::Scalar i(h);
          o.at(i).store(dsl::dot(q.at(i).load(), w.at(i).load()));
        }
      },
      c);
  auto kernel =
      call.trace({{{heads, 1, k}, llo::DType::Bf16, "q"}, {{heads, k, n}, llo::DType::Bf16, "w"}});
  codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
  // Weight-port cycles of the whole step, spread over the MXUs.
  int64_t ports = heads * (n / t.mxuSize) * (k / 8) * 8 / t.mxuCount;
  INFO("bundles " << ck.stats.bundles << ", weight ports " << ports);
  CHECK(ck.stats.bundles >= ports);
  // One fill and drain for the step (a push sequence, 2N + 7 cycles of result
  // latency, the DMAs of a single grid step), not one per head.
  CHECK(ck.stats.bundles <= ports + 1000);
}

// The whole-row attention kernel's score dots (q k^T, transposed weights, 8
// heads per step): each head's items take their own result slots, so the next
// head's weight pushes can start once the previous head's mms are done, while
// its results drain (2N + 7 cycles) and pop. The scheduler's register reserve
// used to wait for those pops (the oldest unscheduled writers) before loading
// the next head's weights: push, mm, drain, pop, one head after another (the
// score block 4,180 bundles on v5e, 2,318 now; the kernel 11.9k -> 9.8k).
TEST_CASE("the attention kernel's score dots load the next weights during the drain") {
  codegen::TargetInfo t = codegen::loadTargetByName("v5e", chipsDir());
  lib::AttentionBackwardParams p;
  p.causal = true;
  p.heads = 8;
  p.headsPerStep = 8;
  // The bound below counts the score block with the softmax in loops; the
  // straight-line softmax (the default, hide_softmax) adds code of its own.
  p.hideSoftmax = false;
  auto call = lib::attentionForwardCall(8, 256, 256, 128, p);
  auto kernel = call.trace(lib::attentionForwardInputs(8, 256, 256, 128, 8));
  codegen::CompiledKernel ck = codegen::compileKernel(*kernel, t);
  INFO("bundles " << ck.stats.bundles);
  CHECK(ck.stats.bundles < 8000);
}
