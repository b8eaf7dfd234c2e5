// The SPMD library kernels (ring_all_reduce, all_gather_matmul) compiled and
// run on the multi-chip simulator (sim/system, v5e 1x2, 2x2, 2x4, --strict,
// functional) equal interpret mode on several devices bit for bit on every
// device, and interpret mode meets the kernels' references.
#include <catch2/catch.hpp>

#include "SimRun.h"
#include "kernels/dsl/HostArrayIo.h"
#include "kernels/lib/Collectives.h"
#include "kernels/lib/Registry.h"
#include "sim/system/System.h"

using namespace tpusim;
using namespace tpusim::kernels;

namespace {

std::vector<double> doubles(const dsl::HostArray& a) {
  std::vector<double> v(size_t(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = dsl::valueAt(a, i);
  return v;
}

// Returns the step cycles of the simulated run.
int64_t checkOnSystem(const std::string& kernel, std::map<std::string, std::string> params,
                      const std::string& topology) {
  const std::string chip = "v5e";
  codegen::TargetInfo target = testing::kernelTarget(chip);
  lib::LibraryKernel lk = lib::buildKernel(kernel, params, &target);
  auto k = lk.trace();
  std::mt19937_64 rng(11);
  auto inputs = lk.sampleDeviceInputs(rng);
  dsl::InterpretOptions io;
  io.mxuSize = target.mxuSize;
  std::vector<dsl::InterpretResult> want = lib::interpretLibraryKernel(lk, *k, inputs, io);

  std::vector<std::vector<double>> in, got;
  for (int d = 0; d < lk.devices; ++d) {
    for (const auto& a : inputs[size_t(d)]) in.push_back(doubles(a));
    for (const auto& a : want[size_t(d)].outputs) got.push_back(doubles(a));
  }
  lib::ErrorReport e = lib::compareWithReference(got, lk.reference(in), lk.tolerance);
  INFO("interpret mode vs reference: max relative error " << e.maxRel);
  CHECK(e.pass);

  codegen::CompiledKernel c = codegen::compileKernel(*k, target);
  target::ChipConfig cfg = target::loadChip(testing::kernelChipsDir() + "/" + chip + ".json");
  sim::SimOptions o;
  o.functional = true;
  o.strict = true;
  o.dmaFactory = sim::makeChipDma;
  sim::SystemSimulation s(cfg, c.program, o, sim::ici::Torus::parse(topology, cfg.ici));
  for (int d = 0; d < lk.devices; ++d)
    for (size_t i = 0; i < k->inputs.size(); ++i)
      s.setInput(k->inputs[i].name, dsl::toNpy(inputs[size_t(d)][i]), k->inputs[i].name, d);
  sim::SystemResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  REQUIRE_FALSE(r.fault);
  REQUIRE(int(r.chips.size()) == lk.devices);
  for (int d = 0; d < lk.devices; ++d)
    for (size_t i = 0; i < k->outputs.size(); ++i) {
      INFO("device " << d << " output " << k->outputs[i].name);
      const dsl::HostArray& w = want[size_t(d)].outputs[i];
      CHECK(testing::bitDifferences(
                w, testing::simOutput(r.chips[size_t(d)], k->outputs[i].name, w)) == 0);
    }
  return r.cycles;
}

}  // namespace

TEST_CASE("ring_all_reduce on 2, 4 and 8 chips equals interpret mode bit for bit") {
  CHECK(checkOnSystem("ring_all_reduce", {{"devices", "2"}, {"rows", "32"}}, "1x2") > 0);
  // Rings in device-id order (multi-hop steps) and of one-hop steps, one way and both ways.
  CHECK(
      checkOnSystem("ring_all_reduce",
                    {{"devices", "4"}, {"rows", "64"}, {"cols", "384"}, {"bidirectional", "false"}},
                    "2x2") > 0);
  CHECK(checkOnSystem("ring_all_reduce", {{"devices", "4"}, {"rows", "64"}, {"topology", "2x2"}},
                      "2x2") > 0);
  CHECK(checkOnSystem("ring_all_reduce", {{"devices", "8"}, {"rows", "128"}}, "2x4") > 0);
  int64_t oneWay = checkOnSystem("ring_all_reduce",
                                 {{"devices", "8"},
                                  {"rows", "256"},
                                  {"cols", "512"},
                                  {"topology", "2x4"},
                                  {"bidirectional", "false"}},
                                 "2x4");
  int64_t bothWays = checkOnSystem(
      "ring_all_reduce", {{"devices", "8"}, {"rows", "256"}, {"cols", "512"}, {"topology", "2x4"}},
      "2x4");
  CHECK(bothWays < oneWay);
}

TEST_CASE("all_gather_matmul on 2, 4 and 8 chips equals interpret mode bit for bit") {
  CHECK(checkOnSystem("all_gather_matmul", {{"devices", "2"}}, "1x2") > 0);
  CHECK(checkOnSystem("all_gather_matmul", {{"devices", "4"}, {"m", "64"}, {"k", "384"}}, "2x2") >
        0);
  CHECK(checkOnSystem("all_gather_matmul", {{"devices", "8"}, {"n", "128"}, {"topology", "2x4"}},
                      "2x4") > 0);
  // The serial schedule computes the same and takes longer.
  int64_t overlapped =
      checkOnSystem("all_gather_matmul", {{"devices", "4"}, {"topology", "2x2"}}, "2x2");
  int64_t serial = checkOnSystem(
      "all_gather_matmul", {{"devices", "4"}, {"topology", "2x2"}, {"schedule", "serial"}}, "2x2");
  CHECK(overlapped < serial);
}

TEST_CASE("ring orders of one-hop steps") {
  CHECK(lib::ringOrder(8, "2x4") == std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4});
  CHECK(lib::ringOrder(4, "2x2") == std::vector<int>{0, 1, 3, 2});
  CHECK(lib::ringOrder(6, "3x2") == std::vector<int>{0, 2, 4, 5, 3, 1});
  CHECK(lib::ringOrder(4, "1x4") == std::vector<int>{0, 1, 2, 3});
  CHECK(lib::ringOrder(9, "3x3") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8});  // none exists
  CHECK_THROWS_WITH(lib::ringOrder(8, "2x2"), Catch::Contains("has 4 chips, the kernel 8"));
}

TEST_CASE("a DSL kernel whose wait no chip satisfies is the simulator's deadlock fault too") {
  // Device 0 waits for a signal device 1 never sends: interpret mode and the
  // machine both report it (naming the device / chip and the semaphore / flag).
  dsl::CallConfig c;
  c.name = "stuck";
  c.out_shapes = {{{8, 128}, llo::DType::F32, "out"}};
  c.grid = {1};
  auto whole = dsl::BlockSpec({8, 128}, [](const dsl::GridIndex&) {
    return std::vector<dsl::Scalar>{0, 0};
  });
  c.in_specs = {whole};
  c.out_specs = {whole};
  c.scratch = {dsl::SemaphoreType::REGULAR({1})};
  auto k = dsl::pallas_call(
               [](dsl::Ref x, dsl::Ref o, dsl::Ref sem) {
                 dsl::when(dsl::device_id() == 0, [&] { dsl::semaphore_wait(sem.at(0)); });
                 o.store(x.load());
               },
               c)
               .trace({{{8, 128}, llo::DType::F32, "x"}});
  std::mt19937_64 rng(3);
  std::vector<std::vector<dsl::HostArray>> in(2);
  for (auto& d : in) d.push_back(dsl::randomArray({8, 128}, llo::DType::F32, rng));
  CHECK_THROWS_WITH(dsl::interpretDevices(*k, in),
                    Catch::Contains("device 0: waits for semaphore scratch0[0]") &&
                        Catch::Contains("device 1: finished"));
  codegen::TargetInfo target = testing::kernelTarget("v5e");
  codegen::CompiledKernel compiled = codegen::compileKernel(*k, target);
  target::ChipConfig cfg = target::loadChip(testing::kernelChipsDir() + "/v5e.json");
  sim::SimOptions o;
  o.functional = true;
  o.dmaFactory = sim::makeChipDma;
  sim::SystemSimulation s(cfg, compiled.program, o, sim::ici::Torus::parse("1x2", cfg.ici));
  for (int d = 0; d < 2; ++d) s.setInput("x", dsl::toNpy(in[size_t(d)][0]), "x", d);
  sim::SystemResult r = s.run();
  REQUIRE(r.fault);
  CHECK_THAT(r.fault->report(), Catch::Contains("deadlock"));
}
