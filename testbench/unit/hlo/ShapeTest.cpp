#include <catch2/catch.hpp>
#include <climits>

#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/Shape.h"

using namespace tpusim::hlo;

static Shape shapeOf(const std::string& text) {
  Shape s;
  std::string err;
  INFO(text);
  REQUIRE(parseShape(text, &s, &err));
  return s;
}

TEST_CASE("element type names round trip", "[hlo][shape]") {
  for (const char* name : {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16",
                           "bf16", "f32", "f64", "f8e5m2", "f8e4m3fn", "s4", "c64", "token"}) {
    auto t = parsePrimitiveType(name);
    REQUIRE(t);
    CHECK(primitiveTypeName(*t) == name);
  }
  CHECK_FALSE(parsePrimitiveType("f33"));
  CHECK(bitWidth(PrimitiveType::BF16) == 16);
  CHECK(isFloatingType(PrimitiveType::F8E4M3FN));
  CHECK(isF8Type(PrimitiveType::F8E5M2));
  CHECK(isSignedIntegralType(PrimitiveType::S8));
  CHECK_FALSE(isIntegralType(PrimitiveType::Pred));
}

TEST_CASE("array shapes with layouts, tiles and memory spaces", "[hlo][shape]") {
  Shape s = shapeOf("bf16[8,128]{1,0:T(8,128)(2,1)S(1)}");
  CHECK(s.type == PrimitiveType::BF16);
  CHECK(s.dims == std::vector<int64_t>{8, 128});
  REQUIRE(s.layout);
  CHECK(s.layout->minorToMajor == std::vector<int64_t>{1, 0});
  REQUIRE(s.layout->tiles.size() == 2);
  CHECK(s.layout->tiles[0].dims == std::vector<int64_t>{8, 128});
  CHECK(s.layout->tiles[1].dims == std::vector<int64_t>{2, 1});
  CHECK(s.layout->memorySpace == 1);
  CHECK(s.toString() == "bf16[8,128]{1,0:T(8,128)(2,1)S(1)}");
  CHECK(s.toString(false) == "bf16[8,128]");

  Shape scalar = shapeOf("s32[]{:T(128)}");
  CHECK(scalar.isScalar());
  CHECK(scalar.toString() == "s32[]{:T(128)}");
  CHECK(shapeOf("f32[<=10,3]").isDynamicDim(0));
  CHECK(shapeOf("f32[<=10,3]").toString() == "f32[<=10,3]");
  CHECK(shapeOf("f32[2]{0:T(2,*)E(4)L(1)}").toString() == "f32[2]{0:T(2,*)E(4)L(1)}");
  CHECK(shapeOf("f32[2,3]").minorToMajorOrDefault() == std::vector<int64_t>{1, 0});
}

TEST_CASE("tuple shapes, nested and empty", "[hlo][shape]") {
  Shape t = shapeOf("(s32[], (f32[4]{0}, token[]), ())");
  REQUIRE(t.isTuple());
  REQUIRE(t.tupleShapes.size() == 3);
  CHECK(t.tupleShapes[1].tupleShapes[1].isToken());
  CHECK(t.tupleShapes[2].tupleShapes.empty());
  CHECK(t.toString() == "(s32[], (f32[4]{0}, token[]), ())");
  CHECK(shapeOf("(f32[1], /*index=1*/s8[2])").tupleShapes.size() == 2);
}

TEST_CASE("shape equality and element counts", "[hlo][shape]") {
  Shape a = shapeOf("f32[2,3]{1,0}");
  Shape b = shapeOf("f32[2,3]{0,1}");
  CHECK(a.compatible(b));
  CHECK(a != b);
  CHECK(a.elementCount() == 6);
  CHECK(shapeOf("f32[]").elementCount() == 1);
  CHECK(shapeOf("f32[0,5]").elementCount() == 0);
  CHECK(shapeOf("f32[4294967296,4294967296,4294967296]").elementCount() == INT64_MAX);
}

TEST_CASE("malformed shapes are errors", "[hlo][shape]") {
  Shape s;
  std::string err;
  for (const char* bad : {"f33[2]", "f32[2", "f32[-1]", "f32[2]{1,0", "(f32[1]", "token[2]",
                          "f32[2]{0:T(}", "f32[99999999999999999999]", "", "f32[2] x"}) {
    INFO(bad);
    CHECK_FALSE(parseShape(bad, &s, &err));
    CHECK(err.find("error:") != std::string::npos);
  }
}
