#include "compiler/lower/collectives/LineExchangeReduce.h"

#include <algorithm>
#include <map>
#include <string>

#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/SmemTables.h"
#include "compiler/lower/collectives/VectorCombine.h"
#include "isa/Isa.h"

namespace tpusim::lower {

using isa::Opcode;

namespace {

// Registers (SmemTables.h holds 2, 4 and 7, VectorCombine.h 10-12).
constexpr int kId = kTableId, kPeer = 3, kVal = 8, kSrc = 9;
constexpr int kLoadQueues = 2;               // queues 0 and 1 load a combine's blocks
constexpr int kFirstSendQueue = 2;           // queues 2 and 3 send
constexpr uint64_t kMaxRegion = 4ull << 20;  // the largest piece (of all its chunks) in VMEM
constexpr int kMaxPieces = 64;
constexpr double kPieceOverhead = 200;
constexpr double kConcurrentHbmShare = 0.6;  // scalar and DMA issue of one piece's combine

int elementBytes(hlo::PrimitiveType t) { return t == hlo::PrimitiveType::BF16 ? 2 : 4; }

// One part's phase: blocks reduced along `dim`.
struct Phase {
  int part = 0, phase = 0, dim = 0;
  std::vector<int> earlier, later;  // dimensions reduced before / after (later sorted)
  uint64_t lo = 0, bytes = 0;       // the part's byte range of each chunk
  int64_t blockChunks = 1;          // chunks per block (the later dimensions' sizes)
  int pieces = 1;
  uint64_t pieceBytes = 0;  // of each chunk's range
  int64_t regionRows = 0;   // VMEM rows of each of its m regions (a piece of all its chunks)
};

class ExchangePlan {
 public:
  ExchangePlan(const GridReduce& g, const target::ChipConfig& chip, int subParts)
      : g_(g), chip_(chip), subParts_(subParts) {
    GridGeometry geo = gridGeometry(g);
    stride_ = std::move(geo.stride);
    devices_ = geo.devices;
    coords_ = std::move(geo.coords);
    build();
  }

  bool ok() const { return ok_; }
  const std::vector<Phase>& phases() const { return phases_; }
  int64_t devices() const { return devices_; }
  int size(int dim) const { return g_.slice[size_t(dim)]; }
  int coord(int64_t dev, int dim) const { return coords_[size_t(dev)][size_t(dim)]; }
  int dims() const { return int(g_.gridDims.size()); }
  // Parts: subParts per dimension order; part j takes order j mod D.
  int parts() const { return dims() * subParts_; }
  int subParts() const { return subParts_; }
  const Phase& at(int part, int phase) const { return phases_[size_t(part * dims() + phase)]; }

  // The device at `dev`'s coordinates with coordinate `t` along `dim`.
  int64_t along(int64_t dev, int dim, int t) const {
    std::vector<int> c = coords_[size_t(dev)];
    c[size_t(dim)] = t;
    int64_t id = 0;
    for (size_t k = 0; k < c.size(); ++k) id = id * g_.slice[k] + c[k];
    return id;
  }
  // Byte address, in a buffer laid out as the operand (members x chunk), of
  // piece q of the block with coordinate t along the phase's dimension at dev.
  uint64_t blockAddress(uint64_t base, const Phase& ph, int64_t dev, int t, int q) const {
    int64_t slot = int64_t(t) * stride_.at(ph.dim);
    for (int e : ph.earlier) slot += coord(dev, e) * stride_.at(e);
    return base + uint64_t(slot) * g_.chunk + ph.lo + uint64_t(q) * ph.pieceBytes;
  }
  // A block (inner bytes of each chunk) between a buffer laid out as the
  // operand (a `strided` side) and a dense one.
  isa::DmaDescriptor descriptor(const Phase& ph, uint64_t inner, isa::MemorySpace src,
                                isa::MemorySpace dst, bool srcStrided, bool dstStrided) const {
    return gridChunkDescriptor(g_, stride_, ph.later, inner, src, dst, srcStrided, dstStrided);
  }
  uint64_t pieceTotal(const Phase& ph) const { return ph.pieceBytes * uint64_t(ph.blockChunks); }
  // VMEM row of a phase's region r (a combine's r-th block): regions
  // alternate between the two halves of the banks, so a chained combine's
  // two operands never share a bank. Each phase's regions are sized for its
  // own pieces: a phase's combines finish (their store waited for) before
  // the next phase's start, and one size for all (the largest piece) put a
  // 9-chip line's regions past VMEM where a 2-chip line's pieces were the
  // large ones (tiny8 2x9 wrapping: region 6 at 0x42000 of 0x40000).
  int64_t regionRow(const Phase& ph, int r) const {
    return int64_t(r) * ph.regionRows + (r % 2) * int64_t(chip_.vmem.banks) / 2;
  }

  // The emitted schedule, replayed: after the handshake each sub-part's
  // first-phase blocks go out once the previous sub-part's have left; a
  // phase's blocks arrive after its busiest link's transfers (queued behind
  // what that dimension already carries) and its farthest hops; the combines
  // run one after the other on the scalar thread, each sending its part's
  // next phase.
  double cycles() const {
    const double bw = chip_.ici.link_bytes_per_second / chip_.core.clock_hz;
    // A combine's loads run on two queues at once, concurrent streams that
    // meet in the same banks: ~60% of the HBM peak (docs/performance.md, HBM
    // model, dma-stream-all-queues).
    const double hbm = kConcurrentHbmShare * chip_.hbmPeakBytesPerSecond() / chip_.core.clock_hz;
    const double lat = double(chip_.ici.latency_cycles);
    auto hopsOf = [&](const Phase& ph) {
      const int m = size(ph.dim);
      return sliceWraps(m, chip_.ici) ? double(m / 2) : double(m - 1);
    };
    auto wireOf = [&](const Phase& ph) {
      const int m = size(ph.dim);
      return double(busiestLoad(m, sliceWraps(m, chip_.ici))) * double(ph.bytes) *
             double(ph.blockChunks) / bw;
    };
    auto combineOf = [&](const Phase& ph) {
      const int m = size(ph.dim);
      const double piece = double(pieceTotal(ph));
      // Per piece: m loads and a store through HBM, m - 1 vector loops.
      return double(ph.pieces) *
             (kPieceOverhead + double(m + 1) * piece / hbm + double(m - 1) * piece / 1024.0);
    };
    double readyHops = 0;
    for (const Phase& ph : phases_) readyHops = std::max(readyHops, hopsOf(ph));
    double core = readyHops * lat;
    std::map<int, double> linkFree;  // per dimension
    std::vector<double> arrive(phases_.size(), 0);
    auto send = [&](int j, int p) {
      const Phase& ph = at(j, p);
      double& free = linkFree[ph.dim];
      free = std::max(free, core) + wireOf(ph);
      arrive[size_t(j * dims() + p)] = free + hopsOf(ph) * lat;
      return free;
    };
    for (int k = 0; k < subParts_; ++k) {
      double left = core;
      for (int j = k * dims(); j < (k + 1) * dims(); ++j) left = std::max(left, send(j, 0));
      if (k + 1 < subParts_) core = left;  // the next sub-part waits for these to leave
    }
    for (int p = 0; p < dims(); ++p)
      for (int j = 0; j < parts(); ++j) {
        core = std::max(core, arrive[size_t(j * dims() + p)]) + combineOf(at(j, p));
        if (p + 1 < dims()) send(j, p + 1);
      }
    return core;
  }
  // Do the hops outweigh the transfers: is the first phase's busiest link
  // busy for less than the extra hops of the handshake (every chip of a line,
  // against the rings' neighbours)?
  bool hopBound() const {
    const double bw = chip_.ici.link_bytes_per_second / chip_.core.clock_hz;
    double wire = 0, extraHops = 0;
    for (int j = 0; j < parts(); ++j) {
      const Phase& ph = at(j, 0);
      const int m = size(ph.dim);
      const bool ring = sliceWraps(m, chip_.ici);
      extraHops = std::max(extraHops, (ring ? m / 2 : m - 1) - 1.0);
      wire = std::max(
          wire, double(busiestLoad(m, ring)) * double(ph.bytes) * double(ph.blockChunks) / bw);
    }
    return wire < extraHops * double(chip_.ici.latency_cycles);
  }

 private:
  // Blocks on the busiest link direction of an exchange among m chips of a
  // line (or ring: the shorter way round, as the fabric routes).
  static int64_t busiestLoad(int m, bool ring) {
    std::map<std::pair<int, int>, int64_t> load;
    int64_t busiest = 0;
    for (int a = 0; a < m; ++a)
      for (int t = 0; t < m; ++t) {
        if (a == t) continue;
        int fwd = ((t - a) % m + m) % m;
        int dir = ring ? (fwd <= m - fwd ? 1 : -1) : (t > a ? 1 : -1);
        for (int c = a; c != t; c = ((c + dir) % m + m) % m)
          busiest = std::max(busiest, ++load[{c, dir}]);
      }
    return busiest;
  }

  void build() {
    const int D = dims();
    const uint64_t elem = uint64_t(elementBytes(g_.type));
    const uint64_t elems = g_.chunk / elem;
    const int P = parts();
    ok_ = D > 0 && g_.chunk % elem == 0 && elems >= uint64_t(P);
    for (int j = 0; j < P && ok_; ++j) {
      const uint64_t lo = elems * uint64_t(j) / uint64_t(P) * elem;
      const uint64_t hi = elems * uint64_t(j + 1) / uint64_t(P) * elem;
      std::vector<int> earlier;
      for (int p = 0; p < D; ++p) {
        Phase ph;
        ph.part = j;
        ph.phase = p;
        ph.dim = g_.gridDims[size_t((j % D + p) % D)];
        ph.earlier = earlier;
        for (int q = p + 1; q < D; ++q) ph.later.push_back(g_.gridDims[size_t((j % D + q) % D)]);
        std::sort(ph.later.begin(), ph.later.end());
        for (int e : ph.later) ph.blockChunks *= size(e);
        ph.lo = lo;
        ph.bytes = hi - lo;
        // The fewest pieces (a power of two, whole elements) whose m blocks fit VMEM.
        const uint64_t m = uint64_t(size(ph.dim));
        ph.pieces = 0;
        for (int count = 1; count <= kMaxPieces; count *= 2) {
          if (ph.bytes % (uint64_t(count) * elem) != 0) break;
          const uint64_t total = ph.bytes / uint64_t(count) * uint64_t(ph.blockChunks);
          if (total <= kMaxRegion && m * (total + regionPad()) <= uint64_t(chip_.vmem.bytes) / 2) {
            ph.pieces = count;
            break;
          }
        }
        if (ph.pieces == 0) {
          ok_ = false;
          break;
        }
        ph.pieceBytes = ph.bytes / uint64_t(ph.pieces);
        ph.regionRows = regionRowsFor(pieceTotal(ph));
        // Its m regions (the last one shifted) within VMEM.
        if ((int64_t(m) * ph.regionRows) * isa::kVmemRowBytes > int64_t(chip_.vmem.bytes)) {
          ok_ = false;
          break;
        }
        phases_.push_back(ph);
        earlier.push_back(ph.dim);
      }
    }
  }
  // Rows of a region holding `bytes`: whole vregs (the loop rounds up), whole
  // bank rounds, and room for the shift.
  int64_t regionRowsFor(uint64_t bytes) const {
    const int64_t banks = std::max<int64_t>(1, chip_.vmem.banks);
    const int64_t rows = int64_t((bytes + isa::kVmemRowBytes - 1) / isa::kVmemRowBytes);
    return (rows + 8 + banks - 1) / banks * banks + banks;
  }
  uint64_t regionPad() const { return uint64_t(std::max<int64_t>(1, chip_.vmem.banks)) * 2 * 512; }

  const GridReduce& g_;
  const target::ChipConfig& chip_;
  std::map<int, int64_t> stride_;  // slot stride of each grid dimension
  int64_t devices_ = 0;
  std::vector<std::vector<int>> coords_;
  std::vector<Phase> phases_;  // part-major
  int subParts_ = 1;
  bool ok_ = true;
};

}  // namespace

namespace {

// Sub-parts per dimension order: 2 lets the first half's next phase start
// while the second half is on the wire (each part and phase has an arrival
// flag: 2 D^2, the grid's stream flags); the one with the lower estimate.
int bestSubParts(const GridReduce& g, const target::ChipConfig& chip) {
  int best = 1;
  double cycles = ExchangePlan(g, chip, 1).cycles();
  ExchangePlan two(g, chip, 2);
  if (two.ok() && two.cycles() < cycles) best = 2;
  return best;
}

}  // namespace

bool lineExchangeReduceFits(const GridReduce& g, const target::ChipConfig& chip) {
  if (!gridReduceSupports(g.type, g.op) || g.gridDims.empty() ||
      int(g.gridDims.size()) > kMaxGridGatherDims)
    return false;
  ExchangePlan plan(g, chip, 1);
  if (!plan.ok()) return false;
  const uint64_t n = uint64_t(g.groups.at(0).size());
  return n * g.chunk < (uint64_t(1) << 31) && g.operand + n * g.chunk < (uint64_t(1) << 32) &&
         g.result + g.chunk < (uint64_t(1) << 32);
}

double lineExchangeReduceCycles(const GridReduce& g, const target::ChipConfig& chip) {
  return ExchangePlan(g, chip, bestSubParts(g, chip)).cycles();
}

bool lineExchangeHopBound(const GridReduce& g, const target::ChipConfig& chip) {
  return ExchangePlan(g, chip, 1).hopBound();
}

void emitLineExchangeReduce(ControlCode& code, const GridReduce& g, const target::ChipConfig& chip,
                            const std::vector<uint64_t>& scratch, const GridReduceFlags& flags) {
  ExchangePlan plan(g, chip, bestSubParts(g, chip));
  SmemTables tables(code);
  CombineLoop combine(code, chip, g.type, g.op);
  const int64_t devices = plan.devices();
  const int D = plan.dims();
  const uint64_t work = scratch.at(0);
  auto landing = [&](const Phase& ph) { return scratch.at(size_t(1 + ph.phase)); };
  auto source = [&](const Phase& ph) { return ph.phase == 0 ? g.operand : work; };
  // One arrival flag per part and phase (at most 2 D^2: the grid's stream flags).
  auto arrivals = [&](const Phase& ph) { return flags.firstStream - (ph.part * D + ph.phase); };
  auto setAddr = [&](int64_t word, int field, const std::vector<uint32_t>& values,
                     const std::string& what) {
    tables.load(values, kVal, what);
    code.emit({makeInstruction(Opcode::SLi, {kSrc, word})});
    code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, field})});
  };
  code.emit({makeInstruction(Opcode::ChipId, {kId})});

  // Ready: every chip of each line this chip exchanges along.
  int64_t readySignals = 0;
  for (int d : g.gridDims) {
    const int m = plan.size(d);
    for (int k = 1; k < m; ++k) {
      std::vector<uint32_t> peer;
      for (int64_t dev = 0; dev < devices; ++dev)
        peer.push_back(uint32_t(plan.along(dev, d, (plan.coord(dev, d) + k) % m)));
      tables.load(peer, kPeer, "line exchange peers");
      code.emit({makeInstruction(Opcode::SyncRemote, {kPeer, flags.ready, 1})});
      ++readySignals;
    }
  }
  code.emit({makeInstruction(Opcode::SyncWait, {flags.ready, readySignals})});

  // Descriptors per phase: the block sent, a piece loaded into each region,
  // the reduced piece stored.
  using isa::MemorySpace;
  struct Words {
    int64_t send = 0, store = 0;
    std::vector<int64_t> load;
  };
  std::vector<Words> words;
  for (const Phase& ph : plan.phases()) {
    const bool last = ph.phase == D - 1;
    Words w;
    w.send = code.descriptorWords(
        {plan.descriptor(ph, ph.bytes, MemorySpace::Hbm, MemorySpace::Hbm, true, true)},
        "line exchange: block sent");
    for (int r = 0; r < plan.size(ph.dim); ++r) {
      isa::DmaDescriptor d =
          plan.descriptor(ph, ph.pieceBytes, MemorySpace::Hbm, MemorySpace::Vmem, true, false);
      d.dstAddr = uint64_t(plan.regionRow(ph, r)) * isa::kVmemRowBytes;
      w.load.push_back(code.descriptorWords({d}, "line exchange: block loaded"));
    }
    isa::DmaDescriptor st =
        plan.descriptor(ph, ph.pieceBytes, MemorySpace::Vmem, MemorySpace::Hbm, false, !last);
    st.srcAddr = uint64_t(plan.regionRow(ph, plan.size(ph.dim) - 1)) * isa::kVmemRowBytes;
    w.store = code.descriptorWords({st}, "line exchange: reduced piece");
    words.push_back(w);
  }
  auto wordsOf = [&](const Phase& ph) -> const Words& {
    return words[size_t(ph.part * D + ph.phase)];
  };

  int64_t sends = 0;
  // Every other chip of the line gets its block (at this chip's coordinate).
  auto send = [&](const Phase& ph) {
    const int m = plan.size(ph.dim);
    const Words& w = wordsOf(ph);
    for (int k = 1; k < m; ++k) {
      std::vector<uint32_t> peer, from, to;
      for (int64_t dev = 0; dev < devices; ++dev) {
        const int a = plan.coord(dev, ph.dim), t = (a + k) % m;
        const int64_t target = plan.along(dev, ph.dim, t);
        peer.push_back(uint32_t(target));
        from.push_back(uint32_t(plan.blockAddress(source(ph), ph, dev, t, 0)));
        to.push_back(uint32_t(plan.blockAddress(landing(ph), ph, target, a, 0)));
      }
      setAddr(w.send, 1, from, "line exchange blocks sent");
      setAddr(w.send, 3, to, "line exchange landing slots");
      tables.load(peer, kPeer, "line exchange peers");
      code.emit({makeInstruction(Opcode::SLi, {kSrc, w.send})});
      code.emit({makeInstruction(Opcode::DmaRemote, {kSrc, kPeer, flags.sent[0], arrivals(ph),
                                                     kFirstSendQueue + (k + ph.part) % 2})});
      ++sends;
    }
  };
  // The m blocks of the line, chained in coordinate order, to the next phase.
  auto reduce = [&](const Phase& ph) {
    const int m = plan.size(ph.dim);
    const bool last = ph.phase == D - 1;
    const Words& w = wordsOf(ph);
    code.emit({makeInstruction(Opcode::SyncWait, {arrivals(ph), m - 1})});
    const int64_t vregs =
        int64_t((plan.pieceTotal(ph) + 8 * isa::kVmemRowBytes - 1) / (8 * isa::kVmemRowBytes));
    for (int q = 0; q < ph.pieces; ++q) {
      for (int r = 0; r < m; ++r) {
        std::vector<uint32_t> from;
        for (int64_t dev = 0; dev < devices; ++dev)
          from.push_back(uint32_t(plan.coord(dev, ph.dim) == r
                                      ? plan.blockAddress(source(ph), ph, dev, r, q)
                                      : plan.blockAddress(landing(ph), ph, dev, r, q)));
        setAddr(w.load[size_t(r)], 1, from, "line exchange blocks combined");
        code.emit({makeInstruction(Opcode::SLi, {kSrc, w.load[size_t(r)]})});
        code.emit({makeInstruction(Opcode::Dma, {kSrc, flags.local, r % kLoadQueues})});
      }
      code.emit({makeInstruction(Opcode::SyncWait, {flags.local, m})});
      for (int r = 1; r < m; ++r) {
        code.emit({makeInstruction(Opcode::SLi, {kOwnRow, plan.regionRow(ph, r - 1)}),
                   makeInstruction(Opcode::SLi, {kSlotRow, plan.regionRow(ph, r)})});
        combine.emit(vregs, plan.regionRow(ph, r - 1), plan.regionRow(ph, r));
      }
      std::vector<uint32_t> to;
      for (int64_t dev = 0; dev < devices; ++dev)
        to.push_back(uint32_t(last ? g.result + ph.lo + uint64_t(q) * ph.pieceBytes
                                   : plan.blockAddress(work, ph, dev, plan.coord(dev, ph.dim), q)));
      setAddr(w.store, 3, to, "line exchange reduced blocks");
      code.emit({makeInstruction(Opcode::SLi, {kSrc, w.store})});
      code.emit({makeInstruction(Opcode::Dma, {kSrc, flags.local, 0})});
      code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
    }
  };

  // Sub-part k's first blocks go out once sub-part k - 1's have left, so
  // that the latter arrive (and go on to their next phase) first.
  int64_t waited = 0;
  for (int k = 0; k < plan.subParts(); ++k) {
    if (k > 0) {
      code.emit({makeInstruction(Opcode::SyncWait, {flags.sent[0], sends - waited})});
      waited = sends;
    }
    for (int j = k * D; j < (k + 1) * D; ++j) send(plan.at(j, 0));
  }
  for (int p = 0; p < D; ++p)
    for (int j = 0; j < plan.parts(); ++j) {
      reduce(plan.at(j, p));
      if (p + 1 < D) send(plan.at(j, p + 1));
    }
  // Every send has left (the operand may be reused after the collective).
  code.emit({makeInstruction(Opcode::SyncWait, {flags.sent[0], sends - waited})});
}

}  // namespace tpusim::lower
