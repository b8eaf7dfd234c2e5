// Shared kernel bodies in a compiled model (isa/SharedCode.h,
// codegen::Module::shareCode): the program tpuc writes with them holds, at
// every bundle, what a program with every kernel compiled afresh and stored in
// full holds, and the simulator decodes it to the same bundles from fewer
// distinct decoded bundles.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/driver/CompileHlo.h"
#include "isa/ProgramFile.h"
#include "isa/SharedCode.h"
#include "isa/target/ChipLoader.h"
#include "sim/core/DecodedProgram.h"

using namespace tpusim;

namespace {

std::string tracePath(const std::string& name) {
  const char* root = std::getenv("TPUSIM_SOURCE_DIR");
  return std::string(root ? root : TPUSIM_SOURCE_DIR_DEFAULT) + "/traces/" + name;
}

// Compiles `trace` and reads it back through the bytes tpuc would write.
isa::Program compileAndRead(const std::string& trace, const target::ChipConfig& chip, bool share,
                            bool cache, size_t* fileBytes) {
  driver::CompileOptions o;
  o.shareCode = share;
  o.kernelCache = cache;
  driver::CompileResult r = driver::compileHloFile(tracePath(trace), chip, o);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(isa::hasSharedCode(r.lowered.program) == share);
  std::vector<uint8_t> bytes;
  std::string error;
  INFO(error);
  REQUIRE(isa::serializeProgram(r.lowered.program, &bytes, &error));
  *fileBytes = bytes.size();
  isa::Program p;
  REQUIRE(isa::parseProgram(bytes.data(), bytes.size(), trace, &p, &error));
  return p;
}

bool sameOp(const sim::DecodedOp& a, const sim::DecodedOp& b) {
  auto same = [](const auto& x, const auto& y) {
    for (size_t i = 0; i < std::size(x); ++i)
      if (x[i] != y[i]) return false;
    return true;
  };
  return a.op == b.op && a.slot == b.slot && a.slotInstance == b.slotInstance &&
         a.slotIndex == b.slotIndex && a.latency == b.latency && a.numV == b.numV &&
         a.numS == b.numS && a.numM == b.numM && same(a.vsrc, b.vsrc) && same(a.ssrc, b.ssrc) &&
         same(a.msrc, b.msrc) && a.dst == b.dst && same(a.imm, b.imm) && a.unit == b.unit &&
         a.unit2 == b.unit2 && a.unit3 == b.unit3 && a.numReads == b.numReads &&
         same(a.reads, b.reads) && a.numRows == b.numRows && same(a.rowSublane, b.rowSublane) &&
         a.rowLo == b.rowLo && a.rowHi == b.rowHi && same(a.rowOff, b.rowOff) &&
         a.wideRead == b.wideRead && a.unitCheck == b.unitCheck;
}

bool sameBundle(const sim::DecodedProgram& a, const sim::DecodedProgram& b, int64_t pc) {
  const sim::DecodedBundle &x = a.at(pc), &y = b.at(pc);
  if (x.numOps != y.numOps || x.hasBranch != y.hasBranch || x.needsSync != y.needsSync ||
      x.numLoads != y.numLoads || x.numStores != y.numStores ||
      x.conflictStatic != y.conflictStatic || x.staticConflict != y.staticConflict ||
      x.invalid != y.invalid || x.invalidSlot != y.invalidSlot || x.numRegs != y.numRegs ||
      x.numWrites != y.numWrites || x.unitOps != y.unitOps)
    return false;
  for (uint32_t i = 0; i < x.numRegs; ++i)
    if (a.regs[x.firstReg + i] != b.regs[y.firstReg + i]) return false;
  for (uint32_t i = 0; i < x.numWrites; ++i)
    if (a.writes[x.firstWrite + i].reg != b.writes[y.firstWrite + i].reg ||
        a.writes[x.firstWrite + i].latency != b.writes[y.firstWrite + i].latency)
      return false;
  for (uint32_t i = 0; i < x.numOps; ++i)
    if (!sameOp(a.ops[x.firstOp + i], b.ops[y.firstOp + i])) return false;
  return true;
}

}  // namespace

TEST_CASE("shared bodies: a two-layer model's program runs the bundles of the flat one",
          "[compiler][shared-code]") {
  target::ChipConfig chip = target::loadChip("v5e");
  size_t sharedBytes = 0, freshBytes = 0;
  isa::Program shared = compileAndRead("llama_micro_prefill.hlo", chip, true, true, &sharedBytes);
  // Every kernel compiled by the code generator and stored in full: what each
  // instance's relocated code must be.
  isa::Program fresh = compileAndRead("llama_micro_prefill.hlo", chip, false, false, &freshBytes);
  REQUIRE(shared.instances.size() > shared.bodies.size());  // some body serves two layers
  CHECK(sharedBytes < freshBytes);
  REQUIRE(isa::codeSize(shared) == fresh.code.size());
  CHECK(isa::flatCode(shared) == fresh.code);
  for (size_t i = 0; i < shared.instances.size(); ++i) {
    const isa::BodyInstance& in = shared.instances[i];
    std::vector<isa::Bundle> code = isa::instanceCode(shared, i);
    INFO("instance " << i << " at bundle " << in.at);
    REQUIRE(std::equal(code.begin(), code.end(), fresh.code.begin() + in.at));
  }
  CHECK(shared.symbols.size() == fresh.symbols.size());
  CHECK(shared.debugMap.size() == fresh.debugMap.size());
  CHECK(shared.data.size() == fresh.data.size());

  // The simulator's decoded program: the same at every bundle, from fewer
  // distinct decoded bundles.
  sim::DecodedProgram ds = sim::decodeProgram(shared, chip);
  sim::DecodedProgram df = sim::decodeProgram(fresh, chip);
  REQUIRE(ds.size() == df.size());
  CHECK(ds.bundles.size() < df.bundles.size());
  CHECK(ds.debugEntry == df.debugEntry);
  for (int64_t pc = 0; pc < ds.size(); ++pc) {
    INFO("bundle " << pc);
    REQUIRE(sameBundle(ds, df, pc));
  }
}
