// The RTL MXU behind makeMxu(): registered sizes work, a size that was not
// built is a clear error naming the CMake option, and TPUSIM_TRACE_RTL writes
// a waveform.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "isa/target/MxuConfig.h"
#include "sim/mxu/MxuRegistry.h"

using namespace tpusim;
using namespace tpusim::sim;

TEST_CASE("every built RTL size is registered and runs a command") {
  std::vector<int> sizes = registeredRtlMxuSizes();
  REQUIRE_FALSE(sizes.empty());
  for (int n : sizes) {
    target::MxuConfig c;
    c.size = n;
    std::string error;
    auto mxu = makeMxu(c, MxuModelKind::Rtl, true, &error);
    REQUIRE(mxu);
    REQUIRE(error.empty());
    REQUIRE(mxu->size() == n);
    REQUIRE(std::string(mxu->kindName()) == "rtl");
    REQUIRE(mxu->matmulReadyAt() == 0);
    VregData a{}, out{}, hi{};
    REQUIRE(mxu->matmul(0, {&a, &a}, MxuDtype::S8, 0, false).ok());
    REQUIRE(mxu->popReadyAt(0) == uint64_t(7 + 2 * n));
    REQUIRE(mxu->pop(uint64_t(7 + 2 * n), 0, {&out, &hi}).ok());
  }
}

TEST_CASE("the RTL serves every result slot the ISA encodes") {
  for (int n : registeredRtlMxuSizes()) {
    target::MxuConfig c;
    c.size = n;
    c.acc_slots = isa::kMaxAccSlots;
    std::string error;
    auto mxu = makeMxu(c, MxuModelKind::Rtl, true, &error);
    INFO(error);
    REQUIRE(mxu);
    REQUIRE(mxu->slots() == isa::kMaxAccSlots);
    VregData a{}, out{}, hi{};
    const int last = isa::kMaxAccSlots - 1;
    REQUIRE(mxu->matmul(0, {&a, &a}, MxuDtype::S8, last, false).ok());
    REQUIRE(mxu->popReadyAt(0) == 0);  // another slot: nothing in flight
    REQUIRE(mxu->popReadyAt(last) == uint64_t(7 + 2 * n));
    REQUIRE(mxu->pop(uint64_t(7 + 2 * n), last, {&out, &hi}).ok());
  }
}

TEST_CASE("asking for an RTL size that was not built names the fix") {
  target::MxuConfig c;
  c.size = 64;
  std::vector<int> sizes = registeredRtlMxuSizes();
  if (std::find(sizes.begin(), sizes.end(), 64) != sizes.end()) c.size = 256;
  std::string error;
  REQUIRE_FALSE(makeMxu(c, MxuModelKind::Rtl, true, &error));
  INFO(error);
  REQUIRE(error.find("no RTL MXU of size " + std::to_string(c.size)) != std::string::npos);
  REQUIRE(error.find("-DTPUSIM_RTL_SIZES=") != std::string::npos);
  MxuModelKind kind;
  REQUIRE(parseMxuModelKind("rtl", &kind));
  REQUIRE(kind == MxuModelKind::Rtl);
  REQUIRE_FALSE(parseMxuModelKind("verilog", &kind));
}

#if TPUSIM_RTL_TRACE
TEST_CASE("TPUSIM_TRACE_RTL writes a VCD waveform") {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/tpusim_mxu_trace_test.vcd";
  std::remove(path.c_str());
  setenv("TPUSIM_TRACE_RTL", path.c_str(), 1);
  {
    target::MxuConfig c;
    c.size = registeredRtlMxuSizes().front();
    std::string error;
    auto mxu = makeMxu(c, MxuModelKind::Rtl, false, &error);
    REQUIRE(mxu);
    REQUIRE(mxu->latch(mxu->latchReadyAt()).ok());
    mxu->finish(20);
  }
  unsetenv("TPUSIM_TRACE_RTL");
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  REQUIRE(text.str().find("$enddefinitions") != std::string::npos);
  REQUIRE(text.str().find("w_ready") != std::string::npos);
  REQUIRE(text.str().find("#39") != std::string::npos);  // cycles 0..19, two time steps each
  std::remove(path.c_str());
}
#endif
