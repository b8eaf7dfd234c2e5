#include "compiler/lower/buffers/BufferAssignment.h"
#include "compiler/lower/buffers/LoweringOrder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/buffers/InputOutputAlias.h"
#include "compiler/lower/buffers/ShapeBytes.h"

namespace tpusim::lower {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

int64_t alignUp(int64_t x) {
  if (x > std::numeric_limits<int64_t>::max() - kHbmAlignment) return x;
  return (x + kHbmAlignment - 1) / kHbmAlignment * kHbmAlignment;
}

// The array leaves of a shape in depth-first order, with their tuple indices.
void leaves(const Shape& s, std::vector<int64_t>& index,
            std::vector<std::pair<std::vector<int64_t>, Shape>>& out) {
  if (s.isTuple()) {
    for (size_t i = 0; i < s.tupleShapes.size(); ++i) {
      index.push_back(static_cast<int64_t>(i));
      leaves(s.tupleShapes[i], index, out);
      index.pop_back();
    }
    return;
  }
  out.emplace_back(index, s);
}

int64_t leafCount(const Shape& s) {
  if (!s.isTuple()) return 1;
  int64_t n = 0;
  for (const Shape& e : s.tupleShapes) n += leafCount(e);
  return n;
}

// Best-fit allocation in one heap with free-range merging.
class Heap {
 public:
  int64_t allocate(int64_t size) {
    if (size == 0) return 0;
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    if (best != free_.end()) {
      int64_t offset = best->first, rest = best->second - size;
      free_.erase(best);
      if (rest > 0) free_[offset + size] = rest;
      return offset;
    }
    // Grow the heap, starting inside a free range that ends at the top.
    int64_t offset = top_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == top_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    top_ = offset + size;
    return offset;
  }
  void release(int64_t offset, int64_t size) {
    if (size == 0) return;
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + size) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free_[offset] = size;
  }
  int64_t top() const { return top_; }

 private:
  std::map<int64_t, int64_t> free_;  // offset -> size
  int64_t top_ = 0;
};

bool isDefaultOrder(const Shape& s) {
  std::vector<int64_t> order = s.minorToMajorOrDefault();
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int64_t>(order.size() - 1 - i)) return false;
  return true;
}

bool callsComputations(const HloInstruction& inst) {
  return inst.opcode() == HloOpcode::While || inst.opcode() == HloOpcode::Conditional ||
         inst.opcode() == HloOpcode::Call || inst.opcode() == HloOpcode::AsyncStart;
}

struct Result {
  std::vector<HbmBuffer> buffers;
  std::vector<const HloInstruction*> schedule;
  int64_t peak = 0, peakStep = 0, peakLive = 0;
};

// The buffer that holds buffer `id`'s bytes (itself, or the one an in-place
// update shares).
int64_t storageOf(const std::vector<HbmBuffer>& buffers, int64_t id) {
  while (buffers[static_cast<size_t>(id)].sharesBufferOf >= 0)
    id = buffers[static_cast<size_t>(id)].sharesBufferOf;
  return id;
}

// The in-place updates (BufferAssignment.h) of the entry computation, after
// the first pass gave every buffer its last reader (lastUseStep, not yet
// extended for program-long values).
void updateInPlace(const HloComputation& comp, const std::vector<HloInstruction*>& order,
                   std::unordered_map<const HloInstruction*, std::vector<int64_t>>& value,
                   std::vector<HbmBuffer>& buffers) {
  std::vector<InputOutputAlias> aliases;
  if (comp.parent()) {
    try {
      aliases = inputOutputAliases(*comp.parent());
    } catch (const std::invalid_argument&) {
      // A malformed alias list only costs the in-place updates of parameters.
    }
  }
  std::vector<std::pair<std::vector<int64_t>, Shape>> rootLeaves;
  std::vector<int64_t> index;
  if (comp.root()) leaves(comp.root()->shape(), index, rootLeaves);
  const std::vector<int64_t>* rootIds =
      comp.root() && value.count(comp.root()) ? &value[comp.root()] : nullptr;
  auto returned = [&](int64_t id) {
    if (rootIds)
      for (int64_t r : *rootIds)
        if (r >= 0 && storageOf(buffers, r) == id) return true;
    return false;
  };
  for (size_t s = 0; s < order.size(); ++s) {
    const HloInstruction* inst = order[s];
    if (inst->opcode() != HloOpcode::DynamicUpdateSlice || !value.count(inst->operand(0))) continue;
    const std::vector<int64_t>& from = value[inst->operand(0)];
    const std::vector<int64_t>& to = value[inst];
    if (from.size() != 1 || to.size() != 1 || from[0] < 0 || to[0] < 0) continue;
    const int64_t b = storageOf(buffers, from[0]), d = to[0];
    HbmBuffer& operand = buffers[static_cast<size_t>(b)];
    HbmBuffer& result = buffers[static_cast<size_t>(d)];
    if (operand.lastUseStep != static_cast<int64_t>(s) ||
        operand.allocatedBytes != result.allocatedBytes)
      continue;  // the operand's value is read after the update
    bool inPlace = false;
    if (operand.kind == HbmBuffer::Kind::Temporary) {
      inPlace = !returned(b);  // an output's value must survive
    } else if (operand.kind == HbmBuffer::Kind::Parameter && operand.tupleIndex.empty()) {
      // Donated to the output this update becomes?
      const auto params = comp.parameters();
      int64_t number = -1;
      for (size_t n = 0; n < params.size(); ++n)
        if (params[n] == operand.instruction) number = static_cast<int64_t>(n);
      for (size_t o = 0; rootIds && o < rootIds->size() && o < rootLeaves.size(); ++o)
        if ((*rootIds)[o] == d && donatedParameter(aliases, rootLeaves[o].first) == number)
          inPlace = number >= 0;
    }
    if (!inPlace) continue;
    result.sharesBufferOf = b;
    operand.lastUseStep = std::max(operand.lastUseStep, result.lastUseStep);
  }
}

// Assigns one computation. For the entry, parameters and constants get
// program-long buffers; for a called computation (`nested`), parameters alias
// the caller's buffers and take nothing here.
Result assign(const HloComputation& comp, bool nested, int depth, const target::ChipConfig* chip);

int64_t nestedPeak(const HloInstruction& inst, int depth, const target::ChipConfig* chip) {
  int64_t peak = 0;
  if (depth > 32) return 0;  // recursion through calls is not valid HLO; stop instead of looping
  for (const HloComputation* c : inst.calledComputations())
    if (c) peak = std::max(peak, assign(*c, true, depth + 1, chip).peak);
  return peak;
}

Result assign(const HloComputation& comp, bool nested, int depth, const target::ChipConfig* chip) {
  Result r;
  std::vector<HloInstruction*> order = loweringOrder(comp, chip);
  for (const HloInstruction* i : order) r.schedule.push_back(i);
  const int64_t last = std::max<int64_t>(0, static_cast<int64_t>(order.size()) - 1);

  std::unordered_map<const HloInstruction*, std::vector<int64_t>>
      value;  // leaf -> buffer id (-1 none)
  auto newBuffers = [&](const HloInstruction* inst, int64_t step, HbmBuffer::Kind kind) {
    std::vector<std::pair<std::vector<int64_t>, Shape>> ls;
    std::vector<int64_t> idx;
    leaves(inst->shape(), idx, ls);
    std::vector<int64_t> ids;
    for (auto& [index, shape] : ls) {
      if (!shape.isArray()) {
        ids.push_back(-1);
        continue;
      }
      HbmBuffer b;
      b.id = static_cast<int64_t>(r.buffers.size());
      b.instruction = inst;
      b.tupleIndex = index;
      b.shape = shape;
      b.bytes = shapeBytes(shape);
      b.allocatedBytes = alignUp(b.bytes);
      b.kind = kind;
      b.defineStep = step;
      b.lastUseStep = step;
      ids.push_back(b.id);
      r.buffers.push_back(std::move(b));
    }
    return ids;
  };

  for (size_t s = 0; s < order.size(); ++s) {
    const HloInstruction* inst = order[s];
    const int64_t step = static_cast<int64_t>(s);
    // Uses first: every buffer an operand reaches is read at this step.
    for (const HloInstruction* op : inst->operands()) {
      auto it = value.find(op);
      if (it == value.end()) continue;
      for (int64_t id : it->second)
        if (id >= 0) r.buffers[static_cast<size_t>(id)].lastUseStep = step;
    }
    HloOpcode opc = inst->opcode();
    std::vector<int64_t> ids;
    if (opc == HloOpcode::Parameter) {
      if (!nested)
        ids = newBuffers(inst, 0, HbmBuffer::Kind::Parameter);
      else
        ids.assign(static_cast<size_t>(leafCount(inst->shape())), -1);
    } else if (opc == HloOpcode::Constant && !nested) {
      ids = newBuffers(inst, 0, HbmBuffer::Kind::Constant);
    } else if (opc == HloOpcode::Tuple) {
      for (const HloInstruction* op : inst->operands()) {
        auto it = value.find(op);
        if (it != value.end())
          ids.insert(ids.end(), it->second.begin(), it->second.end());
        else
          ids.insert(ids.end(), static_cast<size_t>(leafCount(op->shape())), -1);
      }
    } else if (opc == HloOpcode::GetTupleElement && inst->operandCount() == 1 &&
               inst->operand(0)->shape().isTuple() && inst->tupleIndex()) {
      const Shape& t = inst->operand(0)->shape();
      int64_t k = *inst->tupleIndex(), start = 0;
      for (int64_t e = 0; e < k && e < static_cast<int64_t>(t.tupleShapes.size()); ++e)
        start += leafCount(t.tupleShapes[static_cast<size_t>(e)]);
      auto it = value.find(inst->operand(0));
      int64_t n = leafCount(inst->shape());
      for (int64_t j = 0; j < n; ++j) {
        size_t at = static_cast<size_t>(start + j);
        ids.push_back(it != value.end() && at < it->second.size() ? it->second[at] : -1);
      }
    } else if (aliasesOperandBuffer(*inst) && value.count(inst->operand(0))) {
      ids = value[inst->operand(0)];
    } else {
      ids = newBuffers(inst, step, HbmBuffer::Kind::Temporary);
    }
    if (callsComputations(*inst)) {
      int64_t scratch = nestedPeak(*inst, depth, chip);
      if (scratch > 0) {
        HbmBuffer b;
        b.id = static_cast<int64_t>(r.buffers.size());
        b.instruction = inst;
        b.bytes = scratch;
        b.allocatedBytes = alignUp(scratch);
        b.kind = HbmBuffer::Kind::Scratch;
        b.defineStep = b.lastUseStep = step;
        r.buffers.push_back(std::move(b));
      }
    }
    value[inst] = std::move(ids);
  }

  if (!nested) updateInPlace(comp, order, value, r.buffers);

  // Program-long buffers: parameters, constants and what the root returns.
  for (HbmBuffer& b : r.buffers)
    if (b.kind == HbmBuffer::Kind::Parameter || b.kind == HbmBuffer::Kind::Constant)
      b.lastUseStep = last;
  if (comp.root()) {
    auto it = value.find(comp.root());
    if (it != value.end())
      for (int64_t id : it->second) {
        if (id < 0) continue;
        HbmBuffer& b = r.buffers[static_cast<size_t>(storageOf(r.buffers, id))];
        b.lastUseStep = last;
        if (b.kind == HbmBuffer::Kind::Temporary && !nested) b.kind = HbmBuffer::Kind::Output;
      }
  }

  // Sweep the schedule: free what died before this step, then allocate what it defines.
  std::vector<std::vector<int64_t>> defined(order.size() + 1), dying(order.size() + 1);
  for (const HbmBuffer& b : r.buffers) {
    if (b.sharesBufferOf >= 0) continue;
    defined[static_cast<size_t>(b.defineStep)].push_back(b.id);
    dying[static_cast<size_t>(b.lastUseStep)].push_back(b.id);
  }
  Heap heap;
  int64_t live = 0;
  for (size_t s = 0; s < std::max<size_t>(order.size(), 1); ++s) {
    if (s > 0)
      for (int64_t id : dying[s - 1]) {
        const HbmBuffer& b = r.buffers[static_cast<size_t>(id)];
        heap.release(b.offset, b.allocatedBytes);
        live -= b.allocatedBytes;
      }
    for (int64_t id : defined[s]) {
      HbmBuffer& b = r.buffers[static_cast<size_t>(id)];
      b.offset = heap.allocate(b.allocatedBytes);
      live += b.allocatedBytes;
    }
    if (heap.top() > r.peak) {
      r.peak = heap.top();
      r.peakStep = static_cast<int64_t>(s);
    }
    r.peakLive = std::max(r.peakLive, live);
  }
  for (HbmBuffer& b : r.buffers)
    if (b.sharesBufferOf >= 0) b.offset = r.buffers[static_cast<size_t>(b.sharesBufferOf)].offset;
  return r;
}

}  // namespace

bool aliasesOperandBuffer(const hlo::HloInstruction& inst) {
  HloOpcode op = inst.opcode();
  if (inst.operandCount() < 1) return false;
  const Shape& from = inst.operand(0)->shape();
  const Shape& to = inst.shape();
  if (op == HloOpcode::OptimizationBarrier || op == HloOpcode::AddDependency ||
      op == HloOpcode::Domain)
    return leafCount(to) == leafCount(from);
  // The done of an async permute or all-gather (CollectiveLowering.h): the
  // data is in its start's buffer.
  if (op == HloOpcode::CustomCall &&
      (inst.attrs().customCallTarget.value_or("") == "tpusim$permute-done" ||
       inst.attrs().customCallTarget.value_or("") == "tpusim$all-gather-done"))
    return from == to;
  // A reshape (or a bitcast that is one) of a dense row-major array keeps every
  // byte where it is; with another minor_to_major it would move elements.
  if (op == HloOpcode::Reshape || op == HloOpcode::Bitcast)
    return from.isArray() && to.isArray() && from.type == to.type &&
           from.elementCount() == to.elementCount() && isDefaultOrder(from) && isDefaultOrder(to);
  return false;
}

const char* bufferKindName(HbmBuffer::Kind k) {
  switch (k) {
    case HbmBuffer::Kind::Parameter:
      return "parameter";
    case HbmBuffer::Kind::Constant:
      return "constant";
    case HbmBuffer::Kind::Temporary:
      return "temporary";
    case HbmBuffer::Kind::Output:
      return "output";
    case HbmBuffer::Kind::Scratch:
      return "scratch";
  }
  return "?";
}

std::string humanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::vector<const HbmBuffer*> BufferAssignment::largest(size_t n) const {
  std::vector<const HbmBuffer*> all;
  for (const HbmBuffer& b : buffers)
    if (b.sharesBufferOf < 0) all.push_back(&b);
  std::stable_sort(all.begin(), all.end(), [](const HbmBuffer* a, const HbmBuffer* b) {
    return a->allocatedBytes > b->allocatedBytes;
  });
  if (all.size() > n) all.resize(n);
  return all;
}

namespace {

std::string valueName(const HbmBuffer& b) {
  std::string s = "%" + b.instruction->name();
  if (!b.tupleIndex.empty()) s += fmt::format("{{{}}}", fmt::join(b.tupleIndex, ","));
  return s;
}

std::string shapeText(const HbmBuffer& b) {
  return b.kind == HbmBuffer::Kind::Scratch ? "(temporaries of called computations)"
                                            : b.shape.toString();
}

}  // namespace

std::string BufferAssignment::report() const {
  int64_t counts[5] = {0, 0, 0, 0, 0};
  for (const HbmBuffer& b : buffers) ++counts[static_cast<int>(b.kind)];
  std::string out =
      fmt::format("HBM buffer assignment of module '{}' for chip '{}' (HBM {} bytes, {})\n",
                  moduleName, chipName, hbmCapacity, humanBytes(hbmCapacity));
  out += fmt::format(
      "schedule: {} instructions; {} buffers: {} parameter, {} constant, {} temporary, {} output, "
      "{} scratch\n",
      schedule.size(), buffers.size(), counts[0], counts[1], counts[2], counts[3], counts[4]);
  std::string at = peakStep < static_cast<int64_t>(schedule.size())
                       ? fmt::format(" at step {} (%{})", peakStep, schedule[peakStep]->name())
                       : "";
  out += fmt::format("peak HBM: {} bytes ({}){}; live at most {} bytes; without reuse {} bytes\n",
                     peakBytes, humanBytes(peakBytes), at, peakLiveBytes, totalBytes);
  out += fmt::format("{:>6} {:>12} {:>12}  {:<10} {:>11}  {}\n", "buffer", "offset", "bytes",
                     "kind", "live", "value");
  for (const HbmBuffer& b : buffers)
    out += fmt::format(
        "{:>6} {:>12} {:>12}  {:<10} {:>11}  {} {}{}\n", fmt::format("b{}", b.id), b.offset,
        b.sharesBufferOf >= 0 ? 0 : b.allocatedBytes, bufferKindName(b.kind),
        fmt::format("{}-{}", b.defineStep, b.lastUseStep), valueName(b), shapeText(b),
        b.sharesBufferOf >= 0 ? fmt::format(" (in place, in b{})", b.sharesBufferOf) : "");
  double share = 100.0 * static_cast<double>(peakBytes) /
                 static_cast<double>(std::max<int64_t>(hbmCapacity, 1));
  out += fmt::format("{}: {} of {} bytes of HBM ({:.2f}%)\n", fits() ? "fits" : "does not fit",
                     peakBytes, hbmCapacity, share);
  return out;
}

std::string BufferAssignment::overflowMessage(size_t listed) const {
  std::string out = fmt::format(
      "error: module '{}' needs {} bytes ({}) of HBM at its peak{}, but chip '{}' has {} bytes "
      "({}); the largest buffers:",
      moduleName, peakBytes, humanBytes(peakBytes),
      peakStep < static_cast<int64_t>(schedule.size())
          ? fmt::format(" (step {}, %{})", peakStep, schedule[peakStep]->name())
          : "",
      chipName, hbmCapacity, humanBytes(hbmCapacity));
  for (const HbmBuffer* b : largest(listed))
    out += fmt::format("\n  {} {}: {} bytes ({}), {}", valueName(*b), shapeText(*b),
                       b->allocatedBytes, humanBytes(b->allocatedBytes), bufferKindName(b->kind));
  return out;
}

namespace {

BufferAssignment assignOne(const hlo::HloComputation* comp, bool nested,
                           const std::string& moduleName, const TargetDescription& target) {
  BufferAssignment a;
  a.moduleName = moduleName;
  a.chipName = target.name;
  a.hbmCapacity = target.hbmBytes;
  if (!comp) return a;
  Result r = assign(*comp, nested, 0, &target.chip);
  a.schedule = std::move(r.schedule);
  a.buffers = std::move(r.buffers);
  a.peakBytes = r.peak;
  a.peakStep = r.peakStep;
  a.peakLiveBytes = r.peakLive;
  for (const HbmBuffer& b : a.buffers)
    if (b.sharesBufferOf < 0) a.totalBytes += b.allocatedBytes;
  return a;
}

}  // namespace

BufferAssignment assignBuffers(const hlo::HloModule& module, const TargetDescription& target) {
  return assignOne(module.entry(), false, module.name(), target);
}

BufferAssignment assignCalledComputationBuffers(const hlo::HloComputation& computation,
                                                const TargetDescription& target) {
  std::string module = computation.parent() ? computation.parent()->name() : "";
  return assignOne(&computation, true, module, target);
}

}  // namespace tpusim::lower
