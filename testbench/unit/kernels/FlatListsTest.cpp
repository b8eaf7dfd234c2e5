// The scheduler's per-instruction lists in one vector (FlatLists.h), and the
// register allocator's dense per-class intervals on sparse register numbers.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/codegen/FlatLists.h"
#include "kernels/codegen/RegAlloc.h"
#include "kernels/codegen/Scheduler.h"
#include "kernels/codegen/TargetInfo.h"

using namespace tpusim;
using namespace tpusim::kernels::codegen;
using isa::Opcode;

TEST_CASE("flat lists keep each list's items apart, empty lists included") {
  FlatLists<int> l;
  CHECK(l.size() == 0);
  l.open();
  CHECK(l.last().size() == 0);
  l.add(3);
  l.add(4);
  CHECK(l.last().size() == 2);
  l.open();  // an empty list between two others
  l.open();
  l.add(7);
  REQUIRE(l.size() == 3);
  CHECK(std::vector<int>(l[0].begin(), l[0].end()) == std::vector<int>{3, 4});
  CHECK(l[1].size() == 0);
  CHECK(l[1].begin() == l[1].end());
  REQUIRE(l[2].size() == 1);
  CHECK(l[2][0] == 7);
  // Items added after a list was read show up in the last one only.
  l.add(8);
  CHECK(l[0].size() == 2);
  CHECK(std::vector<int>(l[2].begin(), l[2].end()) == std::vector<int>{7, 8});
}

TEST_CASE("registers numbered past the function's count, and numbers never named, allocate") {
  TargetInfo t = TargetInfo::defaults();
  MFunction fn;
  fn.name = "sparse";
  fn.blocks.resize(1);
  MBlock& b = fn.blocks[0];
  fn.numVirtRegs = {2, 2, 0};  // the registers below go past these counts
  MOperand s = MOperand::vreg(RegClass::Scalar, 40);
  MOperand v1 = MOperand::vreg(RegClass::Vector, 17);
  MOperand v2 = MOperand::vreg(RegClass::Vector, 5);
  MOperand v3 = MOperand::vreg(RegClass::Vector, 90);
  b.instrs.push_back(makeInstr(Opcode::SLi, {s, MOperand::imm(0)}));
  b.instrs.push_back(makeInstr(Opcode::VImm, {v1, MOperand::imm(1)}));
  b.instrs.push_back(makeInstr(Opcode::VImm, {v2, MOperand::imm(2)}));
  b.instrs.push_back(makeInstr(Opcode::VAddS32, {v3, v1, v2}));
  MInstr st =
      makeInstr(Opcode::VSt, {v3, s, MOperand::imm(0), MOperand::imm(1), MOperand::imm(0xFF)});
  st.mem = {MemAccess::Space::Vmem, 0, true, 0, 8};
  b.instrs.push_back(st);
  std::vector<BlockSchedule> sched{scheduleBlock(b, t)};
  std::array<int, 3> used = allocateRegisters(fn, sched, {}, t);
  CHECK(used[0] == 1);  // one scalar, though numbered 40
  CHECK(used[1] >= 2);  // v1 and v2 live together
  CHECK(used[1] <= 3);
  CHECK(used[2] == 0);
  for (const MInstr& mi : b.instrs)
    forEachReg(mi,
               [&](const MOperand& o, isa::Access) { CHECK(o.kind == MOperand::Kind::PhysReg); });
  // v1 and v2 are read together: two different registers.
  CHECK(b.instrs[3].ops[1].value != b.instrs[3].ops[2].value);
}
