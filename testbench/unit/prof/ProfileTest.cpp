// The profiler (sim/prof) on small modules and kernels built for the
// purpose: op cycles sum to the step, FLOPs and bytes equal analytic counts,
// bound-by names the right unit, the memory viewer agrees with buffer
// assignment, profile.json reads back and timing and functional runs agree.
#include <catch2/catch.hpp>

#include <numeric>

#include "sim/prof/MemoryViewer.h"
#include "sim/prof/ProfileJson.h"
#include "testbench/unit/prof/ProfileRun.h"

using namespace tpusim;
using prof::BoundBy;
using prof::Category;

namespace {

// The op with the most cycles (the module's one real op).
const prof::OpProfile& hottest(const prof::Profile& p) {
  REQUIRE(!p.ops.empty());
  return *std::max_element(p.ops.begin(), p.ops.end(),
                           [](const auto& a, const auto& b) { return a.cycles < b.cycles; });
}

int64_t opCycles(const prof::Profile& p) {
  int64_t sum = 0;
  for (const prof::OpProfile& op : p.ops) sum += op.cycles;
  return sum;
}

const char* kDot = R"(HloModule dot
ENTRY main {
  a = bf16[256,512] parameter(0)
  b = bf16[512,256] parameter(1)
  ROOT d = bf16[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

const char* kAdd = R"(HloModule add
ENTRY main {
  a = f32[512,1024] parameter(0)
  b = f32[512,1024] parameter(1)
  ROOT s = f32[512,1024] add(a, b)
}
)";

const char* kReduce = R"(HloModule red
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[512,1024] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[512] reduce(a, z), dimensions={1}, to_apply=add_f32
}
)";

// Two layers of a matmul and an element-wise op, with JAX-style op_names.
const char* kLayers = R"(HloModule layers
ENTRY main {
  x = bf16[128,256] parameter(0)
  w0 = bf16[256,256] parameter(1)
  w1 = bf16[256,256] parameter(2)
  d0 = bf16[128,256] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/jit(main)/layers_0/ffn/dot_general[dimension_numbers=x]"}
  t0 = bf16[128,256] tanh(d0), metadata={op_name="jit(f)/jit(main)/layers_0/ffn/tanh"}
  d1 = bf16[128,256] dot(t0, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/jit(main)/layers_1/ffn/dot_general[dimension_numbers=x]"}
  ROOT t1 = bf16[128,256] tanh(d1), metadata={op_name="jit(f)/jit(main)/layers_1/ffn/tanh"}
}
)";

}  // namespace

TEST_CASE("op cycles sum exactly to the step", "[prof]") {
  for (const char* hlo : {kDot, kReduce, kLayers}) {
    testing::ProfiledRun r = testing::profileHlo(hlo);
    CHECK(opCycles(r.profile) == r.run.cycles);
    CHECK(r.profile.overview.stepCycles == r.run.cycles);
  }
  // Megacore: the ops of both cores (and a core's idle tail) sum to 2 x step.
  testing::ProfiledRun r = testing::profileHlo(kAdd, "v4");
  REQUIRE(r.profile.peaks.cores == 2);
  CHECK(opCycles(r.profile) == 2 * r.run.cycles);
}

TEST_CASE("FLOPs and bytes equal analytic counts", "[prof]") {
  SECTION("dot") {
    testing::ProfiledRun r = testing::profileHlo(kDot);
    const prof::OpProfile& op = hottest(r.profile);
    CHECK(op.category == Category::MatmulFusion);
    CHECK(op.flops == 2.0 * 256 * 512 * 256);
    CHECK(op.mxuFlops == 2.0 * 256 * 512 * 256);  // tiles of 8 x 128 x 128 fit exactly
    CHECK(op.hbmReadBytes == (256 * 512 + 512 * 256) * 2);
    CHECK(op.hbmWriteBytes == 256 * 256 * 2);
    CHECK(op.intensity == Approx(op.flops / double(op.hbmBytes())));
  }
  SECTION("element-wise add") {
    testing::ProfiledRun r = testing::profileHlo(kAdd);
    const prof::OpProfile& op = hottest(r.profile);
    CHECK(op.category == Category::LoopFusion);
    CHECK(op.flops == 512.0 * 1024);
    CHECK(op.vpuFlops == 512.0 * 1024);
    CHECK(op.mxuFlops == 0);
    CHECK(op.hbmReadBytes == 2 * 512 * 1024 * 4);
    CHECK(op.hbmWriteBytes == 512 * 1024 * 4);
  }
  SECTION("reduce") {
    testing::ProfiledRun r = testing::profileHlo(kReduce);
    const prof::OpProfile& op = hottest(r.profile);
    CHECK(op.category == Category::Reduction);
    CHECK(op.flops == 512.0 * 1024);  // one add per input element
    CHECK(op.hbmReadBytes == 512 * 1024 * 4);
    CHECK(op.hbmWriteBytes == 512 * 4);
  }
}

TEST_CASE("bound-by on kernels built to be bound by one thing", "[prof]") {
  SECTION("MXU: a 1024^3 bf16 matmul, intensity above the ridge") {
    testing::ProfiledRun r = testing::profileHlo(R"(HloModule mxu
ENTRY main {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  ROOT d = bf16[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
    const prof::OpProfile& op = hottest(r.profile);
    INFO(op.boundDetail);
    CHECK(op.boundBy == BoundBy::Mxu);
  }
  SECTION("HBM: an element-wise add of 8 MiB arrays") {
    testing::ProfiledRun r = testing::profileHlo(R"(HloModule hbm
ENTRY main {
  a = f32[2048,1024] parameter(0)
  b = f32[2048,1024] parameter(1)
  ROOT s = f32[2048,1024] add(a, b)
}
)");
    const prof::OpProfile& op = hottest(r.profile);
    INFO(op.boundDetail);
    CHECK(op.boundBy == BoundBy::Hbm);
    CHECK(op.rooflineEfficiency > 0.5);
  }
  SECTION("VPU: four independent vector ALU ops per bundle, nothing else") {
    testing::ProfiledRun r = testing::profileAssembly(R"(.chip v5e
.symbol main
.op valu_chain
main:
    sli s3, 256 ;; vimm v0, 1.0 ;; vimm v1, 2.0 ;; mark 0
body:
    vadd.f32 v4, v0, v1 ;; vmul.f32 v5, v0, v1 ;; vadd.f32 v6, v0, v1 ;; vmul.f32 v7, v0, v1
    vadd.f32 v8, v0, v1 ;; vmul.f32 v9, v0, v1 ;; vadd.f32 v10, v0, v1 ;; vmul.f32 v11, v0, v1
    vadd.f32 v12, v0, v1 ;; vmul.f32 v13, v0, v1 ;; vadd.f32 v14, v0, v1 ;; vmul.f32 v15, v0, v1
    vadd.f32 v16, v0, v1 ;; vmul.f32 v17, v0, v1 ;; vadd.f32 v18, v0, v1 ;; vmul.f32 v19, v0, v1 ;; loop s3, body
    halt
.endop
)");
    const prof::OpProfile& op = testing::opNamed(r.profile, "valu_chain");
    INFO(op.boundDetail);
    CHECK(op.boundBy == BoundBy::Vpu);
    CHECK(op.category == Category::LibraryKernel);
    CHECK(op.vpuFlops == 256.0 * 16 * 1024);
  }
  SECTION("latency: a one-vreg add, all DMA round trips") {
    testing::ProfiledRun r = testing::profileHlo(R"(HloModule lat
ENTRY main {
  a = f32[8,128] parameter(0)
  b = f32[8,128] parameter(1)
  ROOT s = f32[8,128] add(a, b)
}
)");
    const prof::OpProfile& op = hottest(r.profile);
    INFO(op.boundDetail);
    CHECK(op.boundBy == BoundBy::Latency);
    CHECK(op.boundDetail.find("sync_wait") == 0);  // the largest cause: waiting on DMA
    CHECK(op.dmaStallShare > 0.3);
  }
}

TEST_CASE("folding across layers and the per-layer breakdown", "[prof]") {
  testing::ProfiledRun r = testing::profileHlo(kLayers);
  const prof::Profile& p = r.profile;
  const prof::FoldedOp* dots = nullptr;
  for (const prof::FoldedOp& f : p.folded)
    if (f.folded == "layers_*/ffn/dot_general") dots = &f;
  REQUIRE(dots);
  CHECK(dots->category == Category::MatmulFusion);
  REQUIRE(dots->ops.size() == 2);
  CHECK(p.ops[dots->ops[0]].layer == 0);
  CHECK(p.ops[dots->ops[1]].layer == 1);
  CHECK(dots->total.cycles == p.ops[dots->ops[0]].cycles + p.ops[dots->ops[1]].cycles);
  CHECK(dots->total.mxuFlops == 2 * 2.0 * 128 * 256 * 256);
  REQUIRE(p.layers.size() >= 2);
  CHECK(p.layers[0].layer == 0);
  CHECK(p.layers[1].layer == 1);
  int64_t sum = 0;
  for (const prof::LayerSummary& l : p.layers) sum += l.cycles;
  CHECK(sum == r.run.cycles);
}

TEST_CASE("the memory viewer's peak is buffer assignment's", "[prof]") {
  testing::ProfiledRun r = testing::profileHlo(kLayers);
  const lower::BufferAssignment& a = r.compiled.lowered.buffers;
  const prof::MemoryProfile& m = r.profile.memory;
  REQUIRE(m.present);
  CHECK(m.peakLiveBytes == a.peakLiveBytes);
  CHECK(m.heapPeakBytes == a.peakBytes);
  CHECK(m.steps.size() == a.schedule.size());
  int64_t atPeak = 0;
  for (size_t i : m.atPeak) atPeak += m.buffers[i].bytes;
  CHECK(atPeak == m.peakLiveBytes);
  // Parameters live throughout, so all three weights are at the peak.
  CHECK(m.atPeakByKind.at("parameter") >= (128 * 256 + 2 * 256 * 256) * 2);
}

TEST_CASE("profile.json reads back, and timing and functional runs give the same profile",
          "[prof]") {
  testing::ProfiledRun timing = testing::profileHlo(kLayers, "v5e", false);
  testing::ProfiledRun functional = testing::profileHlo(kLayers, "v5e", true);
  std::string a = prof::profileToJson(timing.profile).dump(1);
  std::string b = prof::profileToJson(functional.profile).dump(1);
  CHECK(a == b);
  prof::Profile back = prof::profileFromJson(nlohmann::json::parse(a), "profile.json");
  CHECK(prof::profileToJson(back).dump(1) == a);
  CHECK_THROWS_WITH(
      prof::profileFromJson(nlohmann::json::parse(R"({"profile_version": 99})"), "p.json"),
      Catch::Contains("profile_version 99"));
  CHECK_THROWS_WITH(
      prof::profileFromJson(nlohmann::json::parse(R"({"profile_version": 1})"), "p.json"),
      Catch::Contains("missing field 'program'"));
}
