// The kernel-library registry: lookup, parameter checking, the reference
// comparison, and every registered kernel against its own reference.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <set>

#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/Matmul.h"
#include "kernels/lib/Registry.h"

using namespace tpusim;
using namespace tpusim::kernels;
using Catch::Contains;

namespace {

// Interpret mode on seeded inputs, compared with the entry's reference.
lib::ErrorReport runAgainstReference(const lib::LibraryKernel& lk, uint64_t seed) {
  auto kernel = lk.trace();
  std::mt19937_64 rng(seed);
  // SPMD kernels run on every device; their reference takes every device's
  // inputs and gives every device's outputs.
  std::vector<std::vector<dsl::HostArray>> inputs = lk.sampleDeviceInputs(rng);
  dsl::InterpretOptions o;
  o.seed = seed;
  std::vector<dsl::InterpretResult> r = lib::interpretLibraryKernel(lk, *kernel, inputs, o);
  auto doubles = [](const dsl::HostArray& a) {
    std::vector<double> v(size_t(a.size()));
    for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = dsl::valueAt(a, i);
    return v;
  };
  std::vector<std::vector<double>> in, got;
  for (size_t d = 0; d < inputs.size(); ++d) {
    REQUIRE(r[d].races.empty());
    for (const auto& a : inputs[d]) in.push_back(doubles(a));
    for (const auto& a : r[d].outputs) got.push_back(doubles(a));
  }
  return lib::compareWithReference(got, lk.reference(in), lk.tolerance);
}

}  // namespace

TEST_CASE("the registry lists the library kernels with unique names and documented parameters") {
  std::set<std::string> names;
  for (const lib::KernelEntry& e : lib::registeredKernels()) {
    INFO(e.name);
    CHECK(names.insert(e.name).second);
    CHECK(!e.description.empty());
    CHECK(e.description.find('\n') == std::string::npos);
    CHECK(e.build);
    std::set<std::string> params;
    for (const lib::ParamSpec& p : e.params) {
      CHECK(params.insert(p.name).second);
      CHECK(!p.help.empty());
    }
  }
  for (const char* name : {"matmul", "softmax", "rms_norm", "layer_norm", "swiglu"})
    CHECK(names.count(name));
  CHECK(lib::findKernel("rms_norm").name == "rms_norm");
  CHECK_THAT(lib::describeKernel(lib::findKernel("softmax")), Contains("block_rows"));
}

// Hidden from the default run (some defaults take seconds in interpret mode);
// ctest runs it as kernels_registry_defaults, outside the sanitizer build.
TEST_CASE("every registered kernel builds with its defaults and meets its reference",
          "[.defaults]") {
  for (const lib::KernelEntry& e : lib::registeredKernels()) {
    INFO(e.name);
    lib::LibraryKernel lk = lib::buildKernel(e.name);
    REQUIRE(lk.reference);
    lib::ErrorReport r = runAgainstReference(lk, 7);
    INFO("max relative error " << r.maxRel << ", tolerance " << lk.tolerance.rel);
    CHECK(r.pass);
  }
}

TEST_CASE("unknown kernels and parameters are errors that list what exists") {
  CHECK_THROWS_AS(lib::findKernel("rmsnorm"), lib::RegistryError);
  CHECK_THROWS_WITH(lib::findKernel("rmsnorm"), Contains("unknown kernel 'rmsnorm'") &&
                                                    Contains("rms_norm") && Contains("matmul") &&
                                                    Contains("swiglu"));
  CHECK_THROWS_WITH(lib::buildKernel("rms_norm", {{"row", "8"}}),
                    Contains("kernel 'rms_norm' has no parameter 'row'") &&
                        Contains("rows, cols, dtype, eps, block_rows"));
  CHECK_THROWS_WITH(lib::buildKernel("rms_norm", {{"rows", "-3"}}),
                    Contains("parameter 'rows' = '-3': must be at least 1"));
  CHECK_THROWS_WITH(lib::buildKernel("rms_norm", {{"cols", "12.5"}}),
                    Contains("'cols' = '12.5': expected an integer"));
  CHECK_THROWS_WITH(lib::buildKernel("rms_norm", {{"cols", "99999999999999999999"}}),
                    Contains("expected an integer"));
  CHECK_THROWS_WITH(lib::buildKernel("rms_norm", {{"dtype", "s8"}}),
                    Contains("'dtype' = 's8': expected one of f32, bf16"));
  CHECK_THROWS_WITH(lib::buildKernel("layer_norm", {{"eps", "inf"}}),
                    Contains("expected a finite number"));
  CHECK_THROWS_WITH(lib::buildKernel("layer_norm", {{"eps", "-1e-5"}}),
                    Contains("must not be negative"));
  CHECK_THROWS_WITH(lib::buildKernel("swiglu", {{"out_dtype", "s32"}}),
                    Contains("expected one of f32, bf16"));
  // The DSL's own checks still apply to what the parameters describe.
  CHECK_THROWS_WITH(lib::buildKernel("matmul", {{"m", "256"}, {"bm", "100"}}).trace(),
                    Contains("block shape [100,256]"));
}

TEST_CASE("parameters override defaults and reach the kernel") {
  auto k =
      lib::buildKernel("rms_norm", {{"rows", "24"}, {"cols", "384"}, {"dtype", "bf16"}}).trace();
  CHECK(k->name == "rms_norm_bf16_24x384");
  REQUIRE(k->inputs.size() == 2);
  CHECK(k->inputs[0].shape == std::vector<int64_t>{24, 384});
  CHECK(k->inputs[1].shape == std::vector<int64_t>{1, 384});
  CHECK(k->inputs[1].name == "w");
  CHECK(k->outputs[0].dtype == llo::DType::Bf16);
}

TEST_CASE("compareWithReference: relative errors with a floor, NaN never passes") {
  lib::Tolerance tol{1e-3, 1e-2};
  auto r = lib::compareWithReference({{1.0005, -2.0, 0.0}}, {{1.0, -2.0, 0.0}}, tol);
  CHECK(r.pass);
  CHECK(r.maxAbs == Approx(5e-4));
  CHECK(r.maxRel == Approx(5e-4));
  CHECK(r.worstIndex == 0);
  // Next to a zero the error is measured against floor * max|want| = 0.02.
  r = lib::compareWithReference({{1.0, 2.0, 1e-5}}, {{1.0, 2.0, 0.0}}, tol);
  CHECK(r.maxRel == Approx(5e-4));
  CHECK(r.pass);
  r = lib::compareWithReference({{1.0, 2.0, 1e-4}}, {{1.0, 2.0, 0.0}}, tol);
  CHECK(!r.pass);
  CHECK(r.worstIndex == 2);
  r = lib::compareWithReference({{1.0, std::nan(""), 1.0}}, {{1.0, 2.0, 1.0}}, tol);
  CHECK(!r.pass);
  CHECK(std::isnan(r.maxRel));
  CHECK(r.worstIndex == 1);
  CHECK_THROWS_AS(lib::compareWithReference({{1.0}}, {{1.0, 2.0}}, tol), lib::RegistryError);
  CHECK_THROWS_AS(lib::compareWithReference({{1.0}}, {}, tol), lib::RegistryError);
}

TEST_CASE("the library matmul's default blocks come from tpuc's tiling model for the chip") {
  // v6e's view (sim/chips/v6e.json): 2048 x 1024 x 4096 blocks for 4096^3,
  // K not split, so the grid is 2 x 4 x 1.
  codegen::TargetInfo v6e = codegen::TargetInfo::defaults();
  v6e.vmemBytes = int64_t(128) << 20;
  v6e.mxuSize = 256;
  v6e.mxuCount = 4;
  v6e.accSlots = 64;
  v6e.hbmBytesPerCycle = 1640e9 / 1.75e9;
  v6e.hbmInterleaveBytes = 8192;
  std::map<std::string, std::string> shape = {{"m", "4096"}, {"n", "4096"}, {"k", "4096"}};
  std::string why;
  lib::MatmulBlocks b = lib::chooseMatmulBlocks(4096, 4096, 4096, llo::DType::Bf16, v6e, &why);
  CHECK(why.find(fmt::format("bm={} bn={} bk={}", b.bm, b.bn, b.bk)) != std::string::npos);
  CHECK(b.bk == 4096);
  lib::LibraryKernel lk = lib::buildKernel("matmul", shape, &v6e);
  CHECK(lk.call.config().grid == std::vector<int64_t>{4096 / b.bm, 4096 / b.bn, 1});
  CHECK(lk.call.config().grid == std::vector<int64_t>{2, 4, 1});
  // A block given explicitly overrides the model's; the others stay its.
  shape["bm"] = "512";
  CHECK(lib::buildKernel("matmul", shape, &v6e).call.config().grid ==
        std::vector<int64_t>{8, 4, 1});
  shape["bm"] = "many";
  CHECK_THROWS_WITH(lib::buildKernel("matmul", shape, &v6e), Contains("parameter 'bm' = 'many'"));
}
