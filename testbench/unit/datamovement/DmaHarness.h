// Test harness of the data-movement lowering: a module whose entry root is
// the op under test (its operands parameters or constants) is evaluated by
// the reference evaluator, lowered at chosen HBM addresses, linked into a
// program with Link.h (optionally behind other code, so bundle and SMEM
// placement are not zero), run on the simulator (functional, --strict), and
// the output's bytes are compared with the evaluator's.
#pragma once

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloModule.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Evaluator.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/dma/DataMovement.h"
#include "isa/target/ChipLoader.h"
#include "kernels/codegen/Link.h"
#include "sim/chip/Simulation.h"
#include "testbench/unit/HloTestUtil.h"

namespace dmatest {

using namespace tpusim;
using hlo::eval::Literal;

inline std::string chipsDir() { return testing::presetsDir(); }
// The code generator's and the simulator's view of a preset (cached by name).
inline const kernels::codegen::TargetInfo& codegenTarget(const std::string& preset = "v5e") {
  static std::map<std::string, kernels::codegen::TargetInfo> cache;
  auto it = cache.find(preset);
  if (it == cache.end())
    it = cache.emplace(preset, kernels::codegen::loadTargetByName(preset, chipsDir())).first;
  return it->second;
}
inline const target::ChipConfig& chip(const std::string& preset = "v5e") {
  static std::map<std::string, target::ChipConfig> cache;
  auto it = cache.find(preset);
  if (it == cache.end())
    it = cache.emplace(preset, target::loadChip(chipsDir() + "/" + preset + ".json")).first;
  return it->second;
}

inline std::unique_ptr<hlo::HloModule> parse(const std::string& text) {
  return testing::parseHlo(text);
}

inline isa::DType isaType(hlo::PrimitiveType t) {
  switch (t) {
    case hlo::PrimitiveType::F32:
      return isa::DType::F32;
    case hlo::PrimitiveType::BF16:
      return isa::DType::Bf16;
    case hlo::PrimitiveType::S32:
      return isa::DType::S32;
    case hlo::PrimitiveType::S8:
      return isa::DType::S8;
    case hlo::PrimitiveType::U8:
      return isa::DType::U8;
    case hlo::PrimitiveType::S16:
      return isa::DType::S16;
    case hlo::PrimitiveType::U16:
      return isa::DType::U16;
    case hlo::PrimitiveType::Pred:
      return isa::DType::Pred;
    default:
      FAIL("no buffer dtype for " << hlo::primitiveTypeName(t));
      return isa::DType::F32;
  }
}

struct RunOptions {
  std::string preset = "v5e";
  uint64_t seed = 1;
  uint64_t hbmBase = 1 << 20;       // first buffer's address
  uint32_t codeBefore = 0;          // empty bundles linked before the fragment
  int64_t smemBefore = 0;           // SMEM words reserved before the fragment
  bool inPlace = false;             // the result lives in operand 0's buffer
  int repeat = 1;                   // runs of the fragment (a loop around it, as inside a while)
  std::map<int64_t, Literal> args;  // parameter values (others random)
  // A kernel's prefetch region the fragment must keep free (none issued here):
  // its VMEM rows hold a pattern that must be intact after the run.
  kernels::codegen::PrefetchPlan inFlight;
};

struct RunOutcome {
  kernels::codegen::CompiledKernel fragment;
  sim::SimResult sim;
  Literal want;
  npy::Array got;
};

inline uint64_t align(uint64_t x) { return (x + 511) / 512 * 512; }

// Code after a fragment that jumps back to its first bundle until it has run
// `times` times: a counter in SMEM (the fragment may use every register).
inline void appendRepeatLoop(kernels::codegen::Module& m, uint32_t target, int times) {
  int64_t word = kernels::codegen::reserveSmem(m, 1, "repeat counter");
  isa::DataSegment seg{isa::MemorySpace::Smem, uint64_t(word) * 4, {}};
  for (int i = 0; i < 4; ++i) seg.bytes.push_back(uint8_t(uint32_t(times) >> (8 * i)));
  m.program.data.push_back(seg);
  auto op = [](isa::Bundle& b, isa::SlotKind k, int i, isa::Opcode code,
               std::array<int64_t, isa::kMaxOperands> ops) {
    b.slot(k, i).op = code;
    b.slot(k, i).operands = ops;
  };
  isa::Bundle li, ld, dec, back, nop;
  op(li, isa::SlotKind::Scalar, 0, isa::Opcode::SLi, {0, word});
  op(ld, isa::SlotKind::Scalar, 0, isa::Opcode::SLd, {1, 0, 0});
  op(dec, isa::SlotKind::Scalar, 0, isa::Opcode::SAddI, {1, 1, -1});
  op(back, isa::SlotKind::Scalar, 0, isa::Opcode::SSt, {1, 0, 0});
  op(back, isa::SlotKind::Scalar, 1, isa::Opcode::BrNz, {1, int64_t(target)});
  for (const isa::Bundle& b : {li, nop, ld, nop, nop, nop, dec, nop, back})
    m.program.code.push_back(b);
}

// Lowers and runs the entry root of `text`; REQUIREs a clean halt and a
// bit-exact output.
// Lowers `root`, runs it with `valueOf(operand)` as the operands' contents
// and compares with `want`.
inline RunOutcome runInstruction(const hlo::HloInstruction& root,
                                 const std::function<Literal(const hlo::HloInstruction*)>& valueOf,
                                 Literal want, const RunOptions& o);

inline RunOutcome runOp(const std::string& text, const RunOptions& o = {}) {
  auto module = parse(text);
  hlo::HloComputation* entry = module->entry();
  std::vector<Literal> args;
  std::vector<hlo::HloInstruction*> params = entry->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = o.args.find(int64_t(i));
    args.push_back(it != o.args.end()
                       ? it->second
                       : hlo::eval::randomLiteral(params[i]->shape(),
                                                  hlo::eval::parameterSeed(o.seed, 0, int64_t(i))));
  }
  Literal want = hlo::eval::evaluate(*module, args);
  auto valueOf = [&](const hlo::HloInstruction* operand) {
    return operand->opcode() == hlo::HloOpcode::Constant
               ? hlo::eval::fromConstant(*operand->literal(), operand->name())
               : args.at(size_t(operand->attrs().parameterNumber));
  };
  return runInstruction(*entry->root(), valueOf, std::move(want), o);
}

inline RunOutcome runInstruction(const hlo::HloInstruction& root,
                                 const std::function<Literal(const hlo::HloInstruction*)>& valueOf,
                                 Literal want, const RunOptions& o) {
  RunOutcome out;
  out.want = std::move(want);

  // HBM: every distinct operand, then the result.
  std::vector<uint64_t> addrs;
  std::vector<isa::BufferDesc> buffers;
  std::map<std::string, npy::Array> inputs;
  std::vector<isa::DataSegment> hbmData;
  uint64_t at = o.hbmBase;
  std::map<const hlo::HloInstruction*, uint64_t> placed;
  for (int64_t k = 0; k < root.operandCount(); ++k) {
    const hlo::HloInstruction* operand = root.operand(k);
    if (!placed.count(operand)) {
      Literal value = valueOf(operand);
      npy::Array a = hlo::eval::toNpy(value);
      isa::BufferDesc b;
      b.name = fmt::format("in{}", k);
      b.shape = operand->shape().dims;
      b.dtype = isaType(operand->shape().type);
      b.address = at;
      b.sizeBytes = std::max<uint64_t>(1, a.data.size());
      b.role = isa::BufferRole::Input;
      placed[operand] = at;
      if (o.inPlace && k == 0) {
        hbmData.push_back(isa::DataSegment{isa::MemorySpace::Hbm, at, a.data});
      } else {
        buffers.push_back(b);
        inputs[b.name] = a;
      }
      at = align(at + b.sizeBytes);
    }
    addrs.push_back(placed[operand]);
  }
  uint64_t result = o.inPlace ? addrs.at(0) : at;
  isa::BufferDesc rb;
  rb.name = "out";
  rb.shape = root.shape().dims;
  rb.dtype = isaType(root.shape().type);
  rb.address = result;
  rb.sizeBytes = std::max<uint64_t>(1, hlo::eval::toNpy(out.want).data.size());
  rb.role = isa::BufferRole::Output;
  buffers.push_back(rb);
  // The in-flight region's VMEM rows: a pattern loaded before the run, read
  // back after it as the output "guard" (core 0's VMEM).
  const uint64_t guardBytes = uint64_t(o.inFlight.rows) * isa::kVmemRowBytes;
  isa::DataSegment guard{
      isa::MemorySpace::Vmem,
      o.inFlight.fromTop ? uint64_t(codegenTarget(o.preset).vmemBytes) - guardBytes : 0,
      {}};
  for (uint64_t i = 0; i < guardBytes; ++i) guard.bytes.push_back(uint8_t(i * 7 + 1));
  if (guardBytes > 0) {
    isa::BufferDesc gb;
    gb.name = "guard";
    gb.shape = {int64_t(guardBytes)};
    gb.dtype = isa::DType::U8;
    gb.space = isa::MemorySpace::Vmem;
    gb.address = guard.address;
    gb.sizeBytes = guardBytes;
    gb.role = isa::BufferRole::Output;
    buffers.push_back(gb);
  }

  kernels::codegen::Module m;
  for (uint32_t i = 0; i < o.codeBefore; ++i) m.program.code.push_back(isa::Bundle{});
  if (o.smemBefore > 0) kernels::codegen::reserveSmem(m, o.smemBefore, "test");
  lower::FragmentPlacement placement;
  placement.firstBundle = m.nextBundle();
  placement.smemBase = m.nextSmemWord();
  placement.standalone = false;
  placement.inFlight = o.inFlight;
  out.fragment = lower::lowerDataMovement(root, addrs, result, codegenTarget(o.preset), placement);
  kernels::codegen::appendKernel(m, out.fragment);
  if (o.repeat > 1) appendRepeatLoop(m, placement.firstBundle, o.repeat);
  isa::Program program = kernels::codegen::finishModule(m, buffers);
  for (auto& seg : hbmData) program.data.push_back(seg);
  if (guardBytes > 0) program.data.push_back(guard);

  sim::SimOptions so;
  so.functional = true;
  so.strict = o.repeat == 1;  // the hand-written loop below is not scheduled
  so.dmaFactory = sim::makeChipDma;
  sim::Simulation s(chip(o.preset), program, so);
  for (auto& [name, a] : inputs) s.setInput(name, a, name);
  out.sim = s.run();
  INFO(out.fragment.machineText);
  if (out.sim.fault) FAIL(out.sim.fault->message);
  REQUIRE(out.sim.halted);
  out.got = out.sim.outputs.at("out");
  npy::Array expected = hlo::eval::toNpy(out.want);
  REQUIRE(out.got.data.size() == expected.data.size());
  size_t bad = 0;
  for (size_t i = 0; i < expected.data.size(); ++i)
    if (out.got.data[i] != expected.data[i]) ++bad;
  INFO(fmt::format("{} of {} bytes differ", bad, expected.data.size()));
  CHECK(bad == 0);
  if (guardBytes > 0) {
    const npy::Array& kept = out.sim.outputs.at("guard");
    size_t changed = 0;
    for (size_t i = 0; i < guard.bytes.size(); ++i) changed += kept.data.at(i) != guard.bytes[i];
    INFO("VMEM of the prefetch region in flight, at byte " << guard.address);
    CHECK(changed == 0);
  }
  return out;
}

// Timing-only run of the entry root of `text` (no data): the cycles a
// fragment takes and what the DMA engines moved.
struct Timing {
  int64_t cycles = 0;
  int64_t bytesRead = 0, bytesWritten = 0;  // the op's own bytes (its cost entry)
  int64_t hbmRead = 0, hbmWritten = 0;      // HBM traffic, whole bursts
  double hbmPeakBytesPerCycle = 0;
  int64_t descriptors = 0;
  int64_t bundles = 0;
  // Fraction of the HBM peak the move achieved: its bytes read + written
  // per cycle (what a perfect copy would move), not the burst traffic.
  double efficiency() const {
    return double(bytesRead + bytesWritten) / double(cycles) / hbmPeakBytesPerCycle;
  }
};
inline Timing timeOp(const std::string& text) {
  auto module = parse(text);
  const hlo::HloInstruction& root = *module->entry()->root();
  std::vector<uint64_t> addrs;
  uint64_t at = 1 << 20;
  for (const hlo::HloInstruction* o : root.operands()) {
    addrs.push_back(at);
    at = align(at + uint64_t(o->shape().elementCount()) * 4 + 512);
  }
  kernels::codegen::Module m;
  lower::FragmentPlacement placement;
  placement.standalone = false;
  auto fragment = lower::lowerDataMovement(root, addrs, at, codegenTarget(), placement);
  kernels::codegen::appendKernel(m, fragment);
  isa::Program program = kernels::codegen::finishModule(m, {});
  sim::SimOptions so;
  so.functional = false;
  so.strict = true;
  so.dmaFactory = sim::makeChipDma;
  sim::Simulation s(chip(), program, so);
  sim::SimResult r = s.run();
  if (r.fault) FAIL(r.fault->message);
  REQUIRE(r.halted);
  Timing t;
  t.cycles = r.cycles;
  t.bytesRead = int64_t(fragment.program.costs.at(0).hbmBytesRead);
  t.bytesWritten = int64_t(fragment.program.costs.at(0).hbmBytesWritten);
  t.hbmRead = r.dma.hbmBytesRead;
  t.hbmWritten = r.dma.hbmBytesWritten;
  t.hbmPeakBytesPerCycle = r.dma.hbmPeakBytesPerCycle;
  for (const auto& q : r.dma.queues) t.descriptors += q.descriptors;
  t.bundles = int64_t(fragment.program.code.size());
  return t;
}

// The CannotLower message for the entry root of `text` ("" if it lowers).
inline std::string refusal(const std::string& text) {
  auto module = parse(text);
  const hlo::HloInstruction& root = *module->entry()->root();
  std::vector<uint64_t> addrs(size_t(root.operandCount()), 0);
  for (size_t i = 0; i < addrs.size(); ++i) addrs[i] = 4096 * (i + 1);
  try {
    lower::lowerDataMovement(root, addrs, 1 << 20, codegenTarget(), lower::FragmentPlacement{});
  } catch (const lower::CannotLower& e) {
    return e.what();
  }
  return "";
}

}  // namespace dmatest
