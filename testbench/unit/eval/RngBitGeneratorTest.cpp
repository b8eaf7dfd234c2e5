// rng-bit-generator (Philox4x32-10, XLA's expander layout): the block
// function against Random123's published known-answer values, and the
// evaluator's state handling (key, counter, output order, new state).
#include "EvalTestUtil.h"

#include "compiler/hlo/eval/RngBitGenerator.h"

using namespace evaltest;
using tpusim::hlo::eval::philox4x32;
using Words = std::array<uint32_t, 4>;

TEST_CASE("philox4x32-10 matches Random123's known answers", "[eval][rng]") {
  CHECK(philox4x32({0, 0, 0, 0}, {0, 0}) == Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

namespace {

Literal u64s(std::vector<uint64_t> v) {
  Literal l = Literal::array(ElemType::U64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) l.data<uint64_t>()[i] = v[i];
  return l;
}

}  // namespace

TEST_CASE("rng-bit-generator: key, counter and state as XLA's Philox expander", "[eval][rng]") {
  // u64[3]: key = state[0], counter = (state[1], state[2]): the third known answer.
  Literal s3 = u64s({0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull});
  Literal r = run(R"(ENTRY e { s = u64[3] parameter(0)
      ROOT r = (u64[3], u32[6]) rng-bit-generator(s), algorithm=rng_philox })",
                  {s3});
  REQUIRE(r.isTuple());
  const uint32_t* v = r.elements()[1].data<uint32_t>();
  CHECK(v[0] == 0xd16cfe09);
  CHECK(v[1] == 0x94fdcceb);
  CHECK(v[2] == 0x5001e420);
  CHECK(v[3] == 0x24126ea1);
  // Element 4 is word 0 of the next block (counter + 1).
  Words next =
      philox4x32({0x243f6a89, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0});
  CHECK(v[4] == next[0]);
  CHECK(v[5] == next[1]);
  const uint64_t* ns = r.elements()[0].data<uint64_t>();
  CHECK(ns[0] == 0x299f31d0a4093822ull);
  CHECK(ns[1] == 0x85a308d3243f6a8aull);  // two blocks
  CHECK(ns[2] == 0x0370734413198a2eull);

  // u64[2] (the PyTorch/XLA dumps): key = state[0], counter = (state[1], state[0]);
  // all ones gives the second known answer, and the counter's low half wraps
  // (the high half is not kept).
  Literal s2 = u64s({~0ull, ~0ull});
  r = run(R"(ENTRY e { s = u64[2] parameter(0)
      ROOT r = (u64[2], u64[2]) rng-bit-generator(s), algorithm=rng_default })",
          {s2});
  const uint64_t* w = r.elements()[1].data<uint64_t>();
  CHECK(w[0] == 0x41c83b0e408f276dull);
  CHECK(w[1] == 0x6d5451fda20bc7c6ull);
  CHECK(r.elements()[0].data<uint64_t>()[0] == ~0ull);
  CHECK(r.elements()[0].data<uint64_t>()[1] == 0);

  CHECK_THROWS_WITH(run(R"(ENTRY e { s = u64[2] parameter(0)
      ROOT r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry })",
                        {s2}),
                    Catch::Contains("rng_three_fry is not implemented"));
}
