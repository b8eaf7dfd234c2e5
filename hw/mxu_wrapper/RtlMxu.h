// RtlMxu: the Verilated hw/mxu RTL behind the MxuUnit interface, so any
// program can run with RTL MXUs (`tpusim --mxu-model rtl`) and cosimulation
// can compare it with MxuModel through the same calls.
//
// The RTL decides all timing: a *ReadyAt() query presents the command on its
// port and clocks the RTL (with nothing else presented) until the port's ready
// signal rises; a command is presented in its cycle and must be accepted then.
// Every result-buffer write the RTL makes is reported to the result observer.
// Faults (staging overflow, dtype mismatch) are checked by MxuStagingRules
// before a command reaches the RTL, as in MxuModel.
//
// TPUSIM_TRACE_RTL=file.vcd writes a VCD waveform of the first RTL MXU
// created in the process; later ones write file.vcd.1, file.vcd.2, ...
#pragma once

#include <fmt/format.h>
#include <verilated.h>
#if TPUSIM_RTL_TRACE
#include <verilated_vcd_c.h>
#endif

#include <cstdlib>
#include <memory>
#include <string>

#include "isa/Isa.h"
#include "sim/mxu/MxuStagingRules.h"
#include "sim/mxu/MxuUnit.h"

namespace tpusim::hw {

using sim::MxuDtype;
using sim::MxuPanic;
using sim::MxuResultRow;
using sim::MxuStatus;
using sim::VregIn;
using sim::VregOut;

// Returns the waveform file for the next RTL MXU ("" when tracing is off).
std::string nextRtlTraceFile();

// SLOTS: the result-buffer slots the model was Verilated with; a preset may
// use fewer (slots), which the RTL never sees addressed.
template <class V, int N, int SLOTS>
class RtlMxu final : public sim::MxuUnit {
  static_assert(SLOTS >= 2 && SLOTS <= isa::kMaxAccSlots, "RTL result-buffer size");

 public:
  // packedInt8: the preset's MXU has the packed int8 mode (the RTL always has
  // it; the shared rules fault on it where the preset has not).
  RtlMxu(int slots, bool functional, bool packedInt8 = false)
      : slots_(slots), functional_(functional), rules_(N, packedInt8) {
    if (slots < 1 || slots > SLOTS)
      throw MxuPanic(
          fmt::format("RtlMxu: {} result slots, but the RTL model was built with {} (1..{}; "
                      "TPUSIM_RTL_SLOTS)",
                      slots, SLOTS, SLOTS));
    context_ = std::make_unique<VerilatedContext>();
    const std::string trace = nextRtlTraceFile();
#if TPUSIM_RTL_TRACE
    if (!trace.empty()) context_->traceEverOn(true);
    top_ = std::make_unique<V>(context_.get(), "mxu");
    if (!trace.empty()) {
      vcd_ = std::make_unique<VerilatedVcdC>();
      top_->trace(vcd_.get(), 99);
    }
#else
    if (!trace.empty())
      throw MxuPanic(
          "TPUSIM_TRACE_RTL is set, but the RTL MXU models were built without "
          "waveform support: reconfigure with -DTPUSIM_RTL_TRACE=ON");
    top_ = std::make_unique<V>(context_.get(), "mxu");
#endif
    clearInputs();
    top_->rst = 1;
    for (int i = 0; i < 2; ++i) edge(false);
    top_->rst = 0;
    top_->eval();
    cycle_ = 0;
#if TPUSIM_RTL_TRACE
    if (vcd_) vcd_->open(trace.c_str());  // after reset: time 2t is cycle t
#endif
  }
  ~RtlMxu() override {
#if TPUSIM_RTL_TRACE
    if (vcd_) vcd_->close();
#endif
    top_->final();
  }

  int size() const override { return N; }
  int slots() const override { return slots_; }
  bool functional() const override { return functional_; }
  const char* kindName() const override { return "rtl"; }

  uint64_t weightPushReadyAt(bool transposed) override {
    return waitReady(kW, [&] { presentWeight(transposed ? kOpPushT : kOpPush, {}); });
  }
  uint64_t latchReadyAt() override {
    return waitReady(kW | kL, [&] { presentWeight(kOpLatch, {}); });
  }
  uint64_t matmulReadyAt() override {
    return waitReady(kL, [&] { presentLhs({}, MxuDtype::Bf16, false, 0); });
  }
  uint64_t popReadyAt(int slot) override {
    checkSlot(slot);
    // An mm into this slot accepted in the current cycle is not in the RTL's
    // in-flight count until the clock edge: answer from the next cycle on, so
    // the answer holds for any later cycle (as MxuModel's does).
    if (mmSlot_ == slot) edge(true);
    return waitReady(kP, [&] { presentPop(slot); });
  }

  MxuStatus weightPush(uint64_t cycle, VregIn rows, bool transposed, MxuDtype dtype) override {
    if (MxuStatus f = rules_.checkPush(dtype); !f.ok()) return f;
    issue(cycle, kW, transposed ? "wpush.t" : "wpush",
          [&] { presentWeight(transposed ? kOpPushT : kOpPush, rows); });
    rules_.onPush(dtype);
    ++stats_.pushes;
    return {};
  }
  MxuStatus latch(uint64_t cycle) override {
    issue(cycle, kW | kL, "latch", [&] { presentWeight(kOpLatch, {}); });
    rules_.onLatch();
    ++stats_.latches;
    return {};
  }
  MxuStatus matmul(uint64_t cycle, VregIn lhs, MxuDtype dtype, int slot, bool accumulate) override {
    checkSlot(slot);
    if (MxuStatus f = rules_.checkMatmul(dtype); !f.ok()) return f;
    issue(cycle, kL, accumulate ? "mma" : "mm", [&] { presentLhs(lhs, dtype, accumulate, slot); });
    mmSlot_ = slot;
    ++stats_.matmuls;
    stats_.rowsStreamed += 8;
    stats_.busyCycles += 8;
    return {};
  }
  MxuStatus pop(uint64_t cycle, int slot, VregOut out) override {
    checkSlot(slot);
    issue(cycle, kP, "pop", [&] { presentPop(slot); });
    if (functional_) {
      if (!out.lo || (N > 128 && !out.hi))
        throw MxuPanic(fmt::format("RTL MXU pop: missing destination vreg for N = {}", N));
      out.lo->fill(0);
      if (out.hi) out.hi->fill(0);
      for (int j = 0; j < 8; ++j)
        for (int c = 0; c < N; ++c) {
          uint32_t v = top_->p_data[j * N + c];
          if (c < 128)
            sim::at(*out.lo, j, c) = v;
          else
            sim::at(*out.hi, j, c - 128) = v;
        }
    }
    ++stats_.pops;
    return {};
  }

  void finish(uint64_t cycle) override {
    while (cycle_ < cycle) edge(true);
  }

  const sim::MxuStats& stats() const override { return stats_; }
  void setResultObserver(sim::MxuResultObserver observer) override {
    observer_ = std::move(observer);
  }

 private:
  enum Port : unsigned { kW = 1, kL = 2, kP = 4 };
  static constexpr int kOpPush = 0, kOpPushT = 1, kOpLatch = 2;

  void checkSlot(int slot) const {
    if (slot < 0 || slot >= slots_) throw MxuPanic(fmt::format("RTL MXU: no slot a{}", slot));
  }

  // 16-bit element (sublane s, element i) of a port's data word array.
  template <class Wide>
  static void put16(Wide& data, int s, int i, uint32_t v) {
    const int idx = s * N + i;
    uint32_t& word = data[idx / 2];
    const int shift = (idx & 1) * 16;
    word = (word & ~(0xFFFFu << shift)) | ((v & 0xFFFFu) << shift);
  }
  static uint32_t element(VregIn v, int s, int i) {
    return i < 128 ? sim::at(*v.lo, s, i) : sim::at(*v.hi, s, i - 128);
  }
  template <class Wide>
  void loadRows(Wide& data, VregIn v) {
    if (!functional_ || !v.lo) return;  // timing-only: the data does not matter
    if (N > 128 && !v.hi) throw MxuPanic(fmt::format("RTL MXU: missing second vreg for N = {}", N));
    for (int s = 0; s < 8; ++s)
      for (int i = 0; i < N; ++i) put16(data, s, i, element(v, s, i));
  }

  void presentWeight(int op, VregIn rows) {
    top_->w_valid = 1;
    top_->w_op = op;
    loadRows(top_->w_data, rows);
  }
  void presentLhs(VregIn lhs, MxuDtype dtype, bool acc, int slot) {
    top_->l_valid = 1;
    top_->l_bf16 = dtype == MxuDtype::Bf16;
    top_->l_s8x2 = dtype == MxuDtype::S8x2;
    top_->l_acc = acc;
    top_->l_slot = slot;
    loadRows(top_->l_data, lhs);
  }
  void presentPop(int slot) {
    top_->p_valid = 1;
    top_->p_slot = slot;
  }
  void withdraw(unsigned ports) {
    if (ports & kW) top_->w_valid = 0;
    if (ports & kL) top_->l_valid = 0;
    if (ports & kP) top_->p_valid = 0;
  }
  bool ready(unsigned ports) const {
    if (ports & kW) return top_->w_ready;  // a latch reports on the weight port
    if (ports & kL) return top_->l_ready;
    return top_->p_ready;
  }
  void clearInputs() {
    top_->w_valid = 0;
    top_->l_valid = 0;
    top_->p_valid = 0;
    used_ = 0;
    mmSlot_ = -1;
  }

  // Ends the current cycle: observe the result write, clock, clear the inputs.
  void edge(bool observe) {
    top_->clk = 0;
    top_->eval();
    if (observe && top_->r_valid && observer_) {
      MxuResultRow row{cycle_ + 1, int(top_->r_slot), int(top_->r_row), {}};
      if (functional_) {
        row.values.resize(N);
        for (int c = 0; c < N; ++c) row.values[c] = top_->r_data[c];
      }
      observer_(row);
    }
#if TPUSIM_RTL_TRACE
    if (vcd_) vcd_->dump(2 * cycle_);
#endif
    top_->clk = 1;
    top_->eval();
#if TPUSIM_RTL_TRACE
    if (vcd_) vcd_->dump(2 * cycle_ + 1);
#endif
    clearInputs();
    top_->eval();
    ++cycle_;
  }

  template <class Present>
  uint64_t waitReady(unsigned ports, Present present) {
    // The latch uses both ports; a port already used this cycle is free next cycle.
    if (used_ & ports) edge(true);
    for (int i = 0; i < 8 * N + 64; ++i) {
      present();
      top_->eval();
      const bool ok = ready(ports);
      withdraw(ports);
      top_->eval();
      if (ok) return cycle_;
      edge(true);
    }
    throw MxuPanic(
        fmt::format("RTL MXU {}x{}: a port never became ready (cycle {})", N, N, cycle_));
  }

  template <class Present>
  void issue(uint64_t cycle, unsigned ports, const char* what, Present present) {
    if (cycle < cycle_)
      throw MxuPanic(fmt::format("RTL MXU {} issued at cycle {}, but the RTL is at cycle {}", what,
                                 cycle, cycle_));
    while (cycle_ < cycle) edge(true);
    if (used_ & ports)
      throw MxuPanic(fmt::format("RTL MXU {} at cycle {}: its port is already used", what, cycle));
    present();
    top_->eval();
    if (!ready(ports))
      throw MxuPanic(
          fmt::format("RTL MXU {} issued at cycle {} but the RTL is not ready", what, cycle));
    used_ |= ports;
  }

  int slots_;
  bool functional_;
  sim::MxuStagingRules rules_;
  sim::MxuStats stats_;
  sim::MxuResultObserver observer_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<V> top_;
#if TPUSIM_RTL_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
#endif
  uint64_t cycle_ = 0;
  unsigned used_ = 0;  // ports that took a command in the current cycle
  int mmSlot_ = -1;    // the slot of the mm taken in the current cycle
};

}  // namespace tpusim::hw
