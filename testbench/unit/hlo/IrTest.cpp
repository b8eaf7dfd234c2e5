#include <catch2/catch.hpp>

#include "compiler/hlo/HloEquality.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloPrinter.h"

using namespace tpusim::hlo;

static const char* kText =
    "HloModule ir\n"
    "sq {\n x = f32[4] parameter(0)\n ROOT m = f32[4] multiply(x, x)\n}\n"
    "ENTRY e {\n"
    "  p = f32[4] parameter(0)\n"
    "  a = f32[4] add(p, p)\n"
    "  n = f32[4] negate(a)\n"
    "  c = f32[4] call(n), to_apply=sq\n"
    "  ROOT r = f32[4] add(c, a)\n}\n";

TEST_CASE("users are tracked through every mutation", "[hlo][ir]") {
  std::string err;
  auto m = parseHloModule(kText, &err);
  REQUIRE(m);
  HloComputation* e = m->entry();
  HloInstruction* p = e->findInstruction("p");
  HloInstruction* a = e->findInstruction("a");
  HloInstruction* n = e->findInstruction("n");
  HloInstruction* r = e->root();
  CHECK(p->users() == std::vector<HloInstruction*>{a});  // add(p, p): one user
  CHECK(a->users().size() == 2);

  // replaceAllUsesWith moves users and the root.
  a->replaceAllUsesWith(p);
  CHECK(a->users().empty());
  CHECK(n->operand(0) == p);
  CHECK(r->operand(1) == p);
  CHECK(p->users().size() == 3);
  CHECK(e->removeInstruction(a));
  CHECK(p->users().size() == 2);
  CHECK(e->findInstruction("a") == nullptr);

  // The root and instructions with users cannot be removed.
  CHECK_FALSE(e->removeInstruction(r));
  CHECK_FALSE(e->removeInstruction(n));
  r->replaceAllUsesWith(n);
  CHECK(e->root() == n);

  // replaceOperand keeps users exact.
  HloInstruction* c = e->findInstruction("c");
  c->replaceOperand(0, p);
  CHECK(std::find(n->users().begin(), n->users().end(), c) == n->users().end());
  CHECK(e->removeDeadInstructions() == 2);  // r and c are dead now
  CHECK(e->instructionCount() == 2);
}

TEST_CASE("create, clone and postOrder", "[hlo][ir]") {
  HloModule m("built");
  auto* comp = m.addComputation(std::make_unique<HloComputation>("main"));
  m.setEntry(comp);
  auto* p = comp->addInstruction(
      HloInstruction::create(HloOpcode::Parameter, "p", Shape::array(PrimitiveType::F32, {2})));
  p->attrs().parameterNumber = 0;
  auto* neg =
      comp->addInstruction(HloInstruction::create(HloOpcode::Negate, "neg", p->shape(), {p}));
  auto* copy = comp->addInstruction(neg->clone("neg2"));
  CHECK(copy->operand(0) == p);
  CHECK(p->users().size() == 2);
  auto* root =
      comp->addInstruction(HloInstruction::create(HloOpcode::Add, "sum", p->shape(), {copy, neg}));
  comp->setRoot(root);
  auto order = comp->postOrder();
  REQUIRE(order.size() == 4);
  CHECK(order.back() == root);
  CHECK(order.front() == p);
  std::string text = printModule(m);
  CHECK(text.find("ROOT %sum = f32[2] add(f32[2] %neg2, f32[2] %neg)") != std::string::npos);
  CHECK(m.uniqueInstructionName("neg") == "neg.1");
  CHECK(m.uniqueInstructionName("other") == "other");
}

TEST_CASE("module clone is deep and structurally equal", "[hlo][ir]") {
  std::string err;
  auto m = parseHloModule(kText, &err);
  REQUIRE(m);
  auto copy = m->clone();
  std::string why;
  CHECK(modulesEqual(*m, *copy, &why));
  CHECK(copy->entry() != m->entry());
  CHECK(copy->entry()->findInstruction("c")->toApply() == copy->findComputation("sq"));
  copy->entry()->findInstruction("n")->setShape(Shape::array(PrimitiveType::F32, {5}));
  CHECK_FALSE(modulesEqual(*m, *copy, &why));
  CHECK(why.find("%n") != std::string::npos);
  CHECK(printModule(*m) != printModule(*copy));
}

TEST_CASE("callers and unreachable computations", "[hlo][ir]") {
  std::string err;
  auto m = parseHloModule(kText, &err);
  REQUIRE(m);
  HloComputation* sq = m->findComputation("sq");
  CHECK(m->callersOf(sq).size() == 1);
  CHECK_FALSE(m->removeComputation(sq));
  CHECK(m->removeUnreachableComputations() == 0);
}

TEST_CASE("replica groups expand in both forms", "[hlo][ir]") {
  ReplicaGroups list;
  list.groups = {{0, 1}, {2, 3}};
  CHECK(list.expand() == list.groups);
  ReplicaGroups iota;
  iota.iotaForm = true;
  iota.iotaGroupShape = {2, 4};
  iota.iotaReshape = {8};
  CHECK(iota.expand() == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  iota.iotaGroupShape = {4, 2};
  iota.iotaReshape = {2, 4};
  iota.iotaTranspose = {1, 0};
  CHECK(iota.expand() == std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  iota.iotaReshape = {3};  // malformed: not g*s ids
  CHECK(iota.expand().empty());
}
