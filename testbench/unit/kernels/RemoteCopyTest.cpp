// The DSL's remote copies and semaphores in interpret mode on several devices
// (dsl::interpretDevices): device ids, copies into another device's buffers
// with both semaphores counted, remote and local signals, the deterministic
// interleaving, the deadlock report, misuse errors, and the IR they trace to.
#include <catch2/catch.hpp>

#include "kernels/dsl/Interpret.h"
#include "kernels/dsl/PallasCall.h"
#include "kernels/llo/Printer.h"

using namespace tpusim;
using namespace tpusim::kernels;
using namespace tpusim::kernels::dsl;
using Catch::Contains;

namespace {

BlockSpec whole(std::vector<int64_t> shape) {
  return BlockSpec(std::move(shape), [](const GridIndex&) { return std::vector<Scalar>{0, 0}; });
}

Scalar rightOf(Scalar d) { return select(d == num_devices() - 1, 0, d + 1); }

std::vector<std::vector<HostArray>> perDevice(int n, int64_t rows, int64_t cols) {
  std::vector<std::vector<HostArray>> in;
  for (int d = 0; d < n; ++d) {
    std::vector<float> v(size_t(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(d * 1000 + int(i));
    in.push_back({HostArray::fromFloats({rows, cols}, F32, v)});
  }
  return in;
}

// Every device sends its x to the next device's scratch and stores what it
// received, plus its device id.
std::unique_ptr<llo::Kernel> shiftKernel() {
  CallConfig c;
  c.name = "shift";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({8, 128})};
  c.out_specs = {whole({8, 128})};
  c.scratch = {VMEM({8, 128}, F32), SemaphoreType::DMA({1}), SemaphoreType::DMA({1})};
  return pallas_call(
             [](Ref x, Ref o, Ref buf, Ref send, Ref recv) {
               RemoteCopy copy =
                   make_async_remote_copy(x, buf, send.at(0), recv.at(0), rightOf(device_id()));
               copy.start();
               copy.wait_send();
               copy.wait_recv();
               o.store(buf.load() + splat(device_id(), 8, 128).astype(F32));
             },
             c)
      .trace({{{8, 128}, F32, "x"}});
}

}  // namespace

TEST_CASE("a remote copy lands in the next device's buffer and counts on both semaphores") {
  auto k = shiftKernel();
  for (int n : {2, 3, 8}) {
    auto in = perDevice(n, 8, 128);
    std::vector<InterpretResult> r = interpretDevices(*k, in);
    REQUIRE(int(r.size()) == n);
    for (int d = 0; d < n; ++d) {
      int from = (d + n - 1) % n;
      for (int64_t i = 0; i < 8 * 128; ++i)
        REQUIRE(r[size_t(d)].outputs[0].floatAt(i) == float(from * 1000 + i + d));
    }
  }
  // The IR names the device, both semaphores, and lowers waits to dma_wait.
  std::string ir = llo::printKernel(*k);
  CHECK_THAT(ir, Contains("device_id") && Contains("num_devices") && Contains("remote_dma_start") &&
                     Contains("send=") && Contains("recv=") && Contains("dma_wait"));
}

TEST_CASE("semaphore_signal to another device and semaphore_wait for a count: a barrier") {
  // Every device signals every other one, waits for n - 1 signals, then reads
  // a value the previous device wrote into its scratch before the barrier.
  CallConfig c;
  c.name = "barrier";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({8, 128})};
  c.out_specs = {whole({8, 128})};
  c.scratch = {VMEM({8, 128}, F32), SemaphoreType::DMA({2}), SemaphoreType::BARRIER(),
               SemaphoreType::REGULAR({1})};
  const int n = 4;
  auto k = pallas_call(
               [&](Ref x, Ref o, Ref buf, Ref sems, Ref barrier, Ref local) {
                 Scalar d = device_id();
                 make_async_remote_copy(x, buf, sems.at(0), sems.at(1), rightOf(d)).start();
                 for (int p = 0; p < n; ++p)
                   when(d != p, [&] { semaphore_signal(barrier.at(0), 1, Scalar(p)); });
                 semaphore_wait(barrier.at(0), n - 1);
                 semaphore_signal(local.at(0), 3);  // a local signal
                 semaphore_wait(local.at(0), 3);
                 make_async_remote_copy(x, buf, sems.at(0), sems.at(1), rightOf(d)).wait_send();
                 make_async_remote_copy(x, buf, sems.at(0), sems.at(1), rightOf(d)).wait_recv();
                 o.store(buf.load());
               },
               c)
               .trace({{{8, 128}, F32, "x"}});
  auto r = interpretDevices(*k, perDevice(n, 8, 128));
  for (int d = 0; d < n; ++d)
    CHECK(r[size_t(d)].outputs[0].floatAt(5) == float(((d + n - 1) % n) * 1000 + 5));
}

TEST_CASE("a wait no device can satisfy is a deadlock naming devices, semaphores and values") {
  // Device 0 waits for a signal that nobody sends; device 1 waits for 2 but gets 1.
  CallConfig c;
  c.name = "stuck";
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {whole({8, 128})};
  c.out_specs = {whole({8, 128})};
  c.scratch = {SemaphoreType::REGULAR({2})};
  auto k = pallas_call(
               [](Ref x, Ref o, Ref sem) {
                 Scalar d = device_id();
                 when(d == 0, [&] {
                   semaphore_signal(sem.at(1), 1, Scalar(1));
                   semaphore_wait(sem.at(0));
                 });
                 when(d == 1, [&] { semaphore_wait(sem.at(1), 2); });
                 o.store(x.load());
               },
               c)
               .trace({{{8, 128}, F32, "x"}});
  auto in = perDevice(3, 8, 128);
  try {
    interpretDevices(*k, in);
    FAIL("no deadlock reported");
  } catch (const llo::InterpretError& e) {
    std::string m = e.what();
    INFO(m);
    CHECK_THAT(m, Contains("deadlock"));
    CHECK_THAT(m, Contains("device 0: waits for semaphore scratch0[0]") &&
                      Contains("to reach 1 (it holds 0)"));
    CHECK_THAT(m, Contains("device 1: waits for semaphore scratch0[1]") &&
                      Contains("to reach 2 (it holds 1)"));
    CHECK_THAT(m, Contains("device 2: finished"));
    CHECK_THAT(m, Contains("RemoteCopyTest.cpp"));  // the DSL line of each wait
  }
  // Alone, the same kernel's wait is an error at once (nothing else could signal).
  CHECK_THROWS_WITH(interpret(*k, in[0]), Contains("remote copy or signal needs several devices"));
}

TEST_CASE("interleaving is deterministic and results do not depend on the host") {
  auto k = shiftKernel();
  auto in = perDevice(5, 8, 128);
  auto a = interpretDevices(*k, in), b = interpretDevices(*k, in);
  for (size_t d = 0; d < a.size(); ++d) CHECK(a[d].outputs[0].words == b[d].outputs[0].words);
}

TEST_CASE("remote copy misuse: to itself, to a missing device, alone, widening, bad semaphores") {
  auto one = [](std::function<Scalar()> target) {
    CallConfig c;
    c.name = "bad";
    c.out_shapes = {{{8, 128}, F32, "out"}};
    c.grid = {1};
    c.in_specs = {whole({8, 128})};
    c.out_specs = {whole({8, 128})};
    c.scratch = {VMEM({8, 128}, F32), SemaphoreType::DMA({2})};
    return pallas_call(
               [=](Ref x, Ref o, Ref buf, Ref sems) {
                 RemoteCopy cp = make_async_remote_copy(x, buf, sems.at(0), sems.at(1), target());
                 cp.start();
                 o.store(x.load());
               },
               c)
        .trace({{{8, 128}, F32, "x"}});
  };
  auto in = perDevice(2, 8, 128);
  CHECK_THROWS_WITH(interpretDevices(*one([] { return device_id(); }), in),
                    Contains("device 0: ") && Contains("targets itself"));
  CHECK_THROWS_WITH(interpretDevices(*one([] { return Scalar(7); }), in),
                    Contains("device 7 does not exist (devices 0..1)"));
  CHECK_THROWS_WITH(interpret(*one([] { return Scalar(1); }), in[0]),
                    Contains("needs several devices"));
  // bf16 from HBM to VMEM would need the widening DMA, which the ICI DMA has not.
  CallConfig c;
  c.out_shapes = {{{8, 128}, F32, "out"}};
  c.grid = {1};
  c.in_specs = {BlockSpec::in(Space::ANY)};
  c.out_specs = {whole({8, 128})};
  c.scratch = {VMEM({8, 128}, BF16), SemaphoreType::DMA({2})};
  auto widen = pallas_call(
      [](Ref x, Ref o, Ref buf, Ref sems) {
        make_async_remote_copy(x, buf, sems.at(0), sems.at(1), Scalar(1)).start();
        o.store(buf.load().astype(F32));
      },
      c);
  CHECK_THROWS_WITH(widen.trace({{{8, 128}, BF16, "x"}}), Contains("widening DMA"));
  auto badSem = pallas_call(
      [](Ref x, Ref o, Ref sems) {
        semaphore_wait(sems, 1);
        o.store(x.load());
      },
      {{{8, 128}, F32}}, {1}, {whole({8, 128})}, {whole({8, 128})}, {SemaphoreType::DMA({2})});
  CHECK_THROWS_WITH(badSem.trace({{{8, 128}, F32}}),
                    Contains("semaphore_wait needs one semaphore"));
  auto bigInc = pallas_call(
      [](Ref x, Ref o, Ref sems) {
        semaphore_signal(sems.at(0), 70000);
        o.store(x.load());
      },
      {{{8, 128}, F32}}, {1}, {whole({8, 128})}, {whole({8, 128})}, {SemaphoreType::DMA({2})});
  CHECK_THROWS_WITH(bigInc.trace({{{8, 128}, F32}}), Contains("0 .. 65535"));
}
