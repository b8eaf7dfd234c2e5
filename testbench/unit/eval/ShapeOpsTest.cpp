// Hand-computed results of the data-movement opcodes through the interpreter.
#include "EvalTestUtil.h"

using namespace evaltest;
using V = std::vector<double>;

TEST_CASE("broadcast, reshape, transpose, reverse, iota", "[eval][shape]") {
  Literal x = lit(ElemType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(values(run(R"(ENTRY e { p = f32[2,3] parameter(0)
      ROOT t = f32[3,2] transpose(p), dimensions={1,0} })",
                   {x})) == V{1, 4, 2, 5, 3, 6});
  CHECK(values(run(R"(ENTRY e { p = f32[2,3] parameter(0)
      ROOT r = f32[3,2] reshape(p) })",
                   {x})) == V{1, 2, 3, 4, 5, 6});
  CHECK(values(run(R"(ENTRY e { p = f32[2,3] parameter(0)
      ROOT r = f32[2,3] reverse(p), dimensions={1} })",
                   {x})) == V{3, 2, 1, 6, 5, 4});
  CHECK(values(run(R"(ENTRY e { p = f32[2,3] parameter(0)
      ROOT b = f32[2,2,3] broadcast(p), dimensions={0,2} })",
                   {x})) == V{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  CHECK(values(run(R"(ENTRY e { ROOT i = s32[2,3] iota(), iota_dimension=1 })", {})) ==
        V{0, 1, 2, 0, 1, 2});
  // bitcast through layouts: {0,1} physical order is column-major.
  CHECK(values(run(R"(ENTRY e { p = f32[2,3]{1,0} parameter(0)
      ROOT b = f32[3,2]{0,1} bitcast(p) })",
                   {x})) == V{1, 4, 2, 5, 3, 6});
}

TEST_CASE("slice, dynamic-slice clamping, dynamic-update-slice, concatenate", "[eval][shape]") {
  Literal x = lit(ElemType::S32, {5}, {0, 1, 2, 3, 4});
  CHECK(values(run(R"(ENTRY e { p = s32[5] parameter(0)
      ROOT s = s32[2] slice(p), slice={[1:5:2]} })",
                   {x})) == V{1, 3});
  Literal start = Literal::scalar(ElemType::S32, 4);
  // Start 4 with size 3 clamps to 2.
  CHECK(values(run(R"(ENTRY e { p = s32[5] parameter(0) i = s32[] parameter(1)
      ROOT s = s32[3] dynamic-slice(p, i), dynamic_slice_sizes={3} })",
                   {x, start})) == V{2, 3, 4});
  Literal neg = Literal::scalar(ElemType::S32, -7);
  CHECK(values(run(R"(ENTRY e { p = s32[5] parameter(0) i = s32[] parameter(1)
      ROOT s = s32[3] dynamic-slice(p, i), dynamic_slice_sizes={3} })",
                   {x, neg})) == V{0, 1, 2});
  Literal u = lit(ElemType::S32, {2}, {9, 8});
  CHECK(
      values(run(R"(ENTRY e { p = s32[5] parameter(0) u = s32[2] parameter(1) i = s32[] parameter(2)
      ROOT s = s32[5] dynamic-update-slice(p, u, i) })",
                 {x, u, start})) == V{0, 1, 2, 9, 8});
  CHECK(values(run(R"(ENTRY e { p = s32[5] parameter(0) u = s32[2] parameter(1)
      ROOT c = s32[7] concatenate(u, p), dimensions={0} })",
                   {x, u})) == V{9, 8, 0, 1, 2, 3, 4});
}

TEST_CASE("pad with negative and interior padding", "[eval][shape]") {
  Literal x = lit(ElemType::F32, {3}, {1, 2, 3});
  const char* text = R"(ENTRY e { p = f32[3] parameter(0) z = f32[] constant(0)
      ROOT q = f32[%d] pad(p, z), padding=%s })";
  auto pad = [&](int n, const char* spec) {
    char buf[256];
    std::snprintf(buf, sizeof buf, text, n, spec);
    return values(run(buf, {x}));
  };
  CHECK(pad(7, "1_1_1") == V{0, 1, 0, 2, 0, 3, 0});
  CHECK(pad(4, "-1_0_1") == V{0, 2, 0, 3});
  CHECK(pad(2, "-2_-1_1") == V{2, 0});
  CHECK(pad(5, "2_0") == V{0, 0, 1, 2, 3});
}

TEST_CASE("gather and scatter with full dimension numbers", "[eval][gather]") {
  Literal table = lit(ElemType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Literal idx = lit(ElemType::S32, {2}, {2, 0});
  // Row gather (embedding lookup): out[i, :] = table[idx[i], :].
  CHECK(values(run(R"(ENTRY e { t = f32[3,2] parameter(0) i = s32[2] parameter(1)
      ROOT g = f32[2,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0},
        start_index_map={0}, index_vector_dim=1, slice_sizes={1,2} })",
                   {table, idx})) == V{5, 6, 1, 2});
  // Out-of-range start index clamps.
  Literal far = lit(ElemType::S32, {1}, {7});
  CHECK(values(run(R"(ENTRY e { t = f32[3,2] parameter(0) i = s32[1] parameter(1)
      ROOT g = f32[1,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0},
        start_index_map={0}, index_vector_dim=1, slice_sizes={1,2} })",
                   {table, far})) == V{5, 6});
  // Batching dims: out[b] = x[b, idx[b]].
  Literal x = lit(ElemType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Literal bi = lit(ElemType::S32, {2, 1}, {2, 1});
  CHECK(values(run(R"(ENTRY e { x = f32[2,3] parameter(0) i = s32[2,1] parameter(1)
      ROOT g = f32[2] gather(x, i), offset_dims={}, collapsed_slice_dims={1},
        start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0},
        index_vector_dim=1, slice_sizes={1,1} })",
                   {x, bi})) == V{3, 5});
  // Scatter-add with a repeated index; an out-of-range window is skipped.
  Literal base = lit(ElemType::F32, {4}, {0, 0, 0, 0});
  Literal si = lit(ElemType::S32, {3, 1}, {1, 1, 9});
  Literal up = lit(ElemType::F32, {3}, {10, 5, 7});
  CHECK(values(run(R"(
add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }
ENTRY e { o = f32[4] parameter(0) i = s32[3,1] parameter(1) u = f32[3] parameter(2)
  ROOT s = f32[4] scatter(o, i, u), update_window_dims={}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add })",
                   {base, si, up})) == V{0, 15, 0, 0});
}
