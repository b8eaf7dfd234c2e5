// The grid pipeline and the driver: placement, lowering, scheduling,
// register allocation, bundle assembly and the Program tables.
#include "kernels/codegen/Compile.h"

#include <fmt/format.h>

#include <algorithm>

#include <functional>
#include <map>

#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/FirstRead.h"
#include "kernels/codegen/HazardCheck.h"
#include "kernels/codegen/Lowering.h"
#include "kernels/codegen/PairPack.h"
#include "kernels/codegen/Spill.h"
#include "kernels/codegen/StepMxuCycles.h"
#include "kernels/llo/Interpreter.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {

MOperand I(int64_t v) { return MOperand::imm(v); }

// Buffered(n) limit: the copies in flight per stream are 8-bit fields of one
// 32-bit register.
constexpr int kMaxBuffers = 4;

// Registers spilled before giving up (each spill reschedules the kernel).
constexpr int kMaxSpills = 64;

// Grid steps from which a step whose matmuls outlast its copies waits for its
// blocks before it starts the next ones (stepOutlastsCopies).
constexpr int64_t kMinWaitFirstSteps = 4;

// The copy of one shape of block: the full block, or an edge block clipped to
// the array in some dimensions.
struct CopyVariant {
  std::vector<int64_t> window;  // elements moved per dimension
  CopyPlan plan;
  std::vector<int64_t> descWords;  // SMEM word of each descriptor template
};

// One array operand moved by the pipeline.
struct Stream {
  int region = -1;  // the block ref's memory region (bindBlock)
  const llo::ArrayOperand* array = nullptr;
  const llo::BlockMapping* map = nullptr;
  bool output = false;
  int index = 0;  // into kernel.inputs or kernel.outputs
  int64_t hbmBase = 0;
  // The whole array in HBM: where the address of any of its blocks lies.
  AddressSpan hbmSpan() const { return {hbmBase, hbmBase + llo::refBytes(hbmType)}; }
  int64_t stateWord = -1;  // SMEM words of the state when it lives there
  llo::Type hbmType, blockType;
  int64_t pairRows = 0;  // an input block copied in the paired s8x2 layout (PairPack.h)
  int64_t bufRow = 0, blockRows = 0;
  int flag = 0;
  // Dimensions whose last block sticks out of the array (Pallas pads them);
  // variant v clips dimension raggedDims[j] when bit j of v is set, so an
  // edge block moves only its in-bounds part. variants[0] is the full block.
  std::vector<size_t> raggedDims;
  std::vector<CopyVariant> variants;
  // Loop-carried registers.
  std::vector<MOperand> idx;  // block index held in the current slot
  int buffers = 2;
  // Its block copies come in parts that the body waits for one by one
  // (CopyPlan::partRowEnd, Lowerer::Arrival); 1: the step waits for the block.
  int64_t parts = 1;
  // Its block is copied once, in parts, in the prologue (copiedOnce): the
  // block stays in buffer 0 and the grid loop has no pipeline code for it
  // (gridLoop's onceSignal).
  bool once = false;
  bool onceSignalled = false;  // a step's end signals its parts' count
  MOperand slot;               // buffer of the current block
  MOperand issue;              // inputs with > 2 buffers: buffer of the last copy started
  MOperand pending;            // copies in flight, see gridLoop
  const llo::Value* bodyArg = nullptr;
  // Its first block was started by the kernel before (Prefetch.h).
  const PrefetchedStream* prefetched = nullptr;
  // Per grid step, when the index maps are known before the run (no scalar
  // prefetch): inputs, whether the step's block differs from the step
  // before's (a copy is started for it); outputs, whether the step writes
  // back (the next step's block differs, or it is the last). Empty otherwise.
  std::vector<char> changesAt;
  // An input whose every copy decision the pipeline takes at compile time
  // (changesAt): its last block index is not kept in registers.
  bool staticChange = false;
};

// What a per-step condition of the grid loop is at every step, when known
// before the run: the branch (and the index-map code feeding it) is left out.
enum class StepCond { Runtime, Never, Always, Valid, Last };

class Pipeline {
 public:
  // `smemState`: keep each stream's pipeline state (buffer, copies in flight,
  // last block index) in SMEM between the parts of a grid step, so no scalar
  // register holds it across the body (used when the registers run out).
  // `drainAtStart`: wait for the kernel before's write-backs (drainBefore)
  // first, even when the caller did not ask (its rows or flags are ours).
  // `staticSteps`: take the copy decisions known at compile time (StepCond);
  // off, every decision is made at run time in its own branch (the fallback
  // when the merged step code needs too many scalar registers).
  Pipeline(const llo::Kernel& k, const TargetInfo& t, const CompileOptions& o, bool smemState,
           bool drainAtStart, bool staticSteps, MFunction& fn, MemoryPlan& mem,
           std::vector<LoopRange>& loops, std::vector<isa::DataSegment>& data)
      : k_(k),
        t_(t),
        o_(o),
        smemState_(smemState),
        staticSteps_(staticSteps),
        drainAtStart_(drainAtStart || o.drainBefore.atStart),
        L_(fn, mem, t, loops, data),
        mem_(mem) {}

  // The body's FLOPs over the whole grid: each lowered copy of the step's
  // code (a peeled loop lowers it more than once) times the steps it runs,
  // and any other matmul lowered once per grid point.
  double totalFlops() const {
    return stepFlops_ + (L_.bodyFlops - loweredStepFlops_) * double(k_.gridPoints());
  }
  std::vector<Stream>& streams() { return streams_; }
  const std::vector<int64_t>& hbmIn() const { return hbmIn_; }
  const std::vector<int64_t>& hbmOut() const { return hbmOut_; }
  const std::vector<PendingWriteBack>& pendingWriteBacks() const { return pending_; }
  DrainAt drainedAt() const { return drainedAt_; }

  void build() {
    const auto& args = k_.body->body.args;
    L_.setDebug(L_.debugFor(k_.loc, k_.name));
    L_.emit(Opcode::Mark, {I(0)});
    if (drainAtStart_ && !o_.drainBefore.empty()) drainBefore(DrainAt::Start);
    // HBM arrays: the caller's buffer assignment, or placed here.
    std::vector<int64_t> hbmIn, hbmOut;
    if (o_.inputAddresses.empty() && o_.outputAddresses.empty()) {
      for (const auto& a : k_.inputs) hbmIn.push_back(mem_.hbm("input " + a.name, arrayBytes(a)));
      for (size_t i = 0; i < k_.outputs.size(); ++i) {
        // An aliased output is its input's buffer (Pallas input_output_aliases).
        int in = aliasOf(int(i));
        hbmOut.push_back(in >= 0
                             ? hbmIn[size_t(in)]
                             : mem_.hbm("output " + k_.outputs[i].name, arrayBytes(k_.outputs[i])));
      }
    } else {
      hbmIn = o_.inputAddresses;
      hbmOut = o_.outputAddresses;
      checkGivenAddresses();
    }
    hbmIn_ = hbmIn;
    hbmOut_ = hbmOut;
    placePrefetched();
    size_t arg = 0;
    int loadFlag = -1;
    // Scalar prefetch and SMEM operands: loaded once before the grid.
    auto loadToSmem = [&](size_t input, const llo::Value* v) {
      const auto& a = k_.inputs[input];
      llo::Type smem = llo::Type::ref(llo::MemSpace::Smem, a.dtype, a.shape);
      RefPlace p{smem,
                 false,
                 mem_.smemWords("SMEM copy of " + a.name, smem.numElements()),
                 {},
                 L_.newRegion()};
      if (loadFlag < 0) loadFlag = mem_.flags("prologue loads", 1);
      CopyPlan plan = planCopy(llo::Type::ref(llo::MemSpace::Hbm, a.dtype, a.shape), smem, a.shape);
      const AddressSpan span{hbmIn[input], hbmIn[input] + arrayBytes(a)};
      for (size_t i = 0; i < plan.descriptors.size(); ++i) {
        int64_t w =
            L_.descriptorTemplate(plan.descriptors[i], "DMA descriptor: load " + a.name, span);
        MOperand base = L_.constReg(w);
        MemAccess mem{MemAccess::Space::Smem, -1, true, -1, 0};
        L_.storeDescriptorAddress(base, 1, ScalarVal{true, hbmIn[input] + plan.srcOffset[i], {}},
                                  span, mem);
        L_.emit(Opcode::SSt, {L_.constReg(p.base * 4 + plan.dstOffset[i]), base, I(3)});
        L_.emit(Opcode::Dma, {base, I(loadFlag), I(0)});
      }
      L_.emit(Opcode::SyncWait, {I(loadFlag), I(int64_t(plan.descriptors.size()))});
      if (v) L_.bindRef(v, p);
      return p;
    };
    for (int i = 0; i < k_.numScalarPrefetch; ++i) prefetch_.push_back(loadToSmem(i, args[arg++]));
    auto addStream = [&](size_t index, bool output, const llo::BlockMapping& m,
                         const llo::Value* v) {
      const llo::ArrayOperand& a = output ? k_.outputs[index] : k_.inputs[index];
      int64_t base = output ? hbmOut[index] : hbmIn[index];
      if (m.space == llo::MemSpace::Hbm) {
        L_.bindRef(v, RefPlace{v->type, false, base, {}, L_.newRegion()});
        return;
      }
      if (m.space == llo::MemSpace::Smem) {
        if (output)
          throw CodegenError(fmt::format("output '{}' in SMEM is not supported yet", a.name));
        loadToSmem(index, v);
        return;
      }
      if (m.buffers < 1 || m.buffers > kMaxBuffers)
        throw CodegenError(
            fmt::format("{}:{}: error: '{}' asks for Buffered({}); the code generator "
                        "supports 1 to {} buffers per block",
                        m.loc.file, m.loc.line, a.name, m.buffers, kMaxBuffers));
      Stream s;
      s.index = int(index);
      s.buffers = m.buffers;
      for (size_t d = 0; d < a.shape.size(); ++d)
        if (a.shape[d] % m.blockShape[d] != 0) s.raggedDims.push_back(d);
      s.array = &a;
      s.map = &m;
      s.output = output;
      s.hbmBase = base;
      s.hbmType = a.hbmType();
      s.blockType = llo::Type::ref(llo::MemSpace::Vmem, a.dtype, m.blockShape);
      s.blockRows = llo::tiledLayout(m.blockShape).totalRows();
      // A paired s8 weight block (PairPack.h) arrives whole; the prefetch planner
      // decides alike (Prefetch.cpp).
      if (!output) s.pairRows = pairedRows(k_, int(index), t_);
      if (!output && !s.pairRows) s.parts = arrivalParts(k_, m, s.hbmType, t_.dmaQueueDepth);
      s.once = s.parts > 1 && copiedOnce(k_, m);
      const PrefetchedStream* pre = output ? nullptr : prefetchedStream(int(index));
      if (pre) {  // placed first (placePrefetched)
        s.bufRow = pre->bufRow;
        s.flag = pre->flag;
        s.prefetched = pre;
      } else {
        s.bufRow =
            mem_.vmem(fmt::format("'{}' blocks {}{} x {} buffers", a.name, isa::dtypeName(a.dtype),
                                  llo::shapeStr(m.blockShape), m.buffers),
                      m.blockShape, m.buffers);
        s.flag = mem_.flags(fmt::format("'{}' block copies", a.name), 1);
      }
      for (size_t v = 0; v < (size_t(1) << s.raggedDims.size()); ++v) {
        CopyVariant cv;
        cv.window = m.blockShape;
        for (size_t j = 0; j < s.raggedDims.size(); ++j) {
          size_t d = s.raggedDims[j];
          if (v >> j & 1) cv.window[d] = a.shape[d] % m.blockShape[d];
        }
        try {
          cv.plan = planWindow(s, cv.window);
        } catch (const CodegenError& e) {
          throw CodegenError(
              fmt::format("{}:{}: error: '{}': {}", m.loc.file, m.loc.line, a.name, e.what()));
        }
        const AddressSpan hbm = s.hbmSpan(), none;
        for (size_t i = 0; i < cv.plan.descriptors.size(); ++i)
          cv.descWords.push_back(
              L_.descriptorTemplate(cv.plan.descriptors[i],
                                    v == 0 ? fmt::format("DMA descriptor: '{}' block {}", a.name, i)
                                           : fmt::format("DMA descriptor: '{}' edge block {} {}",
                                                         a.name, llo::shapeStr(cv.window), i),
                                    output ? none : hbm, output ? hbm : none));
        s.variants.push_back(std::move(cv));
      }
      if (pre && (pre->descriptors != int(s.variants.at(size_t(pre->variant)).descWords.size()) ||
                  pre->rows != s.blockRows * s.buffers))
        throw CodegenError(fmt::format(
            "internal: kernel '{}': the prefetch plan of '{}' does not match its pipeline", k_.name,
            a.name));
      s.bodyArg = v;
      streams_.push_back(std::move(s));
    };
    for (size_t i = 0; i < k_.inMaps.size(); ++i)
      addStream(i + k_.numScalarPrefetch, false, k_.inMaps[i], args[arg++]);
    for (size_t i = 0; i < k_.outMaps.size(); ++i) addStream(i, true, k_.outMaps[i], args[arg++]);
    for (const llo::Type& s : k_.scratch) {
      const llo::Value* v = args[arg++];
      RefPlace p{s, false, 0, {}, L_.newRegion()};
      if (s.space == llo::MemSpace::Vmem)
        p.base = mem_.vmem("scratch " + s.str(), s.shape);
      else if (s.space == llo::MemSpace::Smem)
        p.base = mem_.smemWords("scratch " + s.str(), s.numElements());
      else
        p.flagBase = mem_.flags("scratch " + s.str(), int(s.numElements()));
      L_.bindRef(v, p);
    }
    for (Stream& s : streams_) s.changesAt = staticChanges(s);
    gridLoop();
  }

 private:
  const llo::Kernel& k_;
  const TargetInfo& t_;
  const CompileOptions& o_;
  bool smemState_ = false;
  bool staticSteps_ = true;
  bool drainAtStart_ = false;
  bool drained_ = false;  // the waits for drainBefore are emitted
  bool inLoop_ = false;   // emitting the grid loop (queueOf)
  DrainAt drainedAt_ = DrainAt::None;
  std::vector<PendingWriteBack> pending_;
  int stateRegion_ = -1;
  Lowerer L_;
  double stepFlops_ = 0;         // each step code copy's FLOPs times its steps
  double loweredStepFlops_ = 0;  // the copies' FLOPs, once each
  MemoryPlan& mem_;
  std::vector<Stream> streams_;
  std::vector<RefPlace> prefetch_;
  std::vector<int64_t> hbmIn_, hbmOut_;

  // The planned stream of input `input` whose first block the kernel before
  // starts, or nullptr.
  const PrefetchedStream* prefetchedStream(int input) const {
    for (const PrefetchedStream& p : o_.prefetched.streams)
      if (p.input == input) return &p;
    return nullptr;
  }
  // The prefetched streams' buffers and flags are this kernel's first
  // allocations at its end of VMEM and of the flags, where the plan put them.
  void placePrefetched() {
    const PrefetchPlan& p = o_.prefetched;
    if (p.empty()) return;
    if (o_.standalone)
      throw CodegenError(
          fmt::format("kernel '{}': a standalone kernel cannot be prefetched into", k_.name));
    for (const PrefetchedStream& s : p.streams) {
      if (s.input < k_.numScalarPrefetch || s.input >= int(k_.inputs.size()))
        throw CodegenError(fmt::format("kernel '{}': prefetch plan names input {} of {}", k_.name,
                                       s.input, k_.inputs.size()));
      const llo::ArrayOperand& a = k_.inputs[size_t(s.input)];
      const llo::BlockMapping& m = k_.inMaps[size_t(s.input - k_.numScalarPrefetch)];
      int64_t row =
          mem_.vmem(fmt::format("'{}' blocks {}{} x {} buffers (first block prefetched)", a.name,
                                isa::dtypeName(a.dtype), llo::shapeStr(m.blockShape), m.buffers),
                    m.blockShape, m.buffers);
      int flag = mem_.flags(fmt::format("'{}' block copies (prefetched)", a.name), 1);
      if (row != s.bufRow || flag != s.flag)
        throw CodegenError(fmt::format(
            "internal: kernel '{}': '{}' placed at row {} flag {}, the prefetch plan says row {} "
            "flag {}",
            k_.name, a.name, row, flag, s.bufRow, s.flag));
    }
  }
  // The next kernel's first blocks: descriptors with absolute addresses in
  // this kernel's SMEM, one `dma` each.
  void issueNextKernelBlocks() {
    for (const PrefetchCopy& c : o_.prefetchNext.copies) {
      int64_t w = L_.fixedDescriptor(c.desc, "DMA descriptor: the next kernel's first block");
      L_.emit(Opcode::Dma, {L_.constReg(w), I(c.flag), I(c.queue)});
    }
  }

  // Waits for the kernel before's write-backs still in flight (Drain.h).
  void drainBefore(DrainAt at) {
    for (const PendingWriteBack& c : o_.drainBefore.copies)
      L_.emit(Opcode::SyncWait, {I(c.flag), I(c.count)});
    drained_ = true;
    drainedAt_ = at;
  }
  // Whether the next kernel's prefetch region (rows and flags at the other
  // end) overlaps a pending write-back of the kernel before: its first blocks
  // may be started only once that write-back has read its rows and counted.
  bool prefetchRegionOverlapsDrain() const {
    const PrefetchPlan& r = o_.prefetchNext;
    if (r.empty()) return false;
    const int64_t vr = t_.vmemRows();
    const int64_t r0 = r.fromTop ? vr - r.rows : 0, r1 = r.fromTop ? vr : r.rows;
    const int f0 = r.fromTop ? t_.syncFlags - r.flags : 0, f1 = r.fromTop ? t_.syncFlags : r.flags;
    for (const PendingWriteBack& c : o_.drainBefore.copies)
      if ((c.row < r1 && r0 < c.row + c.rows) || (c.flag >= f0 && c.flag < f1)) return true;
    return false;
  }
  // Stream::changesAt: the index map evaluated at every grid point.
  std::vector<char> staticChanges(const Stream& s) const {
    const int64_t steps = k_.gridPoints();
    if (!staticSteps_ || k_.numScalarPrefetch > 0 || steps < 1) return {};
    llo::Interpreter interp;
    std::vector<std::vector<int32_t>> blocks;
    std::vector<int64_t> ids(k_.grid.size(), 0);
    for (int64_t step = 0; step < steps; ++step) {
      std::vector<llo::Arg> args;
      for (int64_t id : ids) args.push_back(llo::Arg::ofScalar(int32_t(id)));
      blocks.push_back(interp.run(*s.map->indexMap, args, llo::GridContext{k_.grid, ids}));
      for (size_t d = ids.size(); d-- > 0;) {
        if (++ids[d] < k_.grid[d]) break;
        ids[d] = 0;
      }
    }
    std::vector<char> c(static_cast<size_t>(steps));
    for (size_t t = 0; t < c.size(); ++t)
      c[t] = s.output ? t + 1 == c.size() || blocks[t + 1] != blocks[t]
                      : t == 0 || blocks[t] != blocks[t - 1];
    return c;
  }
  // Classifies the condition changesAt[step + ahead] && step + ahead < steps
  // over the loop's steps.
  static StepCond stepCond(const Stream& s, int64_t ahead) {
    if (s.changesAt.empty()) return StepCond::Runtime;
    const int64_t steps = int64_t(s.changesAt.size());
    bool never = true, always = true, valid = true, last = true;
    for (int64_t step = 0; step < steps; ++step) {
      const bool in = step + ahead < steps;
      const bool c = in && s.changesAt[size_t(step + ahead)];
      never = never && !c;
      always = always && c;
      valid = valid && c == in;
      last = last && c == (step + 1 == steps);
    }
    if (never) return StepCond::Never;
    if (always) return StepCond::Always;
    if (valid) return StepCond::Valid;
    if (last) return StepCond::Last;
    return StepCond::Runtime;
  }

  // The descriptors of output stream s's last write-back (the block at the
  // last grid point), or -1 when it is not known before the run.
  int lastWriteBackCount(const Stream& s) const {
    if (k_.numScalarPrefetch > 0 || k_.gridPoints() < 1) return -1;
    std::vector<llo::Arg> args;
    std::vector<int64_t> ids;
    for (int64_t g : k_.grid) {
      ids.push_back(g - 1);
      args.push_back(llo::Arg::ofScalar(int32_t(g - 1)));
    }
    llo::Interpreter interp;
    std::vector<int32_t> idx = interp.run(*s.map->indexMap, args, llo::GridContext{k_.grid, ids});
    size_t v = 0;
    for (size_t j = 0; j < s.raggedDims.size(); ++j) {
      size_t d = s.raggedDims[j];
      if (idx.at(d) == s.array->shape[d] / s.map->blockShape[d]) v |= size_t(1) << j;
    }
    return int(s.variants.at(v).descWords.size());
  }

  // The DMA queue of a stream's copies: its flag's. An output of a kernel that
  // starts the next kernel's first blocks takes the queue with the fewest of
  // their bytes: descriptors of one queue complete in order, so a last
  // write-back behind a 2 MiB weight block would wait for all of it. Alike
  // every stream of a kernel run while a later kernel's blocks are in flight.
  //
  // In the grid loop, an input whose blocks arrive whole goes behind the
  // parts of a stream whose blocks arrive in parts (chunked arrival): it is
  // waited for whole before its next copy starts, so the queue does not
  // matter for its flag, and behind the parts its next block does not take
  // HBM from the parts the body waits for (a step after a large LHS block
  // changed), as when the step waited for the whole block first. Also behind
  // a block copied once, whose parts the loop never starts: at the first
  // step the next whole block then waits for the prologue's parts (on their
  // own queue: flash 2048 32,553 against 32,156 cycles).
  int64_t queueOf(const Stream& s) const {
    const int64_t own = s.flag % t_.dmaQueues;
    if (!s.output && inLoop_ && s.parts <= 1)
      for (const Stream& p : streams_)
        if (p.parts > 1) return p.flag % t_.dmaQueues;
    const bool next = s.output && !o_.prefetchNext.empty();
    if (!next && o_.inFlight.empty()) return own;
    std::vector<uint64_t> bytes(size_t(t_.dmaQueues), 0);
    if (next)
      for (const PrefetchCopy& c : o_.prefetchNext.copies)
        bytes.at(size_t(c.queue)) += c.desc.totalBytes();
    // A later kernel's first blocks, started before this (short) kernel, are
    // still in flight: its own copies take the queue with the fewest of their
    // bytes, or a 4 KiB input would wait behind a 2 MiB weight block.
    for (const PrefetchCopy& c : o_.inFlight.copies)
      bytes.at(size_t(c.queue)) += c.desc.totalBytes();
    int64_t best = own;
    for (int64_t q = 0; q < t_.dmaQueues; ++q)
      if (bytes[size_t(q)] < bytes[size_t(best)]) best = q;
    return best;
  }

  // Whether a step's matmuls outlast its input blocks' copies at the HBM's
  // peak (StepMxuCycles.h): its blocks are then in when it starts, and it
  // waits for them before it starts the next ones, so its first weight loads
  // and their widening go ahead of the next copies' descriptor stores (the
  // scheduler moves loads and register-only ops above a `dma`, not above a
  // wait): ~30 cycles a step of the int8 decode's projections. A step bound
  // by its copies starts the next copy first (arrive's `late`), so the queue
  // holds it while the current one lands (the AQT decode's s8 x s8 dots:
  // +278 cycles waiting first).
  // Only over kMinWaitFirstSteps steps or more: waiting first also delays the
  // second block's copy until the first block (still landing at step 0) is
  // in, one copy exposed per kernel against ~30 cycles gained a step (a
  // 2-step swiglu lost 27 cycles of ~1.9k).
  bool stepOutlastsCopies() const {
    if (k_.gridPoints() < kMinWaitFirstSteps) return false;
    const int64_t mxu = stepMxuCycles(k_, t_);
    if (mxu <= 0) return false;
    double bytes = 0;
    for (const Stream& s : streams_)
      if (!s.output && !s.once) bytes += double(s.variants.at(0).plan.bytes);
    return double(mxu) >= bytes / t_.hbmBytesPerCycle;
  }

  // Whether an input's copies in the grid loop complete after the one before
  // them, its first block's included: one DMA queue (each completes in
  // order), so a step may start its next copy before it waits for its own.
  bool earlyCopyFollows(const Stream& s) {
    const bool was = inLoop_;
    inLoop_ = true;
    const int64_t loop = queueOf(s);
    inLoop_ = false;
    const int64_t first = s.prefetched ? s.flag % t_.dmaQueues : queueOf(s);
    inLoop_ = was;
    return loop == first;
  }

  // How many last steps of the grid loop are peeled off with its first (0:
  // none): when the body branches on the grid index (a dot's first / middle /
  // last K step) and one grid dimension moves, so a middle step's tests fold
  // away and its pipeline code and body share one basic block. The last
  // n - 1 steps for inputs of n buffers (a copy n - 1 steps ahead is tested
  // against the end), at least the last. Not with MXU latches (their state
  // follows the program order, which peeling changes) nor when the step's
  // state lives in SMEM or its decisions are made at run time.
  int64_t peeledTail(int64_t steps) const {
    int64_t tail = 1;
    for (const Stream& s : streams_)
      if (!s.output) tail = std::max<int64_t>(tail, s.buffers - 1);
    if (steps < tail + 3 || smemState_ || !staticSteps_) return 0;
    int moving = 0;
    for (int64_t g : k_.grid) moving += g > 1;
    if (moving != 1) return 0;
    bool branchOnId = false, latches = false;
    auto usesId = [](const llo::Value* v, auto&& self, int depth) -> bool {
      if (!v || !v->def || depth > 8) return false;
      if (v->def->kind == llo::OpKind::ProgramId) return true;
      if (v->def->kind != llo::OpKind::SBinary) return false;
      for (const llo::Value* o : v->def->operands)
        if (self(o, self, depth + 1)) return true;
      return false;
    };
    auto walk = [&](const llo::Block& b, auto&& self) -> void {
      for (const auto& op : b.ops) {
        if (op->kind == llo::OpKind::MxuLatch || op->kind == llo::OpKind::MxuStart ||
            op->kind == llo::OpKind::MxuFinish)
          latches = true;
        if (op->kind == llo::OpKind::If && usesId(op->operands[0], usesId, 0)) branchOnId = true;
        for (const llo::Block& r : op->regions) self(r, self);
      }
    };
    walk(k_.body->body, walk);
    return branchOnId && !latches ? tail : 0;
  }

  // The input output `out` aliases, or -1.
  int aliasOf(int out) const {
    for (const auto& [in, o] : k_.aliases)
      if (o == out) return in;
    return -1;
  }

  static int64_t arrayBytes(const llo::ArrayOperand& a) {
    return llo::refBytes(llo::Type::ref(llo::MemSpace::Hbm, a.dtype, a.shape));
  }

  // Addresses from CompileOptions: one per array, inside the target's HBM,
  // no two arrays overlapping (an aliased pair shares one).
  void checkGivenAddresses() const {
    auto count = [&](const char* what, size_t given, size_t want) {
      if (given != want)
        throw CodegenError(
            fmt::format("kernel '{}': CompileOptions::{} has {} addresses but the kernel has {} {}",
                        k_.name, what, given, want, what[0] == 'i' ? "inputs" : "outputs"));
    };
    count("inputAddresses", o_.inputAddresses.size(), k_.inputs.size());
    count("outputAddresses", o_.outputAddresses.size(), k_.outputs.size());
    struct Span {
      std::string what;
      int64_t begin, end;
      int alias;  // input index an output aliases (-1 none) / own input index
    };
    std::vector<Span> spans;
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      spans.push_back({"input '" + k_.inputs[i].name + "'", o_.inputAddresses[i],
                       o_.inputAddresses[i] + arrayBytes(k_.inputs[i]), int(i)});
    for (size_t i = 0; i < k_.outputs.size(); ++i) {
      int alias = aliasOf(int(i));
      if (alias >= 0 && o_.outputAddresses[i] != o_.inputAddresses[size_t(alias)])
        throw CodegenError(fmt::format(
            "kernel '{}': output '{}' aliases input '{}' but its address {} differs from the "
            "input's {} (CompileOptions)",
            k_.name, k_.outputs[i].name, k_.inputs[size_t(alias)].name, o_.outputAddresses[i],
            o_.inputAddresses[size_t(alias)]));
      spans.push_back({"output '" + k_.outputs[i].name + "'", o_.outputAddresses[i],
                       o_.outputAddresses[i] + arrayBytes(k_.outputs[i]), alias});
    }
    size_t numIn = k_.inputs.size();
    auto writtenInPlace = [&](int input) {
      for (size_t o = 0; o < k_.outputs.size(); ++o)
        if (aliasOf(int(o)) == input) return true;
      return false;
    };
    for (size_t i = 0; i < spans.size(); ++i) {
      const Span& a = spans[i];
      if (a.begin < 0 || a.end > t_.hbmBytes)
        throw CodegenError(fmt::format(
            "kernel '{}': {} at HBM byte {} (size {}) is outside the target's {} bytes of HBM",
            k_.name, a.what, a.begin, a.end - a.begin, t_.hbmBytes));
      for (size_t j = 0; j < i; ++j) {
        const Span& b = spans[j];
        bool aliased = i >= numIn && j < numIn && a.alias == int(j) && a.begin == b.begin;
        // Two views of the same bytes (a value and its reshape) may both be
        // read, unless an output is written in place of one of them.
        bool readOnly =
            i < numIn && j < numIn && !writtenInPlace(int(i)) && !writtenInPlace(int(j));
        if (!aliased && !readOnly && a.begin < b.end && b.begin < a.end && a.end > a.begin &&
            b.end > b.begin)
          throw CodegenError(fmt::format("kernel '{}': {} [{}, {}) overlaps {} [{}, {}) in HBM",
                                         k_.name, a.what, a.begin, a.end, b.what, b.begin, b.end));
      }
    }
  }

  MOperand reg() { return L_.fn().newReg(RegClass::Scalar); }
  void copy(MOperand dst, const ScalarVal& v) { L_.copyScalar(dst, v); }
  static ScalarVal R(MOperand r, bool nonNeg = false) { return ScalarVal::inReg(r, nonNeg); }

  // Emits `body` only when `cond` is non-zero at run time.
  void when(const ScalarVal& cond, const std::function<void()>& body) {
    if (cond.isConst) {
      if (cond.c) body();
      return;
    }
    int from = L_.currentBlock();
    L_.emit(Opcode::BrZ, {L_.reg(cond), MOperand::block(-1)});
    L_.newBlock("then");
    body();
    int end = L_.newBlock("join");
    L_.fn().blocks[from].instrs.back().ops[1] = MOperand::block(end);
  }

  std::vector<ScalarVal> indexMap(const Stream& s, const std::vector<ScalarVal>& ids) {
    const llo::Function& f = *s.map->indexMap;
    size_t a = 0;
    for (const ScalarVal& id : ids) L_.bindScalar(f.body.args[a++], id);
    for (const RefPlace& p : prefetch_) L_.bindRef(f.body.args[a++], p);
    const llo::Op& ret = *f.body.ops.back();
    for (size_t i = 0; i + 1 < f.body.ops.size(); ++i) {
      L_.setDebug(L_.debugFor(f.body.ops[i]->loc, k_.name));
      L_.lowerOp(*f.body.ops[i]);
    }
    std::vector<ScalarVal> out;
    for (const llo::Value* v : ret.operands) out.push_back(L_.scalar(v));
    return out;
  }

  ScalarVal differs(const std::vector<ScalarVal>& a, const std::vector<MOperand>& b) {
    ScalarVal any{true, 0, {}};
    for (size_t d = 0; d < a.size(); ++d)
      any = L_.scalarOp(llo::ScalarBin::Or, any, L_.scalarOp(llo::ScalarBin::Ne, a[d], R(b[d])));
    return any;
  }

  // The copy of a window at the block's origin between HBM and the block buffer.
  static CopyPlan planWindow(const Stream& s, std::vector<int64_t> window) {
    return planBlockCopy(s.hbmType, s.blockType, s.output, std::move(window), s.pairRows, s.parts,
                         !s.output && s.array->pairRows > 0);
  }

  // Which copy variant block `idx` needs: bit j set when it is the last block
  // of ragged dimension j.
  ScalarVal variantOf(const Stream& s, const std::vector<ScalarVal>& idx) {
    ScalarVal v{true, 0, {}};
    for (size_t j = 0; j < s.raggedDims.size(); ++j) {
      size_t d = s.raggedDims[j];
      int64_t last = s.array->shape[d] / s.map->blockShape[d];
      ScalarVal edge = L_.scalarOp(llo::ScalarBin::Eq, idx[d], ScalarVal{true, last, {}});
      v = L_.add(v, L_.mulImm(edge, int64_t(1) << j));
    }
    return v;
  }

  // Starts the copy of block `idx` into / out of buffer `slot` of a stream;
  // returns the value for `pending` (1 + the variant started).
  ScalarVal startCopy(Stream& s, const std::vector<ScalarVal>& idx, const ScalarVal& slot) {
    std::vector<int64_t> strides = s.output ? elementStrides(s.hbmType) : hbmStrides(*s.array);
    ScalarVal hbm{true, s.hbmBase, {}};
    for (size_t d = 0; d < idx.size(); ++d)
      hbm = L_.add(hbm, L_.mulImm(idx[d], s.map->blockShape[d] * strides[d]));
    ScalarVal vmem = L_.mulImm(L_.add(ScalarVal{true, s.bufRow, {}}, L_.mulImm(slot, s.blockRows)),
                               isa::kVmemRowBytes);
    ScalarVal src = s.output ? vmem : hbm, dst = s.output ? hbm : vmem;
    if (deferParts_ && s.once && s.variants.size() == 1) {
      if (!src.isConst) src = R(L_.reg(src));
      if (!dst.isConst) dst = R(L_.reg(dst));
      deferred_.push_back({&s, src, dst});
      return ScalarVal{true, 1, {}};
    }
    if (deferWhole_ && s.variants.size() == 1) {
      if (!src.isConst) src = R(L_.reg(src));
      if (!dst.isConst) dst = R(L_.reg(dst));
      deferredWhole_.push_back({&s, src, dst});
      return ScalarVal{true, 1, {}};
    }
    if (s.variants.size() > 1) return startVariants(s, idx, src, dst);
    issueDescriptors(s, s.variants[0], src, dst, 0, s.variants[0].descWords.size());
    return ScalarVal{true, 1, {}};
  }

  // Descriptors [from, to) of a copy variant, at these addresses.
  void issueDescriptors(Stream& s, const CopyVariant& cv, ScalarVal src, ScalarVal dst, size_t from,
                        size_t to, int64_t queue = -1) {
    if (queue < 0) queue = queueOf(s);
    for (size_t i = from; i < to; ++i) {
      MOperand base = L_.constReg(cv.descWords[i]);
      const MemAccess mem{MemAccess::Space::Smem, -3, true, -1, 0};
      const AddressSpan hbmSpan = s.hbmSpan(), none;
      L_.storeDescriptorAddress(base, 1, L_.addImm(src, cv.plan.srcOffset[i]),
                                s.output ? none : hbmSpan, mem);
      L_.storeDescriptorAddress(base, 3, L_.addImm(dst, cv.plan.dstOffset[i]),
                                s.output ? hbmSpan : none, mem);
      MInstr dma = makeInstr(Opcode::Dma, {base, I(s.flag), I(queue)});
      dma.passable = passableCopies_;
      L_.emit(dma);
    }
  }

  // The prologue's blocks copied once in parts, all on the first such
  // stream's queue (a queue completes its descriptors in order): part 0 of
  // each, then the first copies of the blocks that arrive whole (deferWhole_:
  // were first, on their own queues, sharing HBM with the parts the first
  // step waits for at its start, though the body may read them much later:
  // flash attention's V after the score dot and the softmax), then the later
  // parts, part by part across the streams, those of blocks the first step
  // reads past their first part before the others (causal flash reads all
  // of q there, for the next q block's scores, and K's first part only).
  struct DeferredParts {
    Stream* s;
    ScalarVal src, dst;
  };
  // Whether the first step reads the block past its first part (or where,
  // is not known: FirstRead.h firstStepReadsWithin).
  bool firstStepReadsPastFirstPart(const Stream& s) const {
    const auto& ends = s.variants.at(0).plan.partRowEnd;
    return ends.empty() || !firstStepReadsWithin(k_, *s.map, ends.front());
  }
  // Whether a block copied once arrives in parts (issueDeferredParts).
  bool anyOnceInParts() const {
    for (const Stream& p : streams_)
      if (p.once && p.variants.size() == 1) return true;
    return false;
  }
  bool deferParts_ = false;
  bool deferWhole_ = false;
  // The grid loop's next copies of a step that waited for its blocks first
  // (stepOutlastsCopies): their `dma`s are MInstr::passable.
  bool passableCopies_ = false;
  std::vector<DeferredParts> deferred_;
  std::vector<DeferredParts> deferredWhole_;
  void issueDeferredParts() {
    const int64_t queue = deferred_.empty() ? 0 : queueOf(*deferred_.front().s);
    auto issuePart = [&](const DeferredParts& d, size_t part) {
      const CopyVariant& cv = d.s->variants[0];
      const auto& counts = cv.plan.partDescriptors;
      if (part >= counts.size()) return false;
      size_t from = 0;
      for (size_t p = 0; p < part; ++p) from += size_t(counts[p]);
      issueDescriptors(*d.s, cv, d.src, d.dst, from, from + size_t(counts[part]), queue);
      return true;
    };
    for (const DeferredParts& d : deferred_) issuePart(d, 0);
    for (const DeferredParts& d : deferredWhole_)
      issueDescriptors(*d.s, d.s->variants[0], d.src, d.dst, 0, d.s->variants[0].descWords.size(),
                       queue);
    deferredWhole_.clear();
    // The later parts of the blocks the first step reads past their first
    // part first: the queue's copies share HBM, so parts the first step does
    // not read would slow those it waits for.
    std::vector<bool> readFirst;  // one body walk per block, not per part
    for (const DeferredParts& d : deferred_) readFirst.push_back(firstStepReadsPastFirstPart(*d.s));
    auto laterParts = [&](bool firstStepReads) {
      for (size_t part = 1;; ++part) {
        bool any = false;
        for (size_t i = 0; i < deferred_.size(); ++i)
          if (readFirst[i] == firstStepReads) any = issuePart(deferred_[i], part) || any;
        if (!any) break;
      }
    };
    laterParts(true);
    laterParts(false);
    deferred_.clear();
  }

  ScalarVal startVariants(Stream& s, const std::vector<ScalarVal>& idx, ScalarVal src,
                          ScalarVal dst) {
    auto issue = [&](const CopyVariant& cv) {
      issueDescriptors(s, cv, src, dst, 0, cv.descWords.size());
    };
    // Addresses and the variant computed before the branches, so each variant's block sees them.
    if (!src.isConst) src = R(L_.reg(src));
    if (!dst.isConst) dst = R(L_.reg(dst));
    ScalarVal v = variantOf(s, idx);
    if (!v.isConst) v = R(L_.reg(v));
    for (size_t k = 0; k < s.variants.size(); ++k)
      when(L_.scalarOp(llo::ScalarBin::Eq, v, ScalarVal{true, int64_t(k), {}}),
           [&] { issue(s.variants[k]); });
    return L_.addImm(v, 1);
  }
  // Waits for the copy `f` (1 + its variant, known non-zero) names.
  void waitCopy(const Stream& s, const ScalarVal& f) {
    auto wait = [&](size_t n) { L_.emit(Opcode::SyncWait, {I(s.flag), I(int64_t(n))}); };
    bool oneCount = true;
    for (const CopyVariant& cv : s.variants)
      oneCount = oneCount && cv.descWords.size() == s.variants[0].descWords.size();
    if (oneCount) return wait(s.variants[0].descWords.size());
    // Variants with the same descriptor count share one wait.
    std::map<size_t, ScalarVal> byCount;
    for (size_t k = 0; k < s.variants.size(); ++k) {
      size_t n = s.variants[k].descWords.size();
      ScalarVal is = L_.scalarOp(llo::ScalarBin::Eq, f, ScalarVal{true, int64_t(k) + 1, {}});
      auto it = byCount.find(n);
      if (it == byCount.end())
        byCount[n] = is;
      else
        it->second = L_.scalarOp(llo::ScalarBin::Or, it->second, is);
    }
    if (byCount.size() == 1) return wait(byCount.begin()->first);
    for (auto& [n, cond] : byCount) {
      size_t count = n;
      when(cond, [&] { wait(count); });
    }
  }

  // The state registers of a stream, in their SMEM order.
  static std::vector<MOperand*> stateRegs(Stream& s) {
    std::vector<MOperand*> r{&s.slot, &s.pending};
    if (s.buffers > 2 && !s.output) r.push_back(&s.issue);
    for (MOperand& m : s.idx) r.push_back(&m);
    return r;
  }
  // SMEM-resident state: fresh registers loaded at the start of a part of the
  // step, stored back at its end.
  void loadState(Stream& s) { moveState(s, false); }
  void storeState(Stream& s) { moveState(s, true); }
  void moveState(Stream& s, bool store) {
    if (!smemState_) return;
    std::vector<MOperand*> regs = stateRegs(s);
    for (size_t i = 0; i < regs.size(); ++i) {
      if (!store) *regs[i] = reg();
      MOperand base;
      int64_t off;
      L_.baseAndOffset(ScalarVal{true, s.stateWord + int64_t(i), {}}, &base, &off);
      MInstr mi = makeInstr(store ? Opcode::SSt : Opcode::SLd, {*regs[i], base, I(off)});
      mi.mem = {MemAccess::Space::Smem, stateRegion_, store, -1, 0};
      L_.emit(mi);
    }
  }

  // The grid point after `ids` in lexicographic order (wrapping to 0 after the last).
  std::vector<ScalarVal> advance(const std::vector<ScalarVal>& ids) {
    std::vector<ScalarVal> nx(ids.size());
    ScalarVal carry{true, 1, {}};
    for (size_t d = ids.size(); d-- > 0;) {
      if (k_.grid[d] == 1) {  // always 0; the carry passes on unchanged
        nx[d] = ScalarVal{true, 0, {}};
        continue;
      }
      ScalarVal inc = L_.add(ids[d], carry);
      ScalarVal wrap = L_.scalarOp(llo::ScalarBin::Eq, inc, ScalarVal{true, k_.grid[d], {}});
      if (wrap.isConst) {  // known, or decided by the index's range (a peeled loop)
        nx[d] = wrap.c ? ScalarVal{true, 0, {}} : inc;
      } else {
        MOperand nd = reg();
        L_.emit(Opcode::SSel, {nd, L_.reg(wrap), L_.constReg(0), L_.reg(inc)});
        nx[d] = R(nd);
      }
      carry = L_.scalarOp(llo::ScalarBin::And, carry, wrap);
    }
    return nx;
  }
  // (r + 1) mod n, in place.
  void bump(MOperand r, int n) {
    if (n == 1) return;
    if (n == 2) return L_.emit(Opcode::SXor, {r, r, L_.constReg(1)});
    // Fresh registers, not value-numbered ones: r changes in place, and two
    // bumps may now share a block (decisions known at compile time).
    MOperand inc = reg(), wrap = reg();
    L_.emit(Opcode::SAddI, {inc, r, I(1)});
    L_.emit(Opcode::SCmpEq, {wrap, inc, L_.constReg(n)});
    L_.emit(Opcode::SSel, {r, wrap, L_.constReg(0), inc});
  }
  ScalarVal field(MOperand r, int k) {  // 8-bit field k of a pending register
    ScalarVal v =
        k == 0 ? R(r) : L_.scalarOp(llo::ScalarBin::Shr, R(r), ScalarVal{true, 8 * k, {}});
    return L_.scalarOp(llo::ScalarBin::And, v, ScalarVal{true, 0xFF, {}});
  }
  // Starts the copy of input block `idx` into the next buffer when it differs
  // from the last one started; records it in field `k` of `pending`.
  // With s.staticChange, `valid` is the whole condition (the caller folded
  // the block comparison in) and no index is recorded.
  void issueInput(Stream& s, const std::vector<ScalarVal>& idx, const ScalarVal& valid, int k) {
    ScalarVal change =
        s.staticChange ? valid : L_.scalarOp(llo::ScalarBin::And, valid, differs(idx, s.idx));
    when(change, [&] {
      ScalarVal into{true, 0, {}};  // one buffer: always buffer 0
      if (s.buffers == 2) {
        // The buffer after the current one (the only one not in use).
        into = L_.scalarOp(llo::ScalarBin::Xor, R(s.slot), ScalarVal{true, 1, {}});
      } else if (s.buffers > 2) {
        bump(s.issue, s.buffers);
        into = R(s.issue);
      }
      ScalarVal p = startCopy(s, idx, into);
      if (k == 0) {
        copy(s.pending, p);
      } else {
        ScalarVal shifted = L_.mulImm(p, int64_t(1) << (8 * k));
        L_.emit(Opcode::SOr, {s.pending, s.pending, L_.reg(shifted)});
      }
      if (!s.staticChange)
        for (size_t d = 0; d < s.idx.size(); ++d) copy(s.idx[d], idx[d]);
    });
  }

  // The grid loop. Per input with n buffers: field k (8 bits) of `pending`
  // holds 1 + the copy variant started for grid step (current + k), 0 when
  // that step reuses the previous block; with n >= 2 copies run n - 1 steps
  // ahead (started before the body), with n = 1 one step ahead after the
  // body. Per output: `pending` is a FIFO of the last n - 1 write-backs;
  // starting one waits for the one n - 1 write-backs back, so the buffer the
  // next block goes to is free.
  void gridLoop() {
    size_t rank = k_.grid.size();
    int64_t steps = k_.gridPoints();
    std::vector<MOperand> g(rank);
    for (auto& r : g) {
      r = reg();
      L_.emit(Opcode::SLi, {r, I(0)});
    }
    MOperand step = reg();
    L_.emit(Opcode::SLi, {step, I(0)});
    // Prologue: every input's blocks for the first n - 1 steps (1 with n = 1).
    // With the state in SMEM each stream's is stored as soon as its part is
    // done: held to the end, a kernel of many streams would need 4 scalar
    // registers per stream at once.
    if (smemState_) stateRegion_ = L_.newRegion();
    deferParts_ = true;
    for (Stream& s : streams_) {
      int n = s.buffers;
      s.slot = reg();
      s.pending = reg();
      L_.emit(Opcode::SLi, {s.slot, I(s.output ? 0 : n - 1)});
      L_.emit(Opcode::SLi, {s.pending, I(0)});
      for (size_t d = 0; !s.output && d < s.map->blockShape.size(); ++d) {
        s.idx.push_back(reg());
        L_.emit(Opcode::SLi, {s.idx.back(), I(0xFFFFFFFF)});  // -1: no block yet
      }
      if (!s.output && n > 2) {
        s.issue = reg();
        L_.emit(Opcode::SLi, {s.issue, I(n - 1)});
      }
      // How far ahead of the step its copies start: n - 1 steps, or one
      // after the body with a single buffer.
      if (!s.output) s.staticChange = stepCond(s, std::max(n - 1, 1)) != StepCond::Runtime;
      std::vector<ScalarVal> ids(rank, ScalarVal{true, 0, {}});
      int j0 = 0;
      if (s.prefetched) {
        // Its first block is in flight into buffer 0 already: record it as
        // issueInput would have (pending = 1 + variant, its index; with more
        // than two buffers the last one issued is buffer 0).
        L_.emit(Opcode::SLi, {s.pending, I(s.prefetched->variant + 1)});
        for (size_t d = 0; d < s.idx.size(); ++d)
          L_.emit(Opcode::SLi, {s.idx[d], I(s.prefetched->firstBlock.at(d))});
        if (n > 2) L_.emit(Opcode::SLi, {s.issue, I(0)});
        ids = advance(ids);
        j0 = 1;
      }
      for (int j = j0; !s.output && j < std::max(n - 1, 1) && j < steps; ++j) {
        // A block per copy, as the branch made before: the copies' values
        // (buffer, addresses) are not shared between them.
        if (s.staticChange && j > j0) L_.newBlock("issue");
        deferWhole_ = j == j0 && !s.prefetched && s.parts <= 1 && anyOnceInParts();
        issueInput(s, indexMap(s, ids),
                   ScalarVal{true, s.staticChange ? int64_t(s.changesAt.at(size_t(j))) : 1, {}}, j);
        deferWhole_ = false;
        ids = advance(ids);
      }
      if (s.once) {  // in buffer 0 for the whole grid; arrive() is not needed
        L_.emit(Opcode::SLi, {s.slot, I(0)});
        L_.emit(Opcode::SLi, {s.pending, I(0)});
      }
      if (smemState_) {
        s.stateWord = mem_.smemWords(fmt::format("pipeline state of '{}'", s.array->name),
                                     int64_t(stateRegs(s).size()));
        storeState(s);
      }
    }
    deferParts_ = false;
    issueDeferredParts();
    MOperand count = reg();
    inLoop_ = true;
    // The step being emitted: its grid indices, the next step's, and its
    // number (registers in the loop, constants in a peeled step).
    std::vector<ScalarVal> ids, next;
    ScalarVal stepAt;
    int64_t stepLo = 0, stepHi = steps - 1;  // the steps the code being emitted runs
    auto stepsLeft = [&](int64_t k) {        // step + k < steps
      return L_.scalarOp(llo::ScalarBin::Lt, stepAt, ScalarVal{true, steps - k, {}});
    };
    // A condition known per step (stepCond) as a value at this step.
    auto condAt = [&](StepCond c, int64_t ahead) {
      switch (c) {
        case StepCond::Never:
          return ScalarVal{true, 0, {}};
        case StepCond::Always:
          return ScalarVal{true, 1, {}};
        case StepCond::Valid:
          return stepsLeft(ahead);
        case StepCond::Last:
          return L_.scalarOp(llo::ScalarBin::Eq, stepAt, ScalarVal{true, steps - 1, {}});
        case StepCond::Runtime:
          break;
      }
      throw CodegenError("internal: a run-time step condition has no static value");
    };
    // An input's copy for the step `ahead` steps on: the block comparison at
    // compile time when it is known, none at all when it never starts one.
    // `grouped`: the caller tests step + ahead < steps for several streams at once.
    auto issueAhead = [&](Stream& s, const std::vector<ScalarVal>& at, int64_t ahead, int k,
                          bool grouped = false) {
      if (!s.staticChange) return issueInput(s, indexMap(s, at), stepsLeft(ahead), k);
      const StepCond c = grouped ? StepCond::Always : stepCond(s, ahead);
      if (c == StepCond::Never) return;
      issueInput(s, indexMap(s, at), condAt(c, ahead), k);
    };
    // The parts of a step, per stream; with the state in SMEM each stream's
    // part runs on its own (state loaded, used, stored back), so only one
    // stream's state is in registers at a time.
    // Waits put after the step's next copies are started (arrive's `late`).
    std::vector<std::function<void()>> lateWaits;
    auto arrive = [&](Stream& s, bool late) {  // inputs: wait for the current block when it is new
      if (s.output || s.once) return;
      const int changes = changesIn(s, stepLo, stepHi);
      if (changes == 0) return;  // no copy, `pending` stays 0
      ScalarVal arrived = s.buffers <= 2 ? R(s.pending) : field(s.pending, 0);
      if (!arrived.isConst) arrived = R(L_.reg(arrived));
      // A new block at every step: no branch (`arrived` still names the variant).
      const bool every = changes == 1;
      if (every && s.parts > 1) {
        bump(s.slot, s.buffers);
      } else if (every && late && s.buffers > 1 && earlyCopyFollows(s)) {
        // The next block's copy is started first, so the queue holds it
        // while this one lands (its buffer was read by the step before).
        bump(s.slot, s.buffers);
        bool oneCount = true;
        for (const CopyVariant& cv : s.variants)
          oneCount = oneCount && cv.descWords.size() == s.variants[0].descWords.size();
        if (!arrived.isConst && !oneCount) {  // waitCopy reads it
          MOperand keep = reg();
          copy(keep, arrived);
          arrived = R(keep);
        }
        lateWaits.push_back([this, &s, arrived] { waitCopy(s, arrived); });
      } else if (every) {
        if (s.buffers > 1) bump(s.slot, s.buffers);
        waitCopy(s, arrived);
      } else if (s.parts > 1) {
        // The body waits for the parts (expectArrivals); a step that keeps its
        // block signals their count itself, so those waits pass at once.
        when(arrived, [&] { bump(s.slot, s.buffers); });
        when(L_.scalarOp(llo::ScalarBin::Eq, arrived, ScalarVal{true, 0, {}}), [&] {
          L_.emit(Opcode::SyncSignal, {I(s.flag), I(int64_t(s.variants.at(0).descWords.size()))});
        });
      } else {
        when(arrived, [&] {
          if (s.buffers > 1) bump(s.slot, s.buffers);
          waitCopy(s, arrived);
        });
      }
      if (s.buffers <= 2)
        L_.emit(Opcode::SLi, {s.pending, I(0)});
      else
        L_.emit(Opcode::SShrI, {s.pending, s.pending, I(8)});
    };
    auto bindBlock = [&](Stream& s) {  // the block ref's base for this step
      // slot * rows in a register, the buffer's first row as the place's offset.
      ScalarVal row = L_.add(ScalarVal::constant(s.bufRow), L_.mulImm(R(s.slot), s.blockRows));
      // One region per stream for every copy of the step's code: a resident
      // matmul into the block finds its MXU placement by the region
      // (peeled steps lower the body more than once).
      if (s.region < 0) s.region = L_.newRegion();
      RefPlace p{s.bodyArg->type, !row.isConst, row.c, row.reg, s.region};
      p.pairRows = s.pairRows;
      L_.bindRef(s.bodyArg, p);
    };
    auto prefetch = [&](Stream& s, bool grouped = false) {  // n >= 2: the block n - 1 steps ahead
      if (s.output || s.buffers == 1) return;
      if (s.staticChange && stepCond(s, s.buffers - 1) == StepCond::Never) return;
      std::vector<ScalarVal> ahead = next;
      for (int j = 2; j < s.buffers; ++j) ahead = advance(ahead);
      issueAhead(s, ahead, s.buffers - 1, s.buffers - 2, grouped);
    };
    // Inputs whose next copy is started exactly while step + n - 1 < steps:
    // one branch for all of those with the same n.
    auto groupedPrefetch = [&](Stream& s) {
      return !s.output && s.buffers > 1 && s.parts <= 1 && s.staticChange &&
             stepCond(s, s.buffers - 1) == StepCond::Valid;
    };
    auto afterBody = [&](Stream& s) {
      if (!s.output) {
        // n = 1: the next block, now that the body has read the buffer.
        if (s.buffers == 1) issueAhead(s, next, 1, 0);
        return;
      }
      // Outputs: write back when the block index is about to change (or at the end).
      std::vector<ScalarVal> cur = indexMap(s, ids);
      const StepCond known = stepCond(s, 0);
      ScalarVal moving;
      if (known != StepCond::Runtime) {
        moving = condAt(known, 0);
      } else {
        std::vector<ScalarVal> nidx = indexMap(s, next);
        moving = L_.scalarOp(llo::ScalarBin::Eq, stepsLeft(1), ScalarVal{true, 0, {}});
        for (size_t d = 0; d < cur.size(); ++d)
          moving = L_.scalarOp(llo::ScalarBin::Or, moving,
                               L_.scalarOp(llo::ScalarBin::Ne, nidx[d], cur[d]));
      }
      when(moving, [&] {
        int n = s.buffers;
        ScalarVal p = startCopyAfterWait(s, cur);
        if (n == 1) {
          waitCopy(s, p);
        } else if (n == 2) {
          copy(s.pending, p);
        } else {
          L_.emit(Opcode::SShrI, {s.pending, s.pending, I(8)});
          ScalarVal shifted = L_.mulImm(p, int64_t(1) << (8 * (n - 2)));
          L_.emit(Opcode::SOr, {s.pending, s.pending, L_.reg(shifted)});
        }
        bump(s.slot, n);
      });
    };
    // The next kernel's first blocks: the kernel before's write-backs first
    // when they hold rows or flags of the region (drained_ then holds for the
    // epilogue: the last step always runs this). Decided once for every copy
    // of the step's code.
    const bool drainFirst = !o_.prefetchNext.empty() && !drained_ &&
                            (o_.drainBefore.beforePrefetch || prefetchRegionOverlapsDrain());
    const bool waitFirst = stepOutlastsCopies();
    // One step's code, from the waits to the write-backs.
    auto stepCode = [&] {
      lateWaits.clear();
      next = advance(ids);
      if (smemState_) {
        for (Stream& s : streams_) {
          loadState(s);
          arrive(s, false);
          bindBlock(s);
          prefetch(s);
          storeState(s);
        }
      } else {
        for (Stream& s : streams_) arrive(s, !waitFirst);
        for (Stream& s : streams_) bindBlock(s);
        passableCopies_ = waitFirst;
        // Blocks that arrive whole first: on a shared queue (queueOf) they then
        // go ahead of the next parts.
        for (int n = 2; n <= kMaxBuffers; ++n) {
          bool any = false;
          for (Stream& s : streams_) any = any || (groupedPrefetch(s) && s.buffers == n);
          if (!any) continue;
          when(stepsLeft(n - 1), [&] {
            for (Stream& s : streams_)
              if (groupedPrefetch(s) && s.buffers == n) prefetch(s, true);
          });
        }
        for (Stream& s : streams_)
          if (s.parts <= 1 && !groupedPrefetch(s)) prefetch(s);
        for (Stream& s : streams_)
          if (s.parts > 1) prefetch(s);
        passableCopies_ = false;
        for (const auto& w : lateWaits) w();
      }
      // The next kernel's first blocks, once this kernel's last input block has
      // been started (none is started after this point): at the last step, or
      // earlier when the last steps start none (Kernel::tailStepsWithoutInputs).
      if (!o_.prefetchNext.empty()) {
        auto issue = [&] {
          if (drainFirst) drainBefore(DrainAt::BeforePrefetch);
          issueNextKernelBlocks();
        };
        const int64_t at = std::max<int64_t>(0, steps - 1 - k_.tailStepsWithoutInputs);
        if (steps == 1)
          issue();
        else
          when(L_.scalarOp(llo::ScalarBin::Eq, stepAt, ScalarVal{true, at, {}}), issue);
      }
      L_.setGrid(ids, k_.grid);
      expectArrivals(stepLo, stepHi);
      L_.beginBodyCopy();
      const double flopsBefore = L_.bodyFlops;
      L_.lowerOps(k_.body->body, k_.name);
      loweredStepFlops_ += L_.bodyFlops - flopsBefore;
      stepFlops_ += (L_.bodyFlops - flopsBefore) * double(stepHi - stepLo + 1);
      L_.awaitArrivals();
      L_.setDebug(L_.debugFor(k_.loc, k_.name));
      onceSignal(stepLo, stepHi);
      if (smemState_) next = advance(ids);  // nothing of the pipeline lives across the body
      for (Stream& s : streams_) {
        if (s.output || s.buffers == 1) {
          loadState(s);
          afterBody(s);
          storeState(s);
        }
      }
    };
    auto loopIds = [&] {  // grid indices count from 0; a dimension of one point is the constant 0
      ids.clear();
      for (size_t d = 0; d < rank; ++d)
        ids.push_back(k_.grid[d] == 1 ? ScalarVal{true, 0, {}} : R(g[d], true));
      stepAt = R(step, true);
    };
    auto constIds = [&](int64_t at) {  // the grid point of step `at`
      stepLo = stepHi = at;
      ids.assign(rank, ScalarVal{true, 0, {}});
      for (size_t d = rank; d-- > 0;) {
        ids[d] = ScalarVal::constant(at % k_.grid[d]);
        at /= k_.grid[d];
      }
    };
    auto loop = [&](int64_t trips, int64_t first, bool ranged) {
      stepLo = first;
      stepHi = first + trips - 1;
      L_.emit(Opcode::SLi, {count, I(trips)});
      int loopStart = L_.newBlock("step");
      loopIds();
      // In a peeled loop the step and the one grid index that moves lie in
      // [first, first + trips - 1]: the step's tests for its first and last
      // steps fold away.
      if (ranged) {
        L_.setRange(step, first, first + trips - 1);
        for (size_t d = 0; d < rank; ++d)
          if (k_.grid[d] != 1) L_.setRange(g[d], first, first + trips - 1);
      }
      stepCode();
      L_.clearRanges();
      int latch = L_.newBlock("next");
      for (size_t d = 0; d < rank; ++d)
        if (k_.grid[d] != 1) copy(g[d], next[d]);
      L_.emit(Opcode::SAddI, {step, step, I(1)});
      L_.emit(Opcode::Loop, {count, MOperand::block(loopStart)});
      L_.loops().push_back(LoopRange{loopStart, latch});
    };
    if (const int64_t tail = peeledTail(steps); tail > 0) {
      // The first and the last steps peeled off the loop (constant indices,
      // so their tests fold), the middle steps' tests decided by the range.
      // Each peeled step is a block of its own: the copies of one stream
      // must not share a block (see the prologue's).
      L_.newBlock("first step");
      constIds(0);
      stepAt = ScalarVal::constant(0);
      stepCode();
      for (size_t d = 0; d < rank; ++d)
        if (k_.grid[d] != 1) copy(g[d], next[d]);
      L_.emit(Opcode::SLi, {step, I(1)});
      loop(steps - 1 - tail, 1, true);
      for (int64_t at = steps - tail; at < steps; ++at) {
        L_.newBlock("peeled step");
        constIds(at);
        stepAt = ScalarVal::constant(at);
        stepCode();
      }
    } else {
      loop(steps, 0, false);
    }
    if (drainFirst) drained_ = true;
    L_.newBlock("epilogue");
    for (Stream& s : streams_) {
      if (!s.output) continue;
      // Deferred (Drain.h): the last write-back of a double-buffered output
      // stays in flight; the next kernel waits for its count on the flag.
      const int count = o_.deferWriteBack && s.buffers == 2 ? lastWriteBackCount(s) : -1;
      if (count > 0) {
        pending_.push_back({s.index, s.flag, count, s.bufRow, s.blockRows * s.buffers});
        continue;
      }
      loadState(s);
      for (int k = 0; k + 1 < s.buffers; ++k) {
        ScalarVal f = s.buffers == 2 ? R(s.pending) : field(s.pending, k);
        if (!f.isConst) f = R(L_.reg(f));
        when(f, [&] { waitCopy(s, f); });
      }
    }
    for (const Stream& s : streams_)  // the last step's signal (onceSignal)
      if (s.onceSignalled) L_.emit(Opcode::SyncWait, {I(s.flag), I(onceCount(s))});
    if (!drained_ && !o_.drainBefore.empty()) drainBefore(DrainAt::End);
    // A linked kernel falls through to the next one; every DMA it started has
    // been waited for (but the write-backs it defers, which the next kernel
    // waits for), so its flags are back at zero and its outputs in HBM.
    if (o_.standalone) L_.emit(Opcode::Halt, {});
  }

  // The input blocks that arrive in parts, for the body to wait for.
  // Whether stream `s` gets a new block at every step from `lo` to `hi` (1),
  // at none of them (0), or not known (-1).
  static int changesIn(const Stream& s, int64_t lo, int64_t hi) {
    if (s.changesAt.empty()) return -1;
    bool all = true, none = true;
    for (int64_t t = lo; t <= hi; ++t) {
      all = all && s.changesAt[size_t(t)];
      none = none && !s.changesAt[size_t(t)];
    }
    return all ? 1 : none ? 0 : -1;
  }

  // A block copied once (Stream::once): the body of every step that expects
  // its parts waits for their count; the prologue's copy counts it at the
  // first step, and the end of a step signals it for the next one when the
  // same code runs it (a loop), instead of a branch per step on whether its
  // block was new. The last step's signal is waited for after the loop.
  void onceSignal(int64_t lo, int64_t hi) {
    for (Stream& s : streams_) {
      if (!s.once || hi <= lo || changesIn(s, lo, hi) == 0) continue;
      L_.emit(Opcode::SyncSignal, {I(s.flag), I(onceCount(s))});
      s.onceSignalled = true;
    }
  }
  static int64_t onceCount(const Stream& s) { return int64_t(s.variants.at(0).descWords.size()); }

  // The body's waits for blocks that arrive in parts, at the steps from `lo`
  // to `hi`. None for a block no step there copies (a peeled loop's middle
  // steps keep the first step's block): nothing signals those waits there.
  void expectArrivals(int64_t lo, int64_t hi) {
    for (const Stream& s : streams_) {
      if (s.parts <= 1 || changesIn(s, lo, hi) == 0) continue;
      const CopyPlan& plan = s.variants.at(0).plan;
      Lowerer::Arrival a;
      a.flag = s.flag;
      a.region = L_.place(s.bodyArg).region;
      a.rowEnd = plan.partRowEnd;
      a.descriptors = plan.partDescriptors;
      a.byEntry = plan.partsByEntry;
      L_.expectArrival(s.bodyArg, std::move(a));
    }
  }

  // An output write-back of block `idx` from the current buffer, after waiting
  // for the write-back n - 1 before it (the oldest in the FIFO).
  ScalarVal startCopyAfterWait(Stream& s, const std::vector<ScalarVal>& idx) {
    if (s.buffers >= 2) {
      ScalarVal oldest = s.buffers == 2 ? R(s.pending) : field(s.pending, 0);
      if (!oldest.isConst) oldest = R(L_.reg(oldest));
      when(oldest, [&] { waitCopy(s, oldest); });
    }
    return startCopy(s, idx, R(s.slot));
  }
};

}  // namespace

namespace {
// A hash of everything in a block the scheduler reads (opcodes, operands,
// memory accesses), to tell which blocks a spill changed.
uint64_t blockFingerprint(const MBlock& b) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(b.instrs.size());
  for (const MInstr& mi : b.instrs) {
    mix(uint64_t(mi.op));
    for (const MOperand& o : mi.ops) {
      mix(uint64_t(o.kind) << 8 | uint64_t(o.cls));
      mix(uint64_t(o.value));
    }
    mix(uint64_t(mi.pairHi.kind) << 8 | uint64_t(mi.pairHi.value));
    mix(uint64_t(mi.mem.space) << 32 | uint64_t(uint32_t(mi.mem.region)));
    mix(uint64_t(mi.mem.write) << 40 | uint64_t(mi.mem.row) << 8 | uint64_t(mi.mem.rows));
    mix(uint64_t(uint32_t(mi.waitRegion)));
  }
  return h;
}

// lookahead: the list scheduler's (the kernel's schedule_lookahead, or 0).
CompiledKernel compileOnce(const llo::Kernel& k, const TargetInfo& t, const CompileOptions& o,
                           bool smemState, bool staticSteps, int64_t lookahead,
                           bool drainAtStart = false, std::vector<int> passedOver = {});
}  // namespace

// Below this a kernel's lookahead is not tried again at half (the
// scheduler's default is 1024).
constexpr int64_t kFallbackLookahead = 1024;

CompiledKernel compileKernel(const llo::Kernel& k, const TargetInfo& t, const CompileOptions& o) {
  if (o.smemBase < 0)
    throw CodegenError(
        fmt::format("kernel '{}': CompileOptions::smemBase is negative ({})", k.name, o.smemBase));
  // Out of scalar registers: move the pipeline's state out of them; then
  // decide every copy at run time, each in its own branch (the step's code
  // in fewer blocks keeps more scalars live at once).
  auto compile = [&](int64_t lookahead) {
    for (bool staticSteps : {true, false}) {
      for (bool smemState : {false, true}) {
        try {
          return compileOnce(k, t, o, smemState, staticSteps, lookahead);
        } catch (const RegisterPressureError& e) {
          if (e.cls != RegClass::Scalar || (!staticSteps && smemState)) throw;
        }
      }
    }
    throw CodegenError("internal: unreachable");
  };
  // A kernel's longer lookahead is a hint (longer register lifetimes): where
  // its registers run out, 3/4 of it, down to the default's schedule (the
  // attention backward alone: 3072 gives 116.0k cycles, 2048 136.0k, the
  // default 145.7k, against 109.0k at its 4096). The next kernel's first
  // blocks (prefetchNext) give way first: their copies' addresses take scalar
  // registers in the last step, and the caller compiles again without them
  // (ModuleLowering), as when VMEM has no room. In the 2-layer training step
  // the second attention backward ran out at 4096 and 3072 only with them:
  // 2304 cost it 3.49 M cycles against 3.15 M; the prefetch saves a few
  // thousand.
  // A kernel of the hint that spills beside those copies is compiled without
  // them too, and gives them up where its code is shorter then: in the 2-layer
  // training step the one-block attention forward spilled 8 registers beside
  // them and took 14,921 bundles, 7,210 without (3.82 M cycles against 1.83 M);
  // the second backward spills beside them and without them, and is shorter
  // with them (12,308 bundles against 15,941), so it keeps them. Only code
  // longer by more than a quarter gives them up: the tiny prefill's forward
  // on v5e spills 5 beside them in 5,337 bundles against 5,335, and giving
  // them up there cost each next kernel ~5k cycles (660,994 -> 684,495).
  for (int64_t lookahead = k.scheduleLookahead; lookahead > kFallbackLookahead;
       lookahead = lookahead * 3 / 4) {
    try {
      CompiledKernel out = compile(lookahead);
      if (!o.prefetchNext.empty() && out.stats.spills > 0) {
        CompileOptions bare = o;
        bare.prefetchNext = {};
        const int64_t without = compileKernel(k, t, bare).stats.bundles;
        if (without * 5 / 4 < out.stats.bundles)
          throw RegisterPressureError(
              fmt::format("kernel '{}' spills {} registers beside the next kernel's first "
                          "blocks: {} bundles, {} without them (more than a quarter more)",
                          k.name, out.stats.spills, out.stats.bundles, without),
              RegClass::Scalar);
      }
      return out;
    } catch (const RegisterPressureError&) {
      if (!o.prefetchNext.empty()) throw;
    }
  }
  return compile(0);
}

namespace {
// Whether a kernel's own VMEM rows or flags (allocated from one end of each)
// overlap the kernel before's write-backs still in flight.
bool ownMemoryOverlapsDrain(const MemoryPlan& mem, const TargetInfo& t, const DrainPlan& d) {
  const int64_t used = mem.vmemRowsUsed();
  const int64_t r0 = mem.fromTop() ? t.vmemRows() - used : 0;
  const int64_t r1 = mem.fromTop() ? t.vmemRows() : used;
  const int f0 = mem.fromTop() ? t.syncFlags - mem.flagsUsed() : 0;
  const int f1 = mem.fromTop() ? t.syncFlags : mem.flagsUsed();
  for (const PendingWriteBack& c : d.copies)
    if ((c.row < r1 && r0 < c.row + c.rows) || (c.flag >= f0 && c.flag < f1)) return true;
  return false;
}

// A branch to a block that holds only a jump goes to that jump's target
// instead (the join of a `when_else` nested in another's branch): one taken
// branch, not two.
void threadJumps(MFunction& fn) {
  auto finalTarget = [&](int64_t b) {
    for (size_t hops = 0; hops < fn.blocks.size(); ++hops) {
      const MBlock& blk = fn.blocks[size_t(b)];
      if (blk.instrs.size() != 1 || blk.instrs[0].op != Opcode::Jmp) break;
      int64_t next = blk.instrs[0].ops[0].value;
      if (next == b || next < 0) break;
      b = next;
    }
    return b;
  };
  for (MBlock& blk : fn.blocks)
    for (MInstr& mi : blk.instrs)
      if (mi.op == Opcode::Jmp || mi.op == Opcode::BrZ || mi.op == Opcode::BrNz)
        for (MOperand& op : mi.ops)
          if (op.kind == MOperand::Kind::Block && op.value >= 0) op.value = finalTarget(op.value);
}

// passedOver: per block, how many of its schedules (shortest first,
// scheduleBlockVariants) to pass over; they needed more registers than there
// are even after spilling.
CompiledKernel compileOnce(const llo::Kernel& k, const TargetInfo& t, const CompileOptions& o,
                           bool smemState, bool staticSteps, int64_t lookahead, bool drainAtStart,
                           std::vector<int> passedOver) {
  if (o.standalone && (o.deferWriteBack || !o.drainBefore.empty()))
    throw CodegenError(fmt::format(
        "kernel '{}': deferred write-backs need linked kernels (standalone = false)", k.name));
  // The kernel before's write-backs in flight hold rows or flags this kernel
  // uses: wait for them first.
  auto overlapsDrain = [&](const MemoryPlan& mem) {
    return !drainAtStart && !o.drainBefore.atStart && !o.drainBefore.empty() &&
           ownMemoryOverlapsDrain(mem, t, o.drainBefore);
  };
  MFunction fn;
  fn.name = k.name;
  MemoryPlan mem(t, o.smemBase);
  if (!o.prefetched.empty() || !o.prefetchNext.empty() || !o.inFlight.empty()) {
    if (o.standalone)
      throw CodegenError(fmt::format(
          "kernel '{}': cross-kernel prefetch needs a linked kernel (standalone = false)", k.name));
    if (!o.prefetchNext.empty() && !o.inFlight.empty())
      throw CodegenError(fmt::format(
          "kernel '{}': a later kernel's first blocks are in flight; it cannot start the next's",
          k.name));
    // The region kept free: the next kernel's, or a later one's already in flight.
    const PrefetchPlan& region = o.inFlight.empty() ? o.prefetchNext : o.inFlight;
    const bool fromTop = o.prefetched.empty() ? !region.fromTop : o.prefetched.fromTop;
    if (!region.empty() && region.fromTop == fromTop)
      throw CodegenError(fmt::format(
          "kernel '{}': a later kernel's prefetch region is at this kernel's own end of VMEM",
          k.name));
    mem.setEnds(fromTop, region.rows, region.flags);
  }
  std::vector<LoopRange> loops;
  std::vector<isa::DataSegment> data;
  Pipeline p(k, t, o, smemState, drainAtStart, staticSteps, fn, mem, loops, data);
  p.build();
  mem.check();
  if (overlapsDrain(mem))
    return compileOnce(k, t, o, smemState, staticSteps, lookahead, true, passedOver);
  threadJumps(fn);
  for (MBlock& b : fn.blocks) b.mxuCarry = b.mxuCarry || fn.mxuCarry;
  CompiledKernel out;
  std::vector<BlockSchedule> schedules;
  std::array<int, 3> used{};
  markUnspillable(fn);
  // A spill changes only the blocks that define or read the spilled
  // register; the others keep their schedules (scheduling is most of the
  // compile time of a kernel that spills many times).
  std::vector<uint64_t> scheduledFingerprint;
  // Per block the lookaheads of its schedules before any spill, shortest first.
  std::vector<std::vector<int>> lookaheadsBeforeSpills(fn.blocks.size());
  passedOver.resize(fn.blocks.size(), 0);
  for (int spills = 0;; ++spills) {
    schedules.resize(fn.blocks.size());
    scheduledFingerprint.resize(fn.blocks.size(), 0);
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      uint64_t f = blockFingerprint(fn.blocks[b]);
      if (spills == 0 || scheduledFingerprint[b] != f) {
        std::vector<BlockSchedule> variants =
            scheduleBlockVariants(fn.blocks[b], t, int(lookahead));
        if (spills == 0)
          for (const BlockSchedule& v : variants) lookaheadsBeforeSpills[b].push_back(v.lookahead);
        schedules[b] = std::move(variants[std::min(variants.size() - 1, size_t(passedOver[b]))]);
        scheduledFingerprint[b] = f;
      }
    }
    try {
      used = allocateRegisters(fn, schedules, loops, t);
      break;
    } catch (const RegisterPressureError& e) {
      if (e.cls == RegClass::Mask || e.spillCandidate < 0 || spills >= kMaxSpills) {
        // Spilling cannot make the block's schedule fit: its next schedule of
        // the same lookahead (another overlap window or reserve, usually a few
        // percent longer), from the code before any spill. The caller's
        // retries cost the whole kernel more (a shorter lookahead everywhere,
        // no prefetch of the next kernel, the pipeline's state in SMEM).
        const size_t b = size_t(e.block);
        if (e.block < 0 || b >= fn.blocks.size()) throw;
        const std::vector<int>& tried = lookaheadsBeforeSpills[b];
        size_t next = size_t(passedOver[b]) + 1;
        while (next < tried.size() && tried[next] != tried[size_t(passedOver[b])]) ++next;
        if (next >= tried.size()) throw;
        passedOver[b] = int(next);
        CompiledKernel again =
            compileOnce(k, t, o, smemState, staticSteps, lookahead, drainAtStart, passedOver);
        again.stats.scheduleFallbacks += 1;
        return again;
      }
      out.stats.spills += 1;
      out.stats.spillInstructions += spillRegister(fn, e.cls, e.spillCandidate, mem);
      mem.check();
      if (overlapsDrain(mem))
        return compileOnce(k, t, o, smemState, staticSteps, lookahead, true, passedOver);
    }
  }
  std::vector<uint32_t> starts;
  std::vector<isa::Bundle> bundles = assembleBundles(fn, schedules, t, &starts, o.firstBundle);
  // Every block must be free of hazards the machine would stall on.
  for (size_t b = 0; b < fn.blocks.size(); ++b) {
    std::vector<isa::Bundle> blk(bundles.begin() + starts[b], bundles.begin() + starts[b + 1]);
    const MBlock& mb = fn.blocks[b];
    auto problems = mb.mxuLoop && !mb.mxuCarry ? checkLoopBlockTiming(blk, t)
                                               : checkBlockTiming(blk, t, mb.mxuCarry, mb.mxuEntry);
    if (!problems.empty())
      throw CodegenError(fmt::format("internal: block {} of '{}' has a hazard: {}",
                                     fn.blocks[b].label, k.name, problems[0]));
  }
  isa::Program& prog = out.program;
  prog.chip = t.name;
  prog.code = bundles;
  prog.data = data;
  const uint32_t first = o.firstBundle;
  prog.symbols.push_back({k.name, first});
  prog.debugMap.push_back({first, first + uint32_t(bundles.size()), k.name, o.hloInstruction,
                           k.loc.file, uint32_t(std::max(0, k.loc.line))});
  auto addBuffer = [&](const llo::ArrayOperand& a, int64_t addr, isa::BufferRole role) {
    isa::BufferDesc b;
    b.name = a.name;
    b.shape = a.bufferShape();
    b.dtype = a.dtype;
    b.space = isa::MemorySpace::Hbm;
    b.address = uint64_t(addr);
    b.sizeBytes = uint64_t(llo::refBytes(llo::Type::ref(llo::MemSpace::Hbm, a.dtype, a.shape)));
    b.role = role;
    prog.buffers.push_back(b);
  };
  for (size_t i = 0; o.standalone && i < k.inputs.size(); ++i)
    addBuffer(k.inputs[i], p.hbmIn()[i], isa::BufferRole::Input);
  for (size_t i = 0; o.standalone && i < k.outputs.size(); ++i)
    addBuffer(k.outputs[i], p.hbmOut()[i], isa::BufferRole::Output);
  // Static costs: FLOPs of the body per step, and the block copies the
  // pipeline performs (index maps evaluated over the whole grid).
  isa::CostEntry cost;
  cost.opName = k.name;
  cost.flops = p.totalFlops();
  llo::Interpreter interp;
  for (const Stream& s : p.streams()) {
    if (k.numScalarPrefetch > 0) break;  // index maps read SMEM: counted at run time only
    std::vector<int32_t> prev;
    uint64_t bytes = 0, vmemBytes = 0;
    std::vector<int64_t> ids(k.grid.size(), 0);
    for (int64_t step = 0; step < k.gridPoints(); ++step) {
      std::vector<llo::Arg> args;
      for (int64_t id : ids) args.push_back(llo::Arg::ofScalar(int32_t(id)));
      std::vector<int32_t> idx = interp.run(*s.map->indexMap, args, llo::GridContext{k.grid, ids});
      if (idx != prev) {
        size_t v = 0;
        for (size_t j = 0; j < s.raggedDims.size(); ++j) {
          size_t d = s.raggedDims[j];
          if (idx[d] == s.array->shape[d] / s.map->blockShape[d]) v |= size_t(1) << j;
        }
        bytes += uint64_t(s.variants[v].plan.bytes);
        vmemBytes += uint64_t(llo::refBytes(s.blockType));
      }
      prev = idx;
      for (size_t d = ids.size(); d-- > 0;) {
        if (++ids[d] < k.grid[d]) break;
        ids[d] = 0;
      }
    }
    if (s.output) {
      cost.hbmBytesWritten += bytes;
      cost.vmemBytesRead += vmemBytes;
    } else {
      cost.hbmBytesRead += bytes;
      cost.vmemBytesWritten += vmemBytes;
    }
  }
  prog.costs.push_back(cost);
  out.stats.bundles = int64_t(bundles.size());
  for (const MBlock& b : fn.blocks) out.stats.instructions += int64_t(b.instrs.size());
  out.stats.scalarRegs = used[0];
  out.stats.vectorRegs = used[1];
  out.stats.maskRegs = used[2];
  out.stats.vmemRows = mem.vmemRowsUsed();
  out.stats.smemWords = mem.smemWordsUsed();
  out.stats.flags = mem.flagsUsed();
  out.firstBundle = o.firstBundle;
  out.smemBase = o.smemBase;
  out.smemWords = mem.smemWordsUsed();
  out.standalone = o.standalone;
  out.pendingWriteBacks = p.pendingWriteBacks();
  out.drainedAt = p.drainedAt();
  if (o.printMachineCode) out.machineText = printMachineCode(fn, bundles, starts, first);
  return out;
}

}  // namespace

}  // namespace tpusim::kernels::codegen
