// Collectives evaluated on several replicas, one thread each.
#include "EvalTestUtil.h"

using namespace evaltest;
using V = std::vector<double>;

namespace {

std::vector<Literal> runReplicas(const std::string& text, int64_t n,
                                 const std::vector<std::vector<Literal>>& args) {
  auto m = parse(text);
  tpusim::hlo::eval::EvalOptions o;
  o.replicas = n;
  return tpusim::hlo::eval::evaluateReplicated(*m, args, o);
}

// Replica r holds [r, 10 + r].
std::vector<std::vector<Literal>> perReplica(int64_t n) {
  std::vector<std::vector<Literal>> args;
  for (int64_t r = 0; r < n; ++r) args.push_back({lit(ElemType::F32, {2}, {double(r), 10.0 + r})});
  return args;
}

const char* kAdd =
    "add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }\n";

}  // namespace

TEST_CASE("all-reduce with replica groups, and its -start/-done form", "[eval][collectives]") {
  auto r = runReplicas(std::string(kAdd) + R"(ENTRY e { p = f32[2] parameter(0)
      ROOT a = f32[2] all-reduce(p), replica_groups={{0,2},{1,3}}, to_apply=add })",
                       4, perReplica(4));
  CHECK(values(r[0]) == V{2, 22});
  CHECK(values(r[1]) == V{4, 24});
  CHECK(values(r[2]) == V{2, 22});
  auto s = runReplicas(std::string(kAdd) + R"(ENTRY e { p = f32[2] parameter(0)
      st = f32[2] all-reduce-start(p), replica_groups={}, to_apply=add
      ROOT d = f32[2] all-reduce-done(st) })",
                       4, perReplica(4));
  CHECK(values(s[3]) == V{6, 46});
}

TEST_CASE("all-gather, reduce-scatter, all-to-all, collective-permute, replica-id",
          "[eval][collectives]") {
  auto g = runReplicas(R"(ENTRY e { p = f32[2] parameter(0)
      ROOT a = f32[4] all-gather(p), replica_groups={{1,0}}, dimensions={0} })",
                       2, perReplica(2));
  CHECK(values(g[0]) == V{1, 11, 0, 10});
  auto rs = runReplicas(std::string(kAdd) + R"(ENTRY e { p = f32[2] parameter(0)
      ROOT a = f32[1] reduce-scatter(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add })",
                        2, perReplica(2));
  CHECK(values(rs[0]) == V{1});
  CHECK(values(rs[1]) == V{21});
  auto a2a = runReplicas(R"(ENTRY e { p = f32[2] parameter(0)
      ROOT a = f32[2] all-to-all(p), replica_groups={{0,1}}, dimensions={0} })",
                         2, perReplica(2));
  CHECK(values(a2a[0]) == V{0, 1});
  CHECK(values(a2a[1]) == V{10, 11});
  auto cp = runReplicas(R"(ENTRY e { p = f32[2] parameter(0)
      ROOT c = f32[2] collective-permute(p), source_target_pairs={{0,1},{1,2}} })",
                        3, perReplica(3));
  CHECK(values(cp[0]) == V{0, 0});  // not a target: zeros
  CHECK(values(cp[1]) == V{0, 10});
  CHECK(values(cp[2]) == V{1, 11});
  auto id = runReplicas(R"(ENTRY e { ROOT r = u32[] replica-id() })", 3, {{}});
  CHECK(values(id[2]) == V{2});
}

TEST_CASE("collective errors name the problem", "[eval][collectives]") {
  CHECK_THROWS_WITH(runReplicas(std::string(kAdd) + R"(ENTRY e { p = f32[2] parameter(0)
      ROOT a = f32[2] all-reduce(p), replica_groups={{0,5}}, to_apply=add })",
                                2, perReplica(2)),
                    Catch::Contains("device 5") && Catch::Contains("2 replica(s)"));
}
