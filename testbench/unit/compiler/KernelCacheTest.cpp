// The kernel cache's relocation inference (compiler/lower/module/KernelCache.h)
// on synthetic "compilations": what it derives equals what the compiler would
// give, and whatever it cannot predict uniquely is compiled.
#include <catch2/catch.hpp>

#include "compiler/lower/module/KernelCache.h"
#include "compiler/lower/module/ModuleLowering.h"

using namespace tpusim;
namespace codegen = kernels::codegen;
namespace llo = kernels::llo;

namespace {

llo::Kernel oneInputKernel() {
  llo::Kernel k;
  k.name = "fusion";
  k.inputs.push_back({"x", isa::DType::F32, {8, 128}, {}});
  k.body = std::make_unique<llo::Function>();
  return k;
}

codegen::CompileOptions placed(uint32_t firstBundle, int64_t smemBase, int64_t address,
                               const std::string& name) {
  codegen::CompileOptions o;
  o.inputAddresses = {address};
  o.firstBundle = firstBundle;
  o.smemBase = smemBase;
  o.standalone = false;
  o.hloInstruction = name;
  return o;
}

// What a code generator might emit: the address's low word plus an offset in
// an immediate, a branch to its own second bundle, the high word in SMEM
// data, a symbol; `scale` makes the immediate depend on the address in a way
// no relation explains.
codegen::CompiledKernel fakeCompile(const codegen::CompileOptions& o, int64_t scale = 1) {
  codegen::CompiledKernel k;
  isa::Bundle b;
  isa::Instruction& li = b.slot(isa::SlotKind::Scalar, 0);
  li.op = isa::Opcode::SLi;
  li.operands[0] = 3;
  li.operands[1] = int64_t(uint32_t(o.inputAddresses[0] * scale + 512));
  k.program.code.push_back(b);
  isa::Bundle j;
  j.slot(isa::SlotKind::Scalar, 0).op = isa::Opcode::Jmp;
  j.slot(isa::SlotKind::Scalar, 0).operands[0] = int64_t(o.firstBundle) + 1;
  k.program.code.push_back(j);
  uint32_t high = uint32_t(uint64_t(o.inputAddresses[0]) >> 32);
  k.program.data.push_back(
      {isa::MemorySpace::Smem,
       uint64_t(o.smemBase) * 4,
       {uint8_t(high), uint8_t(high >> 8), uint8_t(high >> 16), uint8_t(high >> 24)}});
  k.program.symbols.push_back({o.hloInstruction, o.firstBundle});
  k.firstBundle = o.firstBundle;
  k.smemBase = o.smemBase;
  k.smemWords = 1;
  k.standalone = false;
  return k;
}

bool sameProgram(const codegen::CompiledKernel& a, const codegen::CompiledKernel& b) {
  if (a.program.code != b.program.code || a.program.data.size() != b.program.data.size())
    return false;
  for (size_t i = 0; i < a.program.data.size(); ++i)
    if (a.program.data[i].address != b.program.data[i].address ||
        a.program.data[i].bytes != b.program.data[i].bytes)
      return false;
  return a.program.symbols.size() == b.program.symbols.size() &&
         a.program.symbols[0].name == b.program.symbols[0].name &&
         a.program.symbols[0].bundle == b.program.symbols[0].bundle;
}

}  // namespace

TEST_CASE("kernels that differ in addresses and placement are derived, exactly",
          "[compiler][kernel-cache]") {
  // Layers 5 GiB apart: the first two kernels already differ in the high word.
  // 3 GiB apart: the first two share it (0), so the third, whose high word is
  // 1, is compiled and the relations are learnt again from the first and it.
  const std::pair<int64_t, int64_t> cases[] = {{int64_t(5) << 30, 2}, {int64_t(3) << 30, 3}};
  for (auto [layer, compiled] : cases)
    for (bool verify : {false, true}) {
      lower::KernelCache cache(verify);
      llo::Kernel k = oneInputKernel();
      for (int i = 0; i < 6; ++i) {
        codegen::CompileOptions o = placed(uint32_t(100 + 10 * i), 7 + 3 * i, 4096 + layer * i,
                                           "fusion." + std::to_string(i));
        codegen::CompiledKernel got = cache.get(k, o, [&] { return fakeCompile(o); });
        CHECK(sameProgram(got, fakeCompile(o)));
      }
      CHECK(cache.compiled() == compiled);
      CHECK(cache.derived() == 6 - compiled);
    }
}

TEST_CASE("the kernel cache compiles what it cannot predict", "[compiler][kernel-cache]") {
  llo::Kernel k = oneInputKernel();
  SECTION("a field no relation explains: every kernel compiled") {
    lower::KernelCache cache;
    for (int i = 0; i < 4; ++i) {
      codegen::CompileOptions o = placed(uint32_t(10 * i), i, 4096 + 8192 * i, "f");
      codegen::CompiledKernel got = cache.get(k, o, [&] { return fakeCompile(o, 3); });
      CHECK(sameProgram(got, fakeCompile(o, 3)));
    }
    CHECK(cache.compiled() == 4);
    CHECK(cache.derived() == 0);
  }
  SECTION("an address that stayed put in the first two kernels, then moves") {
    lower::KernelCache cache;
    const int64_t addresses[] = {4096, 4096, 1 << 20, 2 << 20, 3 << 20};
    for (int i = 0; i < 5; ++i) {
      codegen::CompileOptions o =
          placed(uint32_t(10 * i), i, addresses[i], "f" + std::to_string(i));
      codegen::CompiledKernel got = cache.get(k, o, [&] { return fakeCompile(o); });
      CHECK(sameProgram(got, fakeCompile(o)));
    }
    // The third is compiled (the address might hide in any field) and teaches
    // the cache; the last two follow.
    CHECK(cache.compiled() == 3);
    CHECK(cache.derived() == 2);
  }
  SECTION("another kernel IR is another key") {
    lower::KernelCache cache;
    llo::Kernel other = oneInputKernel();
    other.inputs[0].shape = {16, 128};
    for (int i = 0; i < 3; ++i) {
      codegen::CompileOptions o = placed(uint32_t(10 * i), i, 4096 + 8192 * i, "f");
      cache.get(i == 2 ? other : k, o, [&] { return fakeCompile(o); });
    }
    CHECK(cache.compiled() == 3);
  }
}
