// .npy reading and writing: round trips, every dtype, byte orders, versions,
// and a clear error for each kind of malformed file.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "isa/support/Npy.h"
#include "isa/support/Numerics.h"

using namespace tpusim::npy;

namespace {

// Builds a .npy file by hand: magic, version, header length, header, data.
std::vector<uint8_t> rawFile(const std::string& header, const std::vector<uint8_t>& data,
                             int major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  size_t lenBytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < lenBytes; ++i)
    out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string errorOf(const std::vector<uint8_t>& bytes) {
  try {
    parse(bytes.data(), bytes.size(), "t.npy");
  } catch (const NpyError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("npy round trip of every dtype", "[npy]") {
  for (DType t : {DType::Bool, DType::S8, DType::S16, DType::S32, DType::S64, DType::U8, DType::U16,
                  DType::U32, DType::U64, DType::F16, DType::F32, DType::F64}) {
    Array a = makeArray(t, {2, 3});
    for (size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = t == DType::Bool ? (i % 2) : static_cast<uint8_t>(i * 7 + 1);
    auto bytes = serialize(a);
    REQUIRE(bytes.size() % 64 == static_cast<size_t>(a.data.size()) % 64);
    CHECK(bytes[6] == 1);
    Array b = parse(bytes.data(), bytes.size(), "x.npy");
    CHECK(b.dtype == t);
    CHECK(b.shape == a.shape);
    CHECK(b.data == a.data);
  }
}

TEST_CASE("npy writes NumPy's header layout", "[npy]") {
  Array a = makeArray(DType::F32, {3, 4});
  auto bytes = serialize(a);
  // 10 bytes of prefix + 59 of dict + padding + '\n' = 128, a multiple of 64.
  REQUIRE(bytes.size() == 128 + 48);
  CHECK(bytes[8] == 118);
  CHECK(bytes[9] == 0);
  std::string text(bytes.begin() + 10, bytes.begin() + 128);
  CHECK(text.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 0) == 0);
  CHECK(text.back() == '\n');
}

TEST_CASE("npy scalars and zero-size arrays", "[npy]") {
  Array s = makeArray(DType::F64, {});
  double v = 2.5;
  std::memcpy(s.data.data(), &v, 8);
  auto bytes = serialize(s);
  Array t = parse(bytes.data(), bytes.size(), "s.npy");
  CHECK(t.shape.empty());
  CHECK(t.numElements() == 1);
  CHECK(t.as<double>()[0] == 2.5);

  Array z = makeArray(DType::S32, {4, 0, 3});
  bytes = serialize(z);
  Array w = parse(bytes.data(), bytes.size(), "z.npy");
  CHECK(w.shape == std::vector<int64_t>{4, 0, 3});
  CHECK(w.data.empty());
  CHECK(shapeString({}) == "()");
  CHECK(shapeString({5}) == "(5,)");
  CHECK(shapeString({2, 3}) == "(2, 3)");
}

TEST_CASE("npy reads big-endian data and every version", "[npy]") {
  auto big = rawFile("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n",
                     {0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe});
  Array a = parse(big.data(), big.size(), "b.npy");
  REQUIRE(a.dtype == DType::S32);
  CHECK(a.as<int32_t>()[0] == 0x0102);
  CHECK(a.as<int32_t>()[1] == -2);

  for (int major : {2, 3}) {
    auto f = rawFile("{\"shape\": (1,), \"fortran_order\": False, \"descr\": \"<u2\"}",
                     {0x34, 0x12}, major);
    Array b = parse(f.data(), f.size(), "v.npy");
    CHECK(b.as<uint16_t>()[0] == 0x1234);
  }
  // Python 2 long literals and bool normalisation.
  auto old = rawFile("{'descr': '|b1', 'fortran_order': False, 'shape': (2L,)}", {0, 5});
  Array c = parse(old.data(), old.size(), "o.npy");
  CHECK(c.data == std::vector<uint8_t>{0, 1});
}

TEST_CASE("npy bf16 convention", "[npy]") {
  Array f = makeArray(DType::F32, {3});
  float vals[3] = {1.0f, tpusim::floatOf(0x3F808000u), tpusim::floatOf(0x3F818000u)};
  std::memcpy(f.data.data(), vals, sizeof vals);
  auto bits = toBf16Bits(f, "f.npy");
  // 0x3F808000 is a tie rounding to even 0x3F80; 0x3F818000 rounds up to 0x3F82.
  CHECK(bits == std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82});
  Array u = fromBf16Bits({3}, bits);
  CHECK(u.dtype == DType::U16);
  CHECK(toBf16Bits(u, "u.npy") == bits);
  Array i = makeArray(DType::S32, {1});
  CHECK_THROWS_WITH(toBf16Bits(i, "i.npy"), Catch::Contains("i.npy") && Catch::Contains("int32"));
}

TEST_CASE("npy rejects malformed files with a clear error", "[npy]") {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::vector<uint8_t> data(8, 0);
  CHECK(errorOf(rawFile(ok, data)).empty());

  auto bad = rawFile(ok, data);
  bad[1] = 'X';
  CHECK_THAT(errorOf(bad), Catch::Contains("t.npy") && Catch::Contains("bad magic"));
  bad = rawFile(ok, data);
  bad[6] = 4;
  CHECK_THAT(errorOf(bad), Catch::Contains("version 4.0"));
  bad = rawFile(ok, data);
  bad.resize(20);
  CHECK_THAT(errorOf(bad), Catch::Contains("truncated header"));
  CHECK_THAT(errorOf(rawFile(ok, {1, 2, 3})), Catch::Contains("data is truncated"));
  CHECK_THAT(errorOf(rawFile(ok, std::vector<uint8_t>(9))), Catch::Contains("unexpected bytes"));
  CHECK_THAT(errorOf(rawFile("['descr']", data)), Catch::Contains("not a Python dict"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'shape': (2,)}", data)),
             Catch::Contains("no 'fortran_order'"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}", data)),
             Catch::Contains("fortran_order=True"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}", data)),
             Catch::Contains("unsupported dtype '<c8'"));
  CHECK_THAT(
      errorOf(rawFile("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", data)),
      Catch::Contains("structured"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", data)),
             Catch::Contains("negative"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", data)),
             Catch::Contains("not a tuple"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
                             "(4294967296, 4294967296)}",
                             data)),
             Catch::Contains("too large"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
                             "(99999999999999999999,)}",
                             data)),
             Catch::Contains("too large"));
  CHECK_THAT(
      errorOf(rawFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", data)),
      Catch::Contains("'x'"));
  CHECK_THAT(errorOf(rawFile("{'descr': '<f4', 'fortran_order': False", data)),
             Catch::Contains("malformed header"));
}

TEST_CASE("npy file errors name the file", "[npy]") {
  CHECK_THROWS_WITH(read("/nonexistent/dir/x.npy"),
                    Catch::Contains("/nonexistent/dir/x.npy") && Catch::Contains("no such file"));
  CHECK_THROWS_WITH(write("/nonexistent/dir/y.npy", makeArray(DType::U8, {1})),
                    Catch::Contains("/nonexistent/dir/y.npy"));
}
