// Register + constant scalars (ScalarVal): a row offset from a loop index
// goes into the vld immediate instead of a register of its own, an offset
// from a possibly negative register is not folded (the immediate adds without
// wrapping), and a kernel that used to need more than the 32 scalar registers
// compiles and equals interpret mode.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "kernels/dsl/PallasCall.h"
#include "kernels/lib/Registry.h"
#include "testbench/unit/kernels/SimRun.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;

namespace {

// The lines of one block of --dump-machine text (its label starts with `prefix`).
std::vector<std::string> blockLines(const std::string& machine, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(machine);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ') {
      inside = line.rfind(prefix, 0) == 0;
      continue;
    }
    if (inside) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("row offsets from a loop index fold into the vld immediate") {
  CallConfig c;
  c.name = "row_offsets";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({64, 128}, map)};
  c.out_specs = {BlockSpec({8, 128}, map)};
  auto k = pallas_call(
               [&](Ref x, Ref o) {
                 Array acc = fori_loop(
                     0, 2,
                     [&](Scalar i, Array a) {
                       Scalar r = i * 32;
                       for (int t = 0; t < 4; ++t) a = a + x.load(ds(r + 8 * t, 8), ds(0, 128));
                       return a;
                     },
                     zeros(8, 128));
                 o.store(acc);
               },
               c)
               .trace({{{64, 128}, F32, "x"}});
  codegen::CompiledKernel ck = testing::checkSimAgainstInterpret(*k, "v5e", 7).compiled;
  std::vector<std::string> loop = blockLines(ck.machineText, "loop");
  REQUIRE_FALSE(loop.empty());
  // All four loads read one base register, 8 rows apart; no add makes the offsets.
  std::regex vld(R"(vld v\d+, (s\d+), (-?\d+), 1, 255)");
  std::set<std::string> bases;
  std::set<int64_t> offsets;
  int adds = 0;
  for (const std::string& line : loop) {
    for (std::sregex_iterator m(line.begin(), line.end(), vld), end; m != end; ++m) {
      bases.insert((*m)[1]);
      offsets.insert(std::stoll((*m)[2]));
    }
    if (line.find("saddi") != std::string::npos) ++adds;
  }
  INFO(ck.machineText);
  CHECK(bases.size() == 1);
  REQUIRE(offsets.size() == 4);
  CHECK(*offsets.rbegin() - *offsets.begin() == 24);
  CHECK(adds == 0);
}

TEST_CASE("an offset from a register that may be negative is not folded") {
  // Row (j - i + 2) * 8: j - i is negative for j < i, and (j - i) * 8 + 16
  // folded into an immediate would read row 2^32 - 16 + 16 (a fault).
  CallConfig c;
  c.name = "negative_base";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  auto map = [](const GridIndex&) { return std::vector<Scalar>{0, 0}; };
  c.in_specs = {BlockSpec({40, 128}, map)};
  c.out_specs = {BlockSpec({8, 128}, map)};
  auto k = pallas_call(
               [&](Ref x, Ref o) {
                 Array acc = fori_loop(
                     0, 3,
                     [&](Scalar i, Array a) {
                       return fori_loop(
                           0, 3,
                           [&](Scalar j, Array b) {
                             return b * 0.5 + x.load(ds((j - i + 2) * 8, 8), ds(0, 128));
                           },
                           a);
                     },
                     zeros(8, 128));
                 o.store(acc);
               },
               c)
               .trace({{{40, 128}, F32, "x"}});
  testing::checkSimAgainstInterpret(*k, "v5e", 11);
}

TEST_CASE("swiglu with row tiles unrolled fits the 32 scalar registers on tiny8") {
  // The element-wise row loop holds 8 row tiles per iteration. With one
  // register per tile's row (row + 8k) and per operand address this needed
  // more than 32 scalar registers even after spilling; the offsets now go
  // into the immediates. The regression_cycles case swiglu on tiny8 (VMEM
  // raised to 1 MiB, as there) runs the same kernel in timing mode.
  std::vector<std::string> overrides{"vmem.bytes=1048576"};
  target::ChipConfig chip = target::loadChip(testing::kernelChipsDir() + "/tiny8.json", overrides);
  codegen::TargetInfo t = codegen::TargetInfo::fromChip(chip);
  lib::LibraryKernel lk = lib::buildKernel(
      "swiglu", {{"m", "32"}, {"d_model", "128"}, {"d_ff", "256"}, {"bm", "32"}, {"bf", "128"}});
  auto k = lk.trace();
  codegen::CompiledKernel ck = codegen::compileKernel(*k, t);
  CHECK(ck.stats.scalarRegs <= 32);

  std::mt19937_64 rng(3);
  std::vector<HostArray> ins;
  std::map<std::string, HostArray> named;
  for (const llo::ArrayOperand& a : k->inputs) {
    ins.push_back(randomArray(a.shape, a.dtype, rng));
    named[a.name] = ins.back();
  }
  InterpretOptions io;
  io.mxuSize = t.mxuSize;
  std::vector<HostArray> want = interpret(*k, ins, io).outputs;
  sim::SimOptions o;
  o.functional = true;
  o.strict = true;
  o.dmaFactory = sim::makeChipDma;
  sim::Simulation s(chip, ck.program, o);
  for (const auto& [name, a] : named) s.setInput(name, toNpy(a), name);
  sim::SimResult r = s.run();
  INFO((r.fault ? r.fault->report() : std::string()));
  REQUIRE(r.halted);
  REQUIRE_FALSE(r.fault);
  for (size_t i = 0; i < k->outputs.size(); ++i)
    CHECK(testing::bitDifferences(want[i], testing::simOutput(r, k->outputs[i].name, want[i])) ==
          0);
}
