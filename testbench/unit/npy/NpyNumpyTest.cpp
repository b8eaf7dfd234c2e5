// Cross-check with NumPy itself when /usr/bin/python3 has it: files NumPy
// writes read back with the right values, and files we write load in NumPy.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "isa/support/Npy.h"

using namespace tpusim::npy;

namespace {

bool haveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

std::string tempDir() {
  char tmpl[] = "/tmp/tpusim-npy-XXXXXX";
  const char* d = mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  return d;
}

}  // namespace

TEST_CASE("npy files written by NumPy", "[npy][numpy]") {
  if (!haveNumpy()) {
    WARN("skipped: /usr/bin/python3 with numpy is not available");
    return;
  }
  std::string dir = tempDir();
  std::string script = fmt::format(
      "import numpy as np\n"
      "np.save('{0}/f.npy', np.arange(6, dtype=np.float32).reshape(2, 3) / 4)\n"
      "np.save('{0}/be.npy', np.array([1, -2, 300], dtype='>i2'))\n"
      "np.save('{0}/s.npy', np.float64(3.5))\n"
      "np.save('{0}/h.npy', np.array([1.5, -2], dtype=np.float16))\n"
      "np.save('{0}/b.npy', np.array([True, False, True]))\n"
      "np.save('{0}/z.npy', np.zeros((0, 7), dtype=np.uint64))\n"
      "np.save('{0}/fo.npy', np.asfortranarray(np.ones((2, 3), dtype=np.float32)))\n",
      dir);
  REQUIRE(std::system(fmt::format("/usr/bin/python3 -c \"{}\"", script).c_str()) == 0);

  Array f = read(dir + "/f.npy");
  REQUIRE(f.shape == std::vector<int64_t>{2, 3});
  CHECK(f.as<float>()[5] == 1.25f);
  Array be = read(dir + "/be.npy");
  REQUIRE(be.dtype == DType::S16);
  CHECK(be.as<int16_t>()[1] == -2);
  CHECK(be.as<int16_t>()[2] == 300);
  Array s = read(dir + "/s.npy");
  CHECK(s.shape.empty());
  CHECK(s.as<double>()[0] == 3.5);
  Array h = read(dir + "/h.npy");
  CHECK(h.as<uint16_t>()[0] == 0x3E00);
  CHECK(h.as<uint16_t>()[1] == 0xC000);
  Array b = read(dir + "/b.npy");
  CHECK(b.data == std::vector<uint8_t>{1, 0, 1});
  Array z = read(dir + "/z.npy");
  CHECK(z.shape == std::vector<int64_t>{0, 7});
  CHECK_THROWS_WITH(read(dir + "/fo.npy"), Catch::Contains("fortran_order=True"));
  std::system(fmt::format("rm -rf '{}'", dir).c_str());
}

TEST_CASE("npy files we write load in NumPy", "[npy][numpy]") {
  if (!haveNumpy()) {
    WARN("skipped: /usr/bin/python3 with numpy is not available");
    return;
  }
  std::string dir = tempDir();
  Array a = makeArray(DType::S32, {2, 2});
  for (int i = 0; i < 4; ++i) a.as<int32_t>()[i] = i * 10 - 5;
  write(dir + "/a.npy", a);
  write(dir + "/s.npy", makeArray(DType::F32, {}));
  std::string script = fmt::format(
      "import numpy as np\n"
      "a = np.load('{0}/a.npy')\n"
      "assert a.dtype == np.int32 and a.shape == (2, 2), a\n"
      "assert a.tolist() == [[-5, 5], [15, 25]], a\n"
      "s = np.load('{0}/s.npy')\n"
      "assert s.shape == () and s.dtype == np.float32\n",
      dir);
  CHECK(std::system(fmt::format("/usr/bin/python3 -c \"{}\"", script).c_str()) == 0);
  std::system(fmt::format("rm -rf '{}'", dir).c_str());
}
