#include "kernels/dsl/Interpret.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "isa/support/Numerics.h"
#include "kernels/dsl/GridRunner.h"

namespace tpusim::kernels::dsl {

using llo::Buffer;
using llo::InterpretError;
using llo::MemSpace;

int64_t HostArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostArray HostArray::fromFloats(std::vector<int64_t> shape, llo::DType dtype,
                                const std::vector<float>& values) {
  HostArray a{std::move(shape), dtype, {}};
  for (float v : values)
    a.words.push_back(dtype == llo::DType::Bf16 ? uint32_t(f32ToBf16Bits(v)) : bitsOf(v));
  return a;
}

HostArray HostArray::fromInts(std::vector<int64_t> shape, llo::DType dtype,
                              const std::vector<int32_t>& values) {
  HostArray a{std::move(shape), dtype, {}};
  for (int32_t v : values)
    a.words.push_back(dtype == llo::DType::S8 ? uint32_t(v) & 0xFF : uint32_t(v));
  return a;
}

float HostArray::floatAt(int64_t i) const {
  return dtype == llo::DType::Bf16 ? bf16BitsToF32(uint16_t(words[i])) : floatOf(words[i]);
}
int32_t HostArray::intAt(int64_t i) const {
  return dtype == llo::DType::S8 ? int32_t(int8_t(uint8_t(words[i]))) : int32_t(words[i]);
}

namespace {

uint32_t elementMask(llo::DType d) {
  int bytes = isa::dtypeBytes(d);
  return bytes >= 4 ? 0xFFFFFFFFu : (1u << (8 * bytes)) - 1u;
}

// Iterates all index vectors of `extent` (row-major), calling fn(index).
template <typename Fn>
void forEachIndex(const std::vector<int64_t>& extent, Fn fn) {
  for (int64_t e : extent)
    if (e <= 0) return;
  std::vector<int64_t> i(extent.size(), 0);
  while (true) {
    fn(i);
    int d = int(i.size()) - 1;
    while (d >= 0 && ++i[d] == extent[d]) i[d--] = 0;
    if (d < 0) return;
  }
}

struct Pipelined {
  const llo::BlockMapping* map;
  const llo::ArrayOperand* array;
  Buffer* hbm;
  std::unique_ptr<Buffer> vmem;  // the block buffer (Vmem mappings)
  std::vector<int64_t> current;  // block index held (empty: none yet)
  bool isOutput = false;
  std::vector<int64_t> writer;  // per output element: parallel key of the last writer, -1 none
  std::vector<int64_t> writerStep;
  int64_t ownerStep = 0;  // the grid step whose output block the buffer holds
};

class GridRun : public GridRunner {
 public:
  // The elements of a strided view in its own row-major order, from its buffer.
  static std::vector<uint32_t> gatherView(const std::vector<uint32_t>& buffer,
                                          const llo::ArrayOperand& a) {
    std::vector<uint32_t> out;
    std::vector<int64_t> idx(a.shape.size(), 0);
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    out.reserve(size_t(n));
    for (int64_t e = 0; e < n; ++e) {
      int64_t at = 0;
      for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * a.strides[d];
      out.push_back(buffer.at(size_t(at)));
      for (size_t d = idx.size(); d-- > 0;) {
        if (++idx[d] < a.shape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  GridRun(const llo::Kernel& k, const std::vector<HostArray>& inputs, const InterpretOptions& o)
      : k_(k), opt_(o), interp_(llo::InterpOptions{o.mxuSize}) {
    if (inputs.size() != k.inputs.size())
      throw InterpretError(fmt::format("kernel {} takes {} inputs, {} given", k.name,
                                       k.inputs.size(), inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& a = k.inputs[i];
      // A strided view's input is its buffer (bufferShape), read through the strides.
      std::vector<int64_t> want = a.bufferShape();
      if (inputs[i].shape != want || inputs[i].dtype != a.dtype ||
          int64_t(inputs[i].words.size()) != inputs[i].size())
        throw InterpretError(fmt::format("input {} ('{}') must be {}{}", i, a.name,
                                         isa::dtypeName(a.dtype), llo::shapeStr(want)));
      auto b = Buffer::make(a.name, llo::Type::ref(MemSpace::Hbm, a.dtype, a.shape));
      b->words = a.strides.empty() ? inputs[i].words : gatherView(inputs[i].words, a);
      hbmIn_.push_back(std::move(b));
    }
    for (size_t i = 0; i < k.outputs.size(); ++i) {
      const auto& a = k.outputs[i];
      auto b = Buffer::make(a.name, llo::Type::ref(MemSpace::Hbm, a.dtype, a.shape),
                            0x7FC07FC0u & elementMask(a.dtype));
      for (auto [in, out] : k.aliases)
        if (out == int(i)) b->words = hbmIn_[in]->words;
      hbmOut_.push_back(std::move(b));
    }
    for (int i = 0; i < k.numScalarPrefetch; ++i) {
      const auto& a = k.inputs[i];
      auto b = Buffer::make(a.name, llo::Type::ref(MemSpace::Smem, a.dtype, a.shape));
      b->words = hbmIn_[i]->words;
      prefetch_.push_back(std::move(b));
    }
    auto addMapped = [&](const llo::BlockMapping& m, const llo::ArrayOperand& a, Buffer* hbm,
                         bool out) {
      Pipelined p{&m, &a, hbm, nullptr, {}, out, {}, {}, 0};
      if (m.space == MemSpace::Vmem)
        p.vmem =
            Buffer::make(a.name + ".block", llo::Type::ref(MemSpace::Vmem, a.dtype, m.blockShape));
      if (out) {
        p.writer.assign(hbm->words.size(), -1);
        p.writerStep.assign(hbm->words.size(), -1);
      }
      mapped_.push_back(std::move(p));
    };
    for (size_t i = 0; i < k.inMaps.size(); ++i) {
      size_t in = i + k.numScalarPrefetch;
      if (k.inMaps[i].space == MemSpace::Smem) {
        // A whole array in SMEM: copied once before the grid.
        auto b = Buffer::make(k.inputs[in].name, llo::Type::ref(MemSpace::Smem, k.inputs[in].dtype,
                                                                k.inputs[in].shape));
        b->words = hbmIn_[in]->words;
        smemWhole_.push_back(std::move(b));
      }
      addMapped(k.inMaps[i], k.inputs[in], hbmIn_[in].get(), false);
    }
    for (size_t i = 0; i < k.outMaps.size(); ++i)
      addMapped(k.outMaps[i], k.outputs[i], hbmOut_[i].get(), true);
    for (size_t i = 0; i < k.scratch.size(); ++i)
      scratch_.push_back(Buffer::make(fmt::format("scratch{}", i), k.scratch[i]));
  }

  void setDeviceLink(llo::DeviceLink* link) override { interp_.setDeviceLink(link); }

  std::vector<Buffer*> buffers() override {
    std::vector<Buffer*> all;
    for (auto* list : {&hbmIn_, &hbmOut_, &prefetch_, &scratch_, &smemWhole_})
      for (auto& b : *list) all.push_back(b.get());
    for (auto& p : mapped_)
      if (p.vmem) all.push_back(p.vmem.get());
    return all;
  }

  InterpretResult run() override {
    InterpretResult res;
    std::vector<std::vector<int64_t>> order = gridOrder();
    for (size_t step = 0; step < order.size(); ++step) {
      const auto& ids = order[step];
      llo::GridContext ctx{k_.grid, ids};
      std::vector<std::vector<int64_t>> blocks;
      for (auto& p : mapped_) blocks.push_back(blockIndex(p, ctx));
      // Outputs whose block index changes are written back first, then the new block starts
      // poisoned.
      for (size_t i = 0; i < mapped_.size(); ++i) {
        Pipelined& p = mapped_[i];
        if (!p.vmem) continue;
        if (p.current == blocks[i]) {
          if (p.isOutput) checkSameBlockOwner(p, ids);
          continue;
        }
        if (p.isOutput) {
          if (!p.current.empty()) writeBack(p, res);
          std::fill(p.vmem->words.begin(), p.vmem->words.end(), llo::kPoisonWord);
          p.current = blocks[i];
          p.ownerStep = int64_t(step);
        } else {
          copyIn(p, blocks[i]);
          ++res.blockCopiesIn;
        }
      }
      std::vector<llo::Arg> args;
      for (auto& b : prefetch_) args.push_back(llo::Arg::ofBuffer(b.get()));
      size_t smemIdx = 0;
      for (auto& p : mapped_) {
        if (p.vmem)
          args.push_back(llo::Arg::ofBuffer(p.vmem.get()));
        else if (p.map->space == MemSpace::Smem && !p.isOutput)
          args.push_back(llo::Arg::ofBuffer(smemWhole_[smemIdx++].get()));
        else
          args.push_back(llo::Arg::ofBuffer(p.hbm));
      }
      for (auto& s : scratch_) args.push_back(llo::Arg::ofBuffer(s.get()));
      currentStep_ = int64_t(step);
      currentIds_ = ids;
      interp_.run(*k_.body, args, ctx);
      ++res.gridSteps;
      stepIds_.push_back(ids);
    }
    for (auto& p : mapped_)
      if (p.vmem && p.isOutput && !p.current.empty()) writeBack(p, res);
    for (auto& b : hbmOut_) {
      HostArray a;
      a.shape = b->type.shape;
      a.dtype = b->type.dtype;
      a.words = b->words;
      res.outputs.push_back(std::move(a));
    }
    res.races = std::move(races_);
    return res;
  }

 private:
  const llo::Kernel& k_;
  InterpretOptions opt_;
  llo::Interpreter interp_;
  std::vector<std::unique_ptr<Buffer>> hbmIn_, hbmOut_, prefetch_, scratch_, smemWhole_;
  std::vector<Pipelined> mapped_;
  std::vector<std::string> races_;
  int64_t racesSeen_ = 0;
  int64_t currentStep_ = 0;
  std::vector<int64_t> currentIds_;
  std::vector<std::vector<int64_t>> stepIds_;

  // Pallas order (lexicographic), with each parallel axis's indices permuted.
  std::vector<std::vector<int64_t>> gridOrder() {
    std::mt19937_64 rng(opt_.seed);
    std::vector<std::vector<int64_t>> perm;
    for (size_t d = 0; d < k_.grid.size(); ++d) {
      std::vector<int64_t> p(k_.grid[d]);
      for (int64_t i = 0; i < k_.grid[d]; ++i) p[i] = i;
      if (opt_.shuffleParallel && k_.semantics[d] == llo::DimSemantics::Parallel)
        std::shuffle(p.begin(), p.end(), rng);
      perm.push_back(std::move(p));
    }
    std::vector<std::vector<int64_t>> order;
    forEachIndex(k_.grid, [&](const std::vector<int64_t>& lex) {
      std::vector<int64_t> ids(lex.size());
      for (size_t d = 0; d < lex.size(); ++d) ids[d] = perm[d][lex[d]];
      order.push_back(ids);
    });
    if (k_.grid.empty()) order.push_back({});
    return order;
  }

  std::vector<int64_t> blockIndex(const Pipelined& p, const llo::GridContext& ctx) {
    if (p.map->space != MemSpace::Vmem) return {};
    std::vector<llo::Arg> args;
    for (int64_t id : ctx.ids) args.push_back(llo::Arg::ofScalar(int32_t(id)));
    for (auto& b : prefetch_) args.push_back(llo::Arg::ofBuffer(b.get()));
    std::vector<int32_t> r = interp_.run(*p.map->indexMap, args, ctx);
    std::vector<int64_t> idx(r.begin(), r.end());
    const auto& shape = p.array->shape;
    const auto& block = p.map->blockShape;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t blocks = (shape[d] + block[d] - 1) / block[d];
      if (idx[d] < 0 || idx[d] >= blocks)
        throw InterpretError(fmt::format(
            "{}:{}: the index map of '{}' returns block {} at grid point {}: dimension {} has "
            "only {} blocks of {}",
            p.map->loc.file, p.map->loc.line, p.array->name, llo::shapeStr(idx),
            llo::shapeStr(ctx.ids), d, blocks, block[d]));
    }
    return idx;
  }

  // The valid extent of a block (edge blocks are clipped to the array).
  std::vector<int64_t> extentOf(const Pipelined& p, const std::vector<int64_t>& idx) {
    std::vector<int64_t> ext;
    for (size_t d = 0; d < idx.size(); ++d)
      ext.push_back(
          std::min(p.map->blockShape[d], p.array->shape[d] - idx[d] * p.map->blockShape[d]));
    return ext;
  }

  void copyIn(Pipelined& p, const std::vector<int64_t>& idx) {
    // The padding of an edge block is poison, as nothing defines it.
    std::fill(p.vmem->words.begin(), p.vmem->words.end(), llo::kPoisonWord);
    uint32_t mask = elementMask(p.array->dtype);
    forEachIndex(extentOf(p, idx), [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> src(i.size());
      for (size_t d = 0; d < i.size(); ++d) src[d] = idx[d] * p.map->blockShape[d] + i[d];
      uint32_t& w = p.vmem->at(i);
      w = (w & ~mask) | (p.hbm->at(src) & mask);
    });
    p.current = idx;
  }

  int64_t parallelKey(const std::vector<int64_t>& ids) {
    int64_t key = 0;
    for (size_t d = 0; d < ids.size(); ++d)
      if (k_.semantics[d] == llo::DimSemantics::Parallel) key = key * k_.grid[d] + ids[d];
    return key;
  }

  // Consecutive grid points that share an output block must agree on every
  // parallel index; otherwise two parallel points write the same elements.
  void checkSameBlockOwner(const Pipelined& p, const std::vector<int64_t>& ids) {
    const auto& owner = stepIds_[p.ownerStep];
    if (parallelKey(owner) == parallelKey(ids)) return;
    if (racesSeen_++ < opt_.maxRaceReports)
      races_.push_back(fmt::format(
          "race: output '{}' block {} is written by parallel grid points {} and {}", p.array->name,
          llo::shapeStr(p.current), llo::shapeStr(owner), llo::shapeStr(ids)));
  }

  void writeBack(Pipelined& p, InterpretResult& res) {
    ++res.blockCopiesOut;
    uint32_t mask = elementMask(p.array->dtype);
    const auto& idx = p.current;
    int64_t step = p.ownerStep;
    const auto& ids = step < int64_t(stepIds_.size()) ? stepIds_[step] : currentIds_;
    int64_t key = parallelKey(ids);
    forEachIndex(extentOf(p, idx), [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> dst(i.size());
      int64_t flat = 0;
      for (size_t d = 0; d < i.size(); ++d) {
        dst[d] = idx[d] * p.map->blockShape[d] + i[d];
        flat = flat * p.array->shape[d] + dst[d];
      }
      p.hbm->at(dst) = p.vmem->at(i) & mask;
      if (p.writer[flat] >= 0 && p.writer[flat] != key) {
        if (racesSeen_++ < opt_.maxRaceReports)
          races_.push_back(fmt::format(
              "race: output '{}' element {} is written by parallel grid points {} and {}",
              p.array->name, llo::shapeStr(dst), llo::shapeStr(stepIds_[p.writerStep[flat]]),
              llo::shapeStr(ids)));
      }
      p.writer[flat] = key;
      p.writerStep[flat] = step;
    });
  }
};

}  // namespace

InterpretResult interpret(const llo::Kernel& kernel, const std::vector<HostArray>& inputs,
                          const InterpretOptions& options) {
  GridRun run(kernel, inputs, options);
  return run.run();
}

std::unique_ptr<GridRunner> makeGridRunner(const llo::Kernel& kernel,
                                           const std::vector<HostArray>& inputs,
                                           const InterpretOptions& options) {
  return std::make_unique<GridRun>(kernel, inputs, options);
}

}  // namespace tpusim::kernels::dsl
