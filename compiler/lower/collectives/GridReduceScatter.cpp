#include "compiler/lower/collectives/GridReduceScatter.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "compiler/lower/collectives/GridAllGather.h"
#include "compiler/lower/collectives/HamiltonianRing.h"
#include "compiler/lower/collectives/LineExchangeReduce.h"
#include "compiler/lower/collectives/SmemTables.h"
#include "compiler/lower/collectives/VectorCombine.h"
#include "isa/Isa.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::lower {

using hlo::HloOpcode;
using hlo::PrimitiveType;
using isa::Instruction;
using isa::Opcode;

namespace {

// Registers (SmemTables.h holds 2, 4 and 7; the module's own code keeps
// nothing in registers across ops).
constexpr int kId = kTableId, kPeer = 3, kVal = 8, kSrc = 9;  // VectorCombine.h: 10-12
constexpr int kLoadQueues[2] = {0, 1};  // the two loads of a piece run side by side
constexpr int kSendQueues[2] = {2, 3};  // sends (per direction) never hold up the loads
constexpr int kAheadBuffers = 4;        // own buffers where own loads run ahead (below)
// In rounds a ring's finals come together (one per stream, every fourth
// action) and their stores share HBM with the own loads of the actions
// after them: loaded three actions ahead, a round's last finals waited
// ~1.1-1.5k cycles for their own pieces (v4 4x4x4 64 MiB: 295,895 cycles;
// five buffers 288,766, six 289,731, eight 290,349).
constexpr int kAheadBuffersInRounds = 5;
constexpr int kSlots = 8;                     // VMEM slots a sent piece stays in until it has left
constexpr uint64_t kTargetPiece = 256 << 10;  // the largest piece (of all its chunks)
constexpr int kMaxPieces = 64;
// A ring's later phases (blocks a quarter of the first's or less) in at
// least this many pieces where a block's transfer takes at least half a hop:
// in one piece, each step waits for the whole block's transfer and hop
// before the next chip can combine (v4 4x4x4 16 MiB: phases 1 and 2 took
// ~26k cycles for ~15k of link time; two pieces: -4%). The estimate the
// algorithm choice takes stays the best count's (smaller blocks lose: tiny8
// 2x4 128 KiB was 2.9% slower in two).
constexpr int kMinLaterPieces = 2;
// Half rings (Stream::halfRing) on rings of at least this many chips: they
// save n - 1 - n / 2 hops of a chain, and cost a combine per piece more at
// the owner, an even piece count and twice the bytes per stream (landing
// slots that no longer fit VMEM). v5e 16x16 (15 -> 8 hops) gains (16 MiB
// reduce-scatter 167,368 -> 154,985 cycles); on v4 4x4x4's 4-rings (3 -> 2
// hops) they lost: 16 MiB 72,260 -> 93,699 cycles (80,793 with the first
// phase in whole rings).
constexpr int kMinHalfRing = 8;

int elementBytes(PrimitiveType t) { return t == PrimitiveType::BF16 ? 2 : 4; }

int64_t deviceAt(const std::vector<int>& coords, const std::vector<int>& dims) {
  int64_t id = 0;
  for (size_t k = 0; k < dims.size(); ++k) id = id * dims[k] + coords[k];
  return id;
}

// What one device does in one action (stream, step, piece). On a half ring
// (Stream::halfRing) the owner combines two arrivals: the first of its two
// finals keeps its sum in its out slot (FinalKeep), the second adds the
// other arrival to it and stores the result (Final).
enum class Role { None, SendOwn, CombineSend, FinalKeep, Final };
bool isFinal(Role r) { return r == Role::Final || r == Role::FinalKeep; }

// One direction of one part in one phase: partial sums move along `dim`.
struct Stream {
  int part = 0, phase = 0, dir = 0, dim = 0;
  bool ring = false;
  // A ring of a grid dimension half way round each way: both directions
  // carry the part's whole range, each from the chips of its half of the
  // ring (n / 2 hops, not n - 1, for the same bytes per link), and the owner
  // combines the two arrivals. An even ring's opposite chip adds its
  // contribution to half of the pieces each way (splitFirst: those `late`
  // pieces start a step later, one hop fewer).
  bool halfRing = false, splitFirst = false;
  int steps = 0;                       // steps of a chain: hops + 1
  uint64_t offset = 0, bytes = 0;      // byte range of each chunk it reduces
  uint64_t partLo = 0, partBytes = 0;  // its part's byte range of each chunk
  std::vector<int> earlier;            // dimensions reduced in earlier phases
  std::vector<int> later;              // dimensions still to reduce (its blocks span them)
  int64_t blockChunks = 1;             // chunks per block (the later dimensions' sizes)
  int pieces = 1;
  uint64_t pieceBytes = 0;  // of each chunk's range
  // On a line a chip handles piece x of its steps at action x + lag x its
  // position (mirrored: along the flow), so that it waits for a piece its
  // upstream neighbour sent `lag` actions earlier, not in the same one.
  int lag = 0;
  // Set: a ring's actions in rounds (Planner::skewRings), or a half ring's
  // in step order: action -> (step, piece).
  std::vector<std::pair<int64_t, int>> order;
  bool rounds = false;
  // A split half ring's pieces that start at step 1 (one hop fewer): the
  // odd ones going forward, the even ones backward. Both ways take the
  // pieces in index order at every step, so a piece's two finals come
  // together in the order (the second reads the first's out slot); with
  // the halves interleaved, neither way's step 1 starts with all of its
  // combines waiting for step 0's arrivals.
  bool late(int q) const { return splitFirst && (dir > 0) == (q % 2 == 1); }
  int64_t actions = 0;               // per stream: steps x pieces + the lags
  double stepCycles = 0, start = 0;  // estimated cycles per action, and of the first
  // Its estimated cycles for the algorithm choice: the pieces' hops plus one
  // combine's work per piece on the busiest link (the per-action cycles above
  // also charge the scalar thread's sharing, which orders the actions).
  double estimate = 0;
};

class Planner {
 public:
  // `mayRound`: the rings' actions may be taken in rounds (skewRings) where
  // their landing slots in step order would not fit VMEM. `halfRings`: a
  // grid dimension's rings go half way round each way (Stream::halfRing).
  Planner(const GridReduce& g, const target::ChipConfig& chip, bool mayRound = false,
          bool halfRings = true)
      : g_(g), chip_(chip), halfRings_(halfRings) {
    GridGeometry geo = gridGeometry(g);
    stride_ = std::move(geo.stride);
    devices_ = geo.devices;
    coords_ = std::move(geo.coords);
    const uint64_t vmem = uint64_t(chip.vmem.bytes);
    slotCap_ = std::min<uint64_t>(kTargetPiece, vmem / (2 * (kSlots + 2)));
    slotCap_ = slotCap_ / 4096 * 4096;
    buildStreams();
    if (mayRound && ok_ && !firstPhaseSlotsFit()) skewRings();
  }

  const std::vector<Stream>& streams() const { return streams_; }
  int64_t devices() const { return devices_; }
  int size(int dim) const { return g_.slice[size_t(dim)]; }
  bool ok() const { return ok_; }
  uint64_t slotBytes() const { return slotBytes_; }
  // Are the rings' actions taken in rounds (skewRings)?
  bool inRounds() const {
    return std::any_of(streams_.begin(), streams_.end(), [](const Stream& s) { return s.rounds; });
  }
  int64_t bankShift() const { return int64_t(chip_.vmem.banks) / 2; }

  int coord(int64_t dev, int dim) const { return coords_[size_t(dev)][size_t(dim)]; }

  // The (step, piece) `dev` handles at action x of stream s, if any.
  std::optional<std::pair<int64_t, int>> stepOf(const Stream& s, int64_t dev, int64_t x) const {
    const int m = size(s.dim), a = coord(dev, s.dim);
    const int b = s.ring ? 0 : s.dir > 0 ? a : m - 1 - a;
    int64_t y = x - int64_t(b) * s.lag;
    if (!s.order.empty()) {
      if (y < 0 || y >= int64_t(s.order.size())) return std::nullopt;
      return s.order[size_t(y)];
    }
    if (y < 0 || y >= int64_t(m) * s.pieces) return std::nullopt;
    return std::make_pair(y / s.pieces, int(y % s.pieces));
  }
  // The role of `dev` at step k of stream s for piece q, and the target
  // (coordinate along s.dim) whose partial sum it handles. A half ring's
  // finals are all Final here (emitGridReduceScatter tells the pair apart).
  std::pair<Role, int> role(const Stream& s, int64_t dev, int64_t k, int q) const {
    const int m = size(s.dim), a = coord(dev, s.dim);
    if (s.ring) {
      // Step k's chip is s.steps - 1 - k hops upstream of its target.
      const int64_t h = s.steps - 1;
      int t = int(((a + s.dir * (h - k)) % m + m) % m);
      const int64_t first = s.late(q) ? 1 : 0;
      if (k < first) return {Role::None, t};
      if (k == first) return {Role::SendOwn, t};
      return {k < h ? Role::CombineSend : Role::Final, t};
    }
    // A line: mirrored so that partial sums move towards higher b.
    const int b = s.dir > 0 ? a : m - 1 - a;
    const int sends = m - 1 - b;
    if (k < sends) {
      int tb = m - 1 - int(k);
      return {b == 0 ? Role::SendOwn : Role::CombineSend, s.dir > 0 ? tb : m - 1 - tb};
    }
    if (k == sends && b > 0) return {Role::Final, a};
    return {Role::None, a};
  }

  // Byte address, in a buffer laid out as the operand (members x chunk), of
  // piece q of the block of target t along s.dim at device dev.
  uint64_t blockAddress(uint64_t base, const Stream& s, int64_t dev, int t, int q) const {
    int64_t slot = g_.ringOrder.empty() ? int64_t(t) * stride_.at(s.dim) : g_.ringOrder[size_t(t)];
    for (int e : s.earlier) slot += coord(dev, e) * stride_.at(e);
    return base + uint64_t(slot) * g_.chunk + s.offset + uint64_t(q) * s.pieceBytes;
  }
  // The descriptor of a piece between a buffer laid out as the operand
  // (`strided` side) and a contiguous one.
  isa::DmaDescriptor pieceDescriptor(const Stream& s, isa::MemorySpace src, isa::MemorySpace dst,
                                     bool srcStrided, bool dstStrided) const {
    return gridChunkDescriptor(g_, stride_, s.later, s.pieceBytes, src, dst, srcStrided,
                               dstStrided);
  }
  uint64_t pieceTotal(const Stream& s) const { return s.pieceBytes * uint64_t(s.blockChunks); }

  // A (part, phase)'s results kept in VMEM for the part's next phase: the
  // chunks over the dimensions `dims` still to reduce (the producer's later
  // ones; the last innermost), each the part's bytes, densely. Slot strides
  // of that layout per dimension, and its bytes.
  std::map<int, int64_t> keepStride(std::vector<int> dims) const {
    std::map<int, int64_t> stride;
    for (int e : dims) {
      int64_t v = 1;
      for (int f : dims)
        if (f > e) v *= size(f);
      stride[e] = v;
    }
    return stride;
  }
  uint64_t keepBytes(const Stream& producer) const {
    return uint64_t(producer.blockChunks) * producer.partBytes;
  }
  // The dimensions of the kept layout a consumer (the next phase) reads.
  static std::vector<int> keptDims(const Stream& consumer) {
    std::vector<int> dims = consumer.later;
    dims.push_back(consumer.dim);
    std::sort(dims.begin(), dims.end());
    return dims;
  }
  // Byte address of piece q of a producer's final (all its coordinates this
  // chip's own), and of a consumer's block of target t, in the kept layout.
  uint64_t keptFinalAddress(uint64_t base, const Stream& s, int q) const {
    return base + (s.offset - s.partLo) + uint64_t(q) * s.pieceBytes;
  }
  uint64_t keptBlockAddress(uint64_t base, const Stream& s, int t, int q) const {
    const std::map<int, int64_t> stride = keepStride(keptDims(s));
    return base + uint64_t(t * stride.at(s.dim)) * s.partBytes + (s.offset - s.partLo) +
           uint64_t(q) * s.pieceBytes;
  }
  // A piece's descriptor with the kept layout on its `strided` side.
  isa::DmaDescriptor keptDescriptor(const Stream& s, const std::vector<int>& dims,
                                    isa::MemorySpace src, isa::MemorySpace dst, bool srcStrided,
                                    bool dstStrided) const {
    GridReduce kept = g_;
    kept.chunk = s.partBytes;
    return gridChunkDescriptor(kept, keepStride(dims), s.later, s.pieceBytes, src, dst, srcStrided,
                               dstStrided);
  }
  // A final's whole block (every piece) from the operand (HBM) into the
  // kept layout.
  isa::DmaDescriptor preloadDescriptor(const Stream& s) const {
    isa::DmaDescriptor d = gridChunkDescriptor(g_, stride_, s.later, s.bytes, isa::MemorySpace::Hbm,
                                               isa::MemorySpace::Vmem, true, true);
    const std::map<int, int64_t> kept = keepStride(s.later);
    for (size_t i = 0; i < s.later.size(); ++i)
      d.dstStrides[i] = uint32_t(uint64_t(kept.at(s.later[s.later.size() - 1 - i])) * s.partBytes);
    return d;
  }

  uint32_t neighbour(int dim, int dir, int64_t dev) const {
    std::vector<int> c = coords_[size_t(dev)];
    int n = size(dim);
    c[size_t(dim)] += dir;
    if (c[size_t(dim)] < 0 || c[size_t(dim)] >= n) {
      if (!g_.ringOrder.empty()) return uint32_t(g_.ringOrder[size_t((c[size_t(dim)] + n) % n)]);
      if (!sliceWraps(n, chip_.ici)) return kNoDevice;
      c[size_t(dim)] = (c[size_t(dim)] + n) % n;
    }
    if (!g_.ringOrder.empty()) return uint32_t(g_.ringOrder[size_t(c[size_t(dim)])]);
    return uint32_t(deviceAt(c, g_.slice));
  }

  double totalCycles() const {
    std::map<std::pair<int, int>, double> phase;  // (part, phase) -> its slower direction
    for (const Stream& s : streams_) {
      double& e = phase[{s.part, s.phase}];
      e = std::max(e, s.estimate);
    }
    std::map<int, double> part;
    for (auto& [key, e] : phase) part[key.first] += e;
    double worst = 0;
    for (auto& [j, e] : part) worst = std::max(worst, e);
    return worst + double(chip_.ici.latency_cycles);  // the ready signals
  }
  // The phases of every part along one dimension share its links: the most
  // any dimension's phases take one after the other (totalCycles leaves that
  // out; on a square slice both are the same).
  double busiestDimensionCycles() const {
    std::map<std::pair<int, int>, double> phase;  // (part, phase) -> its slower direction
    std::map<std::pair<int, int>, int> dimOf;
    for (const Stream& s : streams_) {
      double& e = phase[{s.part, s.phase}];
      e = std::max(e, s.estimate);
      dimOf[{s.part, s.phase}] = s.dim;
    }
    std::map<int, double> dim;
    for (auto& [key, e] : phase) dim[dimOf[key]] += e;
    double worst = 0;
    for (auto& [d, e] : dim) worst = std::max(worst, e);
    return worst + double(chip_.ici.latency_cycles);
  }

 private:
  void buildStreams() {
    const int parts = int(g_.gridDims.size());
    const uint64_t elem = uint64_t(elementBytes(g_.type));
    const uint64_t elems = g_.chunk / elem;
    const double bw = chip_.ici.link_bytes_per_second / chip_.core.clock_hz;
    const double lat = double(chip_.ici.latency_cycles);
    ok_ = g_.chunk % elem == 0 && elems >= uint64_t(2 * parts);
    // Parts (and a ring's halves) start on multiples of 2 x kMaxPieces
    // elements where the chunk allows it, so that a stream's bytes split into
    // any power-of-two count of pieces; an exact third of a power of two
    // splits into at most 2 (v4 4x4x4, 16 MiB: pieces too large for a VMEM
    // slot, so the rings did not fit and the line exchange ran instead).
    const uint64_t unit = elems >= uint64_t(parts) * 8 * kMaxPieces ? 2 * kMaxPieces : 1;
    auto boundary = [&](int j) {
      return j == parts ? elems : elems * uint64_t(j) / uint64_t(parts) / unit * unit;
    };
    for (int j = 0; j < parts; ++j) {
      uint64_t lo = boundary(j) * elem;
      uint64_t hi = boundary(j + 1) * elem;
      double start = 0;
      std::vector<int> earlier;
      for (int p = 0; p < parts; ++p) {
        int dim = g_.gridDims[size_t((j + p) % parts)];
        std::vector<int> later;
        for (int q = p + 1; q < parts; ++q) later.push_back(g_.gridDims[size_t((j + q) % parts)]);
        std::sort(later.begin(), later.end());
        bool ring = sliceWraps(size(dim), chip_.ici) || !g_.ringOrder.empty();
        uint64_t half = lo + (hi - lo) / elem / 2 * elem;
        int64_t blockChunks = 1;
        for (int e : later) blockChunks *= size(e);
        // Pieces: a power of two, each a whole number of elements, the
        // block's piece at most a VMEM slot; the count with the smallest
        // estimate (small pieces fill the pipeline sooner, each costs a
        // combine's fixed work). A chain of `hops` hops; the busiest link
        // carries `linkBlocks` blocks of `bytes` per chunk.
        struct Choice {
          int pieces = 1, lag = 0;
          double duration = -1, estimate = 0;
        };
        auto choose = [&](uint64_t bytes, double hops, double linkBlocks, int minCount) {
          Choice c;
          double best = -1;
          for (int count = 1; count <= kMaxPieces; count *= 2) {
            if (bytes == 0 || bytes % (uint64_t(count) * elem) != 0) break;
            if (count < minCount) continue;
            const uint64_t total = bytes / uint64_t(count) * uint64_t(blockChunks);
            if (total > slotCap_ && count < kMaxPieces) continue;
            // A piece over the link, and the scalar and VPU work of a piece
            // on a chip (every part's two directions share the scalar thread).
            const double piece = double(total) / bw;
            const double combine = 500 + double(total) / 1024.0;
            const double busy = std::max(piece, combine * double(2 * parts));
            // The busiest link carries linkBlocks x pieces; the first piece
            // fills the pipeline over the hops.
            const double d = linkBlocks * double(count) * busy + hops * (lat + piece + combine);
            // The estimate the algorithm choice takes is the best count's,
            // kMinLaterPieces or not (it was measured against tpusim so).
            if (best < 0 || d < best) {
              best = d;
              c.estimate = hops * (lat + piece + combine) +
                           linkBlocks * double(count) * std::max(piece, combine);
            }
            if (ring && p > 0 && count < kMinLaterPieces &&
                2 * double(bytes * uint64_t(blockChunks)) / bw >= lat &&
                bytes % (uint64_t(2 * count) * elem) == 0)
              continue;
            if (c.duration >= 0 && d >= c.duration) continue;
            c.duration = d;
            c.pieces = count;
            // The lag covers a piece's transfer, its hop and its combine.
            c.lag = ring ? 0 : 1 + int(std::ceil((lat + combine) / piece));
          }
          return c;
        };
        const int m = size(dim);
        // Half rings on a grid dimension's ring of kMinHalfRing or more; an
        // even one needs an even piece count.
        const bool halfRing = halfRings_ && ring && g_.ringOrder.empty() && m >= kMinHalfRing;
        const bool split = halfRing && m % 2 == 0;
        Choice halfChoice;
        if (halfRing) halfChoice = choose(hi - lo, double(m / 2), double(m - 1) / 2, split ? 2 : 1);
        const bool useHalf =
            halfRing && halfChoice.duration >= 0 &&
            (hi - lo) / uint64_t(halfChoice.pieces) * uint64_t(blockChunks) <= slotCap_;
        double phaseCycles = 0;
        for (int dir : {1, -1}) {
          Stream s;
          s.part = j;
          s.phase = p;
          s.dir = dir;
          s.dim = dim;
          s.ring = ring;
          s.offset = ring && dir < 0 ? half : lo;
          s.partLo = lo;
          s.partBytes = hi - lo;
          s.bytes = ring ? (dir > 0 ? half - lo : hi - half) : hi - lo;
          s.earlier = earlier;
          s.later = later;
          s.blockChunks = blockChunks;
          s.steps = m;
          // The estimate stays the full ring's (each way half the part, m - 1
          // hops), and with it the algorithm choice.
          const Choice full = choose(s.bytes, double(m - 1), double(m - 1), 1);
          const Choice& c = useHalf ? halfChoice : full;
          s.estimate = full.estimate;
          s.pieces = c.pieces;
          s.lag = c.lag;
          if (useHalf) {
            s.halfRing = true;
            s.splitFirst = split;
            s.steps = m / 2 + 1;
            s.offset = lo;
            s.bytes = hi - lo;
          }
          const double duration = c.duration;
          s.pieceBytes = s.bytes / uint64_t(s.pieces);
          const uint64_t total = pieceTotal(s);
          if (duration < 0 || total > slotCap_) ok_ = false;
          const uint64_t align = std::max<uint64_t>(4096, uint64_t(chip_.vmem.banks) * 512);
          slotBytes_ = std::max(slotBytes_, (total + align - 1) / align * align);
          s.start = start;
          if (useHalf) {
            for (int64_t k = 0; k < s.steps; ++k)
              for (int q = 0; q < s.pieces; ++q)
                if (k > 0 || !s.late(q)) s.order.emplace_back(k, q);
            s.actions = int64_t(s.order.size());
          } else {
            s.actions = int64_t(m) * s.pieces + int64_t(m - 1) * s.lag;
          }
          s.stepCycles = duration / double(s.actions);  // per action
          phaseCycles = std::max(phaseCycles, duration);
          streams_.push_back(s);
        }
        start += phaseCycles + 1;  // strictly after every action of this phase
        earlier.push_back(dim);
      }
    }
    if (slotBytes_ * uint64_t(kSlots + 2) + uint64_t(bankShift()) * 512 >
        uint64_t(chip_.vmem.bytes))
      ok_ = false;
  }

  // Do the first phase's landing slots fit VMEM after the own buffers and
  // out slots, in step order? There a ring's receiver combines a step's
  // arrivals one step after they were sent, so a stream needs about a
  // step's pieces + 2 slots (planCredits works out the exact count): a
  // block's bytes per stream (v4 4x4x4 64 MiB: 6 streams x 18 slots of
  // 176 KiB, 19 MiB; two streams landed in HBM and every byte they received
  // was loaded again).
  bool firstPhaseSlotsFit() const {
    const uint64_t align = std::max<uint64_t>(4096, uint64_t(chip_.vmem.banks) * 512);
    uint64_t bytes = slotBytes_ * uint64_t(kSlots + kAheadBuffers) + uint64_t(bankShift()) * 512;
    for (const Stream& s : streams_)
      if (s.phase == 0 && s.ring)
        bytes += uint64_t(s.pieces + 2) * ((pieceTotal(s) + align - 1) / align * align);
    return bytes <= uint64_t(chip_.vmem.bytes);
  }
  // Every ring's actions in rounds: piece q's step k in round k + q, the
  // steps ascending in a round (the own send, which waits for nothing,
  // first). A piece is then combined one round (one piece per step in
  // flight, about a ring's size) after it was sent, not one step (all the
  // step's pieces) after, so a stream needs ~m + 2 landing slots instead of
  // ~pieces + 2. Paced links (one piece at a time per link) keep a round's
  // pieces from sharing the link (unpaced, icipool measured +31% with this
  // order). In step order where the slots fit: v4 16 MiB is 1.7% faster so.
  void skewRings() {
    for (Stream& s : streams_) {
      if (!s.ring || s.pieces < 2) continue;
      s.order.clear();
      for (int r = 0; r < s.steps + s.pieces - 1; ++r)
        for (int k = 0; k < s.steps; ++k) {
          const int q = r - k;
          if (q < 0 || q >= s.pieces || (k == 0 && s.late(q))) continue;
          s.order.emplace_back(k, q);
        }
      s.rounds = true;
    }
  }

  const GridReduce& g_;
  const target::ChipConfig& chip_;
  bool halfRings_ = true;
  std::map<int, int64_t> stride_;  // slot stride of each grid dimension
  int64_t devices_ = 0;
  std::vector<std::vector<int>> coords_;
  std::vector<Stream> streams_;
  uint64_t slotCap_ = 0, slotBytes_ = 0;
  bool ok_ = true;
};

std::vector<uint32_t> maskTable(const std::vector<bool>& on) {
  std::vector<uint32_t> v;
  for (bool b : on) v.push_back(b ? 1u : kNoDevice);
  return v;
}

bool isCombine(Role r) { return r == Role::CombineSend || isFinal(r); }
bool isSend(Role r) { return r == Role::SendOwn || r == Role::CombineSend; }

// What every device does in one action.
struct ActionPlan {
  std::vector<Role> roles;
  std::vector<uint32_t> own, arrived, dest, sendTo;
  bool usesVmem = false, sends = false;
  // A half ring's finals: the meet buffer the first (FinalKeep) leaves its
  // sum in, and the second (Final) adds its arrival to instead of an own piece.
  int meetBuffer = -1;
};

// The VMEM landing slots and their credits (GridReduceScatter.h).
struct CreditPlan {
  std::vector<bool> direct;    // per stream: lands in VMEM
  std::vector<int> slots;      // per stream: R
  std::vector<int64_t> first;  // per stream: the first slot's row
  std::vector<int64_t> rows;   // per stream: rows per slot
  // (part, phase) -> the first VMEM row of its results kept for the next
  // phase (absent: they go through the HBM work buffer).
  std::map<std::pair<int, int>, int64_t> keepRow;
  // Per action, per device (kNoDevice / 0 where nothing): the VMEM row the
  // arrival combined here sits in, the receiver's row a send goes to, the
  // credits to wait for before the send, the device a credit goes back to
  // after the combine.
  std::vector<std::vector<uint32_t>> landingRow, sendRow, creditTo;
  std::vector<std::vector<int64_t>> wait;
};

CreditPlan planCredits(const Planner& plan, const GridReduce& g, const target::ChipConfig& chip,
                       const std::vector<std::tuple<double, int, int64_t>>& actions,
                       const std::vector<ActionPlan>& plans, int64_t freeRow,
                       const GridReduceFlags& flags, bool keep) {
  const std::vector<Stream>& streams = plan.streams();
  const int64_t devices = plan.devices();
  CreditPlan c;
  const size_t n = streams.size();
  c.direct.assign(n, false);
  c.slots.assign(n, 0);
  c.first.assign(n, 0);
  c.rows.assign(n, 0);
  const std::vector<uint32_t> none(size_t(devices), kNoDevice);
  c.landingRow.assign(actions.size(), none);
  c.sendRow = c.creditTo = c.landingRow;
  c.wait.assign(actions.size(), std::vector<int64_t>(size_t(devices), 0));
  if (flags.firstCredit < 0) return c;

  // Per (stream, device): the actions combining an arrival, and the sends
  // (action, receiver), in the order every chip runs them.
  std::map<std::pair<int, int64_t>, std::vector<size_t>> combines;
  std::map<std::pair<int, int64_t>, std::vector<std::pair<size_t, int64_t>>> sends;
  for (size_t k = 0; k < actions.size(); ++k) {
    const int i = std::get<1>(actions[k]);
    const Stream& s = streams[size_t(i)];
    for (int64_t dev = 0; dev < devices; ++dev) {
      const Role r = plans[k].roles[size_t(dev)];
      if (isCombine(r)) combines[{i, dev}].push_back(k);
      if (isSend(r)) sends[{i, dev}].push_back({k, int64_t(plan.neighbour(s.dim, s.dir, dev))});
    }
  }
  // R per stream: the least for which the credit of arrival n - R comes from
  // an action strictly before the one sending arrival n, plus one of slack.
  std::vector<int> need(n, 0);
  std::vector<bool> consistent(n, true);
  for (auto& [key, list] : sends) {
    const int i = key.first;
    for (size_t m = 0; m < list.size(); ++m) {
      const auto& [k, to] = list[m];
      auto it = combines.find({i, to});
      if (to < 0 || to >= devices || it == combines.end() || it->second.size() != list.size()) {
        consistent[size_t(i)] = false;
        break;
      }
      int r = std::max(need[size_t(i)], 1);
      while (size_t(r) <= m && it->second[m - size_t(r)] >= k) ++r;
      need[size_t(i)] = r;
    }
  }
  // VMEM: the streams phase by phase while their slots fit.
  const int64_t rowBytes = isa::kVmemRowBytes;
  const int64_t align = std::max<int64_t>(4096, int64_t(chip.vmem.banks) * rowBytes) / rowBytes;
  const int64_t vmemRows = int64_t(chip.vmem.bytes) / rowBytes;
  // After a phase's slots, its parts' results kept for their next phase
  // (`keep`): then the next phase's first sends and own loads read VMEM,
  // and the finals store there instead of HBM (v4 4x4x4 16 MiB: phase 0's
  // finals stored 4 MiB to HBM and phase 1 loaded it again, the links idle
  // meanwhile).
  auto roundUp = [&](uint64_t bytes) {
    return (int64_t(bytes) + rowBytes * align - 1) / (rowBytes * align) * align;
  };
  int64_t row = freeRow;
  const int phases = int(g.gridDims.size());
  for (int p = 0; p < phases; ++p) {
    for (size_t i = 0; i < n; ++i) {
      if (streams[i].phase != p || !consistent[i] || need[i] == 0) continue;
      const int64_t rows = roundUp(plan.pieceTotal(streams[i]));
      const int slots = need[i] + 1;
      if (row + slots * rows > vmemRows) continue;
      c.direct[i] = true;
      c.slots[i] = slots;
      c.first[i] = row;
      c.rows[i] = rows;
      row += slots * rows;
    }
    if (!keep || p + 1 >= phases) continue;
    // Every part's results or none: the parts run side by side and the
    // slowest sets the step, so keeping some parts' only takes VMEM the
    // later phases' landing slots would use (v4 4x4x4 64 MiB: one part's
    // 5.3 MiB kept left 9 of the 12 later streams landing in HBM; 2.2% slower).
    std::map<std::pair<int, int>, int64_t> kept;
    int64_t at = row;
    for (const Stream& s : streams) {
      if (s.phase != p || kept.count({s.part, p})) continue;
      kept[{s.part, p}] = at;
      at += roundUp(plan.keepBytes(s));
    }
    if (at > vmemRows) continue;
    c.keepRow.insert(kept.begin(), kept.end());
    row = at;
  }

  // Credits per (receiver, flow key): the receiver's combines of direct
  // streams in order; a sender waits cumulatively for those up to the one
  // freeing its slot.
  auto keyOf = [&](const Stream& s) {
    const auto pos = std::find(g.gridDims.begin(), g.gridDims.end(), s.dim) - g.gridDims.begin();
    return int(2 * pos + (s.dir > 0 ? 0 : 1));
  };
  std::map<std::pair<int64_t, int>, std::vector<size_t>> signals;  // (receiver, key) -> actions
  std::map<std::pair<int, int64_t>, int64_t> arrivalNumber;        // (stream, device) -> next
  for (size_t k = 0; k < actions.size(); ++k) {
    const int i = std::get<1>(actions[k]);
    if (!c.direct[size_t(i)]) continue;
    const Stream& s = streams[size_t(i)];
    for (int64_t dev = 0; dev < devices; ++dev) {
      if (!isCombine(plans[k].roles[size_t(dev)])) continue;
      const int64_t a = arrivalNumber[{i, dev}]++;
      c.landingRow[k][size_t(dev)] =
          uint32_t(c.first[size_t(i)] + (a % c.slots[size_t(i)]) * c.rows[size_t(i)]);
      c.creditTo[k][size_t(dev)] = plan.neighbour(s.dim, -s.dir, dev);
      signals[{dev, keyOf(s)}].push_back(k);
    }
  }
  std::map<std::pair<int64_t, int>, int64_t> waited;  // (sender, key) -> credits taken
  std::map<std::pair<int64_t, int>, int64_t> needed;  // (receiver, key) -> credits sent
  // The waits in action order (cumulative per sender and key).
  std::map<std::pair<int, int64_t>, int64_t> sendNumber;  // (stream, device) -> next
  for (size_t k = 0; k < actions.size(); ++k) {
    const int i = std::get<1>(actions[k]);
    if (!c.direct[size_t(i)]) continue;
    const Stream& s = streams[size_t(i)];
    const int key = keyOf(s);
    const int64_t R = c.slots[size_t(i)];
    for (int64_t dev = 0; dev < devices; ++dev) {
      if (!isSend(plans[k].roles[size_t(dev)])) continue;
      const int64_t m = sendNumber[{i, dev}]++;
      const int64_t to = int64_t(plan.neighbour(s.dim, s.dir, dev));
      c.sendRow[k][size_t(dev)] = uint32_t(c.first[size_t(i)] + (m % R) * c.rows[size_t(i)]);
      if (m < R) continue;
      const size_t freed = combines.at({i, to})[size_t(m - R)];
      if (freed >= k) throw std::logic_error("reduce-scatter: a credit from a later action");
      const std::vector<size_t>& sig = signals.at({to, key});
      const int64_t count = int64_t(std::upper_bound(sig.begin(), sig.end(), freed) - sig.begin());
      int64_t& w = waited[{dev, key}];
      if (count > w) {
        c.wait[k][size_t(dev)] = count - w;
        w = count;
      }
      int64_t& nd = needed[{to, key}];
      nd = std::max(nd, count);
    }
  }
  // A receiver sends only the credits some sender waits for (flags end at 0).
  for (auto& [key, sig] : signals)
    for (size_t j = 0; j < sig.size(); ++j)
      if (int64_t(j) >= needed[key]) c.creditTo[sig[j]][size_t(key.first)] = kNoDevice;
  return c;
}

// The actions in the order every chip runs them, and per action the last
// action before it whose final it reads (-1: none; always where the phases
// are not overlapped, each following every action of the previous one).
struct ActionOrder {
  std::vector<std::tuple<double, int, int64_t>> actions;  // (key, stream, action)
  std::vector<int64_t> readsFinal;
};

// Each stream's actions at their estimated start. With `overlap` (every
// stream a ring, paced links), a later phase's piece starts as soon as the
// previous phase's finals it reads have run (their key, and its own step
// after its stream's previous action) rather than after every action of the
// previous phase: in that order its first sends fill the links while the
// other streams' last pieces of the previous phase still arrive.
ActionOrder orderActions(const Planner& plan, bool overlap) {
  const std::vector<Stream>& streams = plan.streams();
  std::vector<std::vector<double>> key(streams.size());
  // (stream, piece) -> the key of its final step
  std::map<std::pair<size_t, int>, double> finalKey;
  int phases = 0;
  for (const Stream& s : streams) phases = std::max(phases, s.phase + 1);
  // Overlapped, a later phase's estimated start moves back by the previous
  // phase's duration: the finals it reads and its own pace set its keys.
  for (int p = 0; p < phases; ++p)
    for (size_t i = 0; i < streams.size(); ++i) {
      const Stream& s = streams[i];
      if (s.phase != p) continue;
      double start = s.start;
      if (p > 0 && overlap)
        for (const Stream& e : streams)
          if (e.part == s.part && e.phase == p - 1)
            start = std::min(start, s.start - e.stepCycles * double(e.actions));
      double prev = 0;
      for (int64_t x = 0; x < s.actions; ++x) {
        double k = start + double(x + 1) * s.stepCycles;
        const auto kq = plan.stepOf(s, 0, x);
        if (p > 0 && overlap && kq) {
          const uint64_t lo = s.offset + uint64_t(kq->second) * s.pieceBytes;
          const uint64_t hi = lo + s.pieceBytes;
          for (size_t j = 0; j < streams.size(); ++j) {
            const Stream& e = streams[j];
            if (e.part != s.part || e.phase != p - 1) continue;
            for (int q = 0; q < e.pieces; ++q) {
              const uint64_t elo = e.offset + uint64_t(q) * e.pieceBytes;
              if (elo < hi && lo < elo + e.pieceBytes) k = std::max(k, finalKey.at({j, q}) + 1e-3);
            }
          }
          if (x > 0) k = std::max(k, prev + s.stepCycles);
        }
        key[i].push_back(k);
        prev = k;
        if (kq && s.ring && kq->first == s.steps - 1) finalKey[{i, kq->second}] = k;
      }
    }
  ActionOrder o;
  for (size_t i = 0; i < streams.size(); ++i)
    for (int64_t x = 0; x < streams[i].actions; ++x)
      o.actions.emplace_back(key[i][size_t(x)], int(i), x);
  std::stable_sort(o.actions.begin(), o.actions.end());
  // Where each stream's finals ran, then what each action reads.
  std::map<std::pair<size_t, int>, int64_t> finalAt;
  o.readsFinal.assign(o.actions.size(), -1);
  // Half rings among rings (own loads issued several actions ahead): a
  // later phase's piece reads both ways' finals of the whole part, so its
  // own load waits for them in any order (with a line the loads go one
  // action ahead, after the finals' stores).
  const bool halves =
      std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.halfRing; }) &&
      std::all_of(streams.begin(), streams.end(), [](const Stream& s) { return s.ring; });
  for (size_t k = 0; (overlap || halves) && k < o.actions.size(); ++k) {
    const size_t i = size_t(std::get<1>(o.actions[k]));
    const Stream& s = streams[i];
    const auto kq = plan.stepOf(s, 0, std::get<2>(o.actions[k]));
    if (!kq || !s.ring) continue;
    if (kq->first == s.steps - 1) finalAt[{i, kq->second}] = int64_t(k);
    if (s.phase == 0) continue;
    const uint64_t lo = s.offset + uint64_t(kq->second) * s.pieceBytes, hi = lo + s.pieceBytes;
    for (size_t j = 0; j < streams.size(); ++j) {
      const Stream& e = streams[j];
      if (e.part != s.part || e.phase != s.phase - 1) continue;
      for (int q = 0; q < e.pieces; ++q) {
        const uint64_t elo = e.offset + uint64_t(q) * e.pieceBytes;
        if (elo >= hi || lo >= elo + e.pieceBytes) continue;
        auto it = finalAt.find({j, q});
        if (it == finalAt.end()) throw std::logic_error("reduce-scatter: a piece before its final");
        o.readsFinal[k] = std::max(o.readsFinal[k], it->second);
      }
    }
  }
  return o;
}

}  // namespace

bool gridReduceSupports(PrimitiveType type, HloOpcode op) {
  bool typeOk =
      type == PrimitiveType::F32 || type == PrimitiveType::BF16 || type == PrimitiveType::S32;
  bool opOk = op == HloOpcode::Add || op == HloOpcode::Multiply || op == HloOpcode::Maximum ||
              op == HloOpcode::Minimum;
  return typeOk && opOk;
}

int gridReduceScratchBuffers(const GridReduce& g) { return 1 + 2 * int(g.gridDims.size()); }

namespace {

bool ringsFit(const GridReduce& g, const target::ChipConfig& chip) {
  if (!gridReduceSupports(g.type, g.op) || g.gridDims.empty()) return false;
  const int dims = int(g.gridDims.size());
  if (2 * dims * dims > kGridGatherStreamFlags) return false;
  Planner plan(g, chip);
  if (!plan.ok()) return false;
  const uint64_t n = uint64_t(g.groups.at(0).size());
  const uint64_t limit = uint64_t(1) << 31;
  return n * g.chunk < limit && g.operand + n * g.chunk < (uint64_t(1) << 32) &&
         g.result + g.chunk < (uint64_t(1) << 32);
}

}  // namespace

namespace {

GridReduceAlgorithm chooseGridOrExchange(const GridReduce& g, const target::ChipConfig& chip) {
  const bool rings = ringsFit(g, chip), exchange = lineExchangeReduceFits(g, chip);
  if (!exchange) return GridReduceAlgorithm::Rings;
  if (!rings) return GridReduceAlgorithm::LineExchange;
  // Over more than one dimension the exchange's estimate runs up to 5% under
  // tpusim from 1 MiB (v5e 4x4: one sub-part's first phase and another's
  // second share a dimension's links and HBM more than it models): there it
  // must be ahead by more than that.
  const double margin = g.gridDims.size() > 1 ? 0.95 : 1.0;
  return !lineExchangeHopBound(g, chip) &&
                 lineExchangeReduceCycles(g, chip) < margin * Planner(g, chip).totalCycles()
             ? GridReduceAlgorithm::LineExchange
             : GridReduceAlgorithm::Rings;
}

// The Hamiltonian ring's plan, if it fits and its estimate is ahead of the
// grid's by 5% (at 256 KiB on v5e 2x4 a 1% lead was a 9% loss). The grid
// rings' own estimate charges each part's phases as if they had their links
// alone; here it is taken at least as the phases of every part along one
// dimension one after the other, and the busiest link's share of the data
// (v5e 2x4, 1 MiB: the rings' own estimate 33,786 cycles, this 46,652,
// tpusim 50,339; the Hamiltonian ring 38,662 estimated, 27,746 in tpusim).
std::optional<GridReduce> hamiltonianRing(const GridReduce& g, const target::ChipConfig& chip) {
  std::optional<RingView<GridReduce>> v = hamiltonianView(g, chip);
  if (!v || v->ringShare >= 0.97 * v->gridShare || !ringsFit(v->ring, chip)) return std::nullopt;
  if (ringsFit(g, chip) || lineExchangeReduceFits(g, chip)) {
    double grid = 0;
    if (chooseGridOrExchange(g, chip) == GridReduceAlgorithm::LineExchange) {
      grid = lineExchangeReduceCycles(g, chip);
    } else {
      const Planner plan(g, chip);
      grid = std::max({plan.totalCycles(), plan.busiestDimensionCycles(), v->gridLinkCycles});
    }
    if (Planner(v->ring, chip).totalCycles() >= 0.95 * grid) return std::nullopt;
  }
  return v->ring;
}

}  // namespace

GridReduceAlgorithm chooseGridReduce(const GridReduce& g, const target::ChipConfig& chip) {
  if (hamiltonianRing(g, chip)) return GridReduceAlgorithm::HamiltonianRing;
  return chooseGridOrExchange(g, chip);
}

bool gridReduceScatterFits(const GridReduce& g, const target::ChipConfig& chip) {
  return ringsFit(g, chip) || lineExchangeReduceFits(g, chip) || hamiltonianRing(g, chip);
}

double gridReduceScatterCycles(const GridReduce& g, const target::ChipConfig& chip) {
  if (auto r = hamiltonianRing(g, chip)) return Planner(*r, chip).totalCycles();
  return chooseGridOrExchange(g, chip) == GridReduceAlgorithm::LineExchange
             ? lineExchangeReduceCycles(g, chip)
             : Planner(g, chip).totalCycles();
}

GridGeometry gridGeometry(const GridReduce& g) {
  GridGeometry geo;
  for (int d : g.gridDims) {
    int64_t s = 1;
    for (int e : g.gridDims)
      if (e > d) s *= g.slice[size_t(e)];
    geo.stride[d] = s;
  }
  geo.devices = 1;
  for (int d : g.slice) geo.devices *= d;
  for (int64_t id = 0; id < geo.devices; ++id) geo.coords.push_back(coordsOf(id, g.slice));
  for (size_t p = 0; p < g.ringOrder.size(); ++p) geo.coords[size_t(g.ringOrder[p])] = {int(p)};
  return geo;
}

isa::DmaDescriptor gridChunkDescriptor(const GridReduce& g, const std::map<int, int64_t>& stride,
                                       const std::vector<int>& later, uint64_t inner,
                                       isa::MemorySpace src, isa::MemorySpace dst, bool srcStrided,
                                       bool dstStrided) {
  isa::DmaDescriptor d;
  d.src = src;
  d.dst = dst;
  d.innerBytes = uint32_t(inner);
  d.numDims = 1 + int(later.size());
  d.counts = {1, 1, 1};
  d.srcStrides = {0, 0, 0};
  d.dstStrides = {0, 0, 0};
  uint64_t dense = inner;
  for (size_t i = 0; i < later.size(); ++i) {  // the fastest (highest) innermost
    int e = later[later.size() - 1 - i];
    int64_t n = g.slice.at(size_t(e));
    d.counts[i] = uint32_t(n);
    uint32_t strided = uint32_t(uint64_t(stride.at(e)) * g.chunk);
    d.srcStrides[i] = srcStrided ? strided : uint32_t(dense);
    d.dstStrides[i] = dstStrided ? strided : uint32_t(dense);
    dense *= uint64_t(n);
  }
  return d;
}

void emitGridReduceScatter(ControlCode& code, const GridReduce& grid,
                           const target::ChipConfig& chip, const std::vector<uint64_t>& scratch,
                           const GridReduceFlags& flags) {
  const std::optional<GridReduce> ring = hamiltonianRing(grid, chip);
  if (!ring && chooseGridOrExchange(grid, chip) == GridReduceAlgorithm::LineExchange) {
    emitLineExchangeReduce(code, grid, chip, scratch, flags);
    return;
  }
  const GridReduce& g = ring ? *ring : grid;
  // Rounds only with paced links (below: the landing slots' flags, not the
  // Hamiltonian ring).
  const bool mayRound = flags.firstCredit >= 0 && g.ringOrder.empty();
  // Overlapped phases where every stream is a ring in step order (below).
  auto overlapPhases = [&](const Planner& p) {
    return mayRound && std::all_of(p.streams().begin(), p.streams().end(),
                                   [](const Stream& s) { return s.ring && !s.rounds; });
  };
  Planner plan(g, chip, mayRound);
  SmemTables tables(code);
  CombineLoop combine(code, chip, g.type, g.op);
  const std::vector<Stream>& streams = plan.streams();
  const int64_t devices = plan.devices();
  const int phases = int(g.gridDims.size());
  const uint64_t work = scratch.at(0);
  auto landing = [&](const Stream& s) {
    return scratch.at(size_t(1 + 2 * s.phase + (s.dir > 0 ? 0 : 1)));
  };
  const uint64_t slotBytes = plan.slotBytes();
  // Own buffers, loaded ahead of their combines: two (one is loaded while the
  // other is combined), or kAheadBuffers where the landing slots' credit flags
  // bring a flag of their own for the loads (a combine that no longer loads
  // its arrived piece would otherwise wait for its own piece's load, issued
  // one action before) and every stream is a ring (on a line a second final
  // reads what the first stored, so its load cannot be issued early).
  const bool allRings =
      std::all_of(streams.begin(), streams.end(), [](const Stream& s) { return s.ring; });
  // In rounds kAheadBuffersInRounds where they fit (in step order the two
  // more buffers cost the landing slots more than they gain: v4 4x4x4 16 MiB
  // reduce-scatter 72,260 -> 72,972 cycles).
  auto aheadFits = [&](int buffers) {
    return slotBytes * uint64_t(kSlots + buffers) + uint64_t(plan.bankShift()) * 512 <=
           uint64_t(chip.vmem.bytes);
  };
  const int ownBuffers = !(flags.firstCredit >= 0 && allRings) ? 2
                         : plan.inRounds() && aheadFits(kAheadBuffersInRounds)
                             ? kAheadBuffersInRounds
                         : aheadFits(kAheadBuffers) ? kAheadBuffers
                                                    : 2;
  const int ownFlag = ownBuffers > 2 ? flags.firstCredit - 2 * int(g.gridDims.size()) : flags.local;
  const int storeQueue = ownBuffers > 2 ? kLoadQueues[1] : kLoadQueues[0];
  // With own loads ahead (rings only) a final's store is not waited for: it
  // counts on its epoch's sent flag like a send, so the slot it reads is not
  // reused before it has finished, and the first read of the work buffer by
  // a later phase of its part (an own load, or a step-0 send from HBM)
  // drains it (that read may be of what it wrote). Waiting for
  // each store took ~550 cycles per final on v4 4x4x4 16 MiB, serially, at
  // the end of every phase (the links idle meanwhile). On a line a second
  // final reads what the first stored, so lines keep the wait.
  const bool deferStores = ownBuffers > 2;
  // Then the slots, shifted by half the banks so that a slot's rows and the
  // own rows of the same vregs sit in different banks.
  auto ownRow = [&](int64_t buffer) {
    return int64_t((uint64_t(buffer) * slotBytes) / isa::kVmemRowBytes);
  };
  auto slotRow = [&](int64_t slot) {
    return plan.bankShift() +
           int64_t((uint64_t(slot + ownBuffers) * slotBytes) / isa::kVmemRowBytes);
  };
  code.emit({makeInstruction(Opcode::ChipId, {kId})});

  // Neighbour tables per (dimension, direction); ready as in the grid all-gather.
  const NeighbourTables peers =
      neighbourTables(g.gridDims, devices,
                      [&](int d, int dir, int64_t dev) { return plan.neighbour(d, dir, dev); });
  emitNeighbourReady(code, tables, peers, kPeer, flags.ready, "reduce-scatter neighbours");

  // The actions (stream, step, piece) in the order of their estimated start,
  // the same on every chip: a piece a chip waits for was sent by an action
  // its neighbour runs no later in the order (GridAllGather.h's argument).
  // Overlapped phases where the rings run in step order (measured at v4
  // 4x4x4 16 MiB). Not in rounds: v4 4x4x4 64 MiB overlapped was 2.9%
  // slower (320,975 -> 330,206 cycles), though a smaller rounds case gained
  // (8 MiB with 4 MiB of VMEM: -2.2%).
  const ActionOrder order = orderActions(plan, overlapPhases(plan));
  // A half ring's first final of a piece keeps its sum in a meet buffer
  // (after the out slots) until the second adds to it: the lowest free one,
  // the same on every chip.
  int meetBuffers = 0;
  const std::vector<std::tuple<double, int, int64_t>>& actions = order.actions;

  // What every device does in each action, worked out first: an action's
  // own pieces are loaded while the VMEM action before it runs.
  // A line's two final combines of a (part, phase) on a chip: the first adds
  // the phase's source, the second what the first wrote.
  // Where a (part, phase)'s results are kept in VMEM (keepRow), its finals
  // store there and the next phase reads them there.
  std::vector<ActionPlan> plans;
  auto planActions = [&](const std::map<std::pair<int, int>, int64_t>& keepRow) {
    std::map<std::tuple<int, int, int, int64_t>, int> finalsSeen;  // (part, phase, piece, dev)
    std::map<std::tuple<int, int, int>, int> open;  // half rings: (part, phase, piece) -> buffer
    std::vector<bool> busy;                         // meet buffers in use
    plans.clear();
    for (auto& [t, i, x] : actions) {
      const Stream& s = streams[size_t(i)];
      const bool lastPhase = s.phase == phases - 1;
      const uint64_t src = s.phase == 0 ? g.operand : work;
      auto keptIn = keepRow.find({s.part, s.phase - 1});
      auto keptOut = keepRow.find({s.part, s.phase});
      ActionPlan a;
      a.own.assign(size_t(devices), kNoDevice);
      a.arrived = a.dest = a.sendTo = a.own;
      for (int64_t dev = 0; dev < devices; ++dev) {
        std::optional<std::pair<int64_t, int>> kq = plan.stepOf(s, dev, x);
        auto [r, tg] =
            kq ? plan.role(s, dev, kq->first, kq->second) : std::make_pair(Role::None, 0);
        a.roles.push_back(r);
        a.usesVmem |= isCombine(r);
        a.sends |= isSend(r);
        if (r == Role::None) continue;
        const int q = kq->second;
        uint64_t destAddr = lastPhase ? g.result + s.offset + uint64_t(q) * s.pieceBytes
                                      : plan.blockAddress(work, s, dev, tg, q);
        uint64_t ownAddr = plan.blockAddress(src, s, dev, tg, q);
        if (r == Role::Final && !s.ring) {
          int& seen = finalsSeen[{s.part, s.phase, q, dev}];
          if (seen++ > 0) ownAddr = destAddr;
        }
        if (keptIn != keepRow.end())
          ownAddr = plan.keptBlockAddress(uint64_t(keptIn->second) * isa::kVmemRowBytes, s, tg, q);
        if (keptOut != keepRow.end())
          destAddr = plan.keptFinalAddress(uint64_t(keptOut->second) * isa::kVmemRowBytes, s, q);
        // A first phase's final combines the piece its block's preload left
        // there (and stores the sum over it).
        if (keptOut != keepRow.end() && s.phase == 0 && r == Role::Final) ownAddr = destAddr;
        a.own[size_t(dev)] = uint32_t(ownAddr);
        a.dest[size_t(dev)] = uint32_t(destAddr);
        if (isCombine(r))
          a.arrived[size_t(dev)] = uint32_t(plan.blockAddress(landing(s), s, dev, tg, q));
        if (isSend(r))
          a.sendTo[size_t(dev)] = uint32_t(plan.blockAddress(landing(s), s, dev, tg, q));
      }
      // A half ring's finals (every chip's role the same): the first of a
      // piece's two keeps its sum, the second adds its arrival to that.
      if (s.halfRing && a.roles.at(0) == Role::Final) {
        const auto key = std::make_tuple(s.part, s.phase, plan.stepOf(s, 0, x)->second);
        auto it = open.find(key);
        if (it == open.end()) {
          std::fill(a.roles.begin(), a.roles.end(), Role::FinalKeep);
          a.meetBuffer = int(std::find(busy.begin(), busy.end(), false) - busy.begin());
          if (a.meetBuffer == int(busy.size())) busy.push_back(true);
          busy[size_t(a.meetBuffer)] = true;
          open[key] = a.meetBuffer;
        } else {
          a.meetBuffer = it->second;
          busy[size_t(a.meetBuffer)] = false;
          open.erase(it);
        }
      }
      plans.push_back(std::move(a));
    }
    meetBuffers = int(busy.size());
  };
  planActions({});
  auto meetRow = [&](int buffer) {
    return slotRow(kSlots) + int64_t((uint64_t(buffer) * slotBytes) / isa::kVmemRowBytes);
  };
  if (meetRow(meetBuffers) > int64_t(chip.vmem.bytes / isa::kVmemRowBytes))
    throw std::logic_error("reduce-scatter: the half rings' meet buffers do not fit VMEM");
  const CreditPlan credits =
      planCredits(plan, g, chip, actions, plans, meetRow(meetBuffers), flags, deferStores);
  if (!credits.keepRow.empty()) planActions(credits.keepRow);

  // Descriptors per stream: own -> VMEM own rows, landing -> slot, slot ->
  // the neighbour's landing, own (HBM) -> the neighbour's landing, slot ->
  // the phase's destination (strided, or the result). A stream landing in
  // VMEM sends dense pieces into the neighbour's VMEM and loads none.
  struct Words {
    int64_t loadOwn, loadArrived = -1, sendSlot, sendOwn, store;
    int64_t preload = -1, loadKept = -1;  // a kept first phase: its finals' block, and a piece
  };
  std::vector<Words> words;
  for (size_t i = 0; i < streams.size(); ++i) {
    using isa::MemorySpace;
    const Stream& s = streams[i];
    const bool last = s.phase == phases - 1;
    const bool direct = credits.direct[i];
    const MemorySpace landsIn = direct ? MemorySpace::Vmem : MemorySpace::Hbm;
    const bool keptIn = credits.keepRow.count({s.part, s.phase - 1}) > 0;
    const bool keptOut = credits.keepRow.count({s.part, s.phase}) > 0;
    const MemorySpace ownIn = keptIn ? MemorySpace::Vmem : MemorySpace::Hbm;
    // A piece between the work buffer, or the kept layout, and a dense side.
    auto ownDescriptor = [&](MemorySpace dst, bool dstStrided) {
      return keptIn ? plan.keptDescriptor(s, Planner::keptDims(s), ownIn, dst, true, dstStrided)
                    : plan.pieceDescriptor(s, ownIn, dst, true, dstStrided);
    };
    Words w;
    w.loadOwn = code.descriptorWords({ownDescriptor(MemorySpace::Vmem, false)},
                                     "reduce-scatter: own piece");
    if (!direct)
      w.loadArrived = code.descriptorWords(
          {plan.pieceDescriptor(s, MemorySpace::Hbm, MemorySpace::Vmem, true, false)},
          "reduce-scatter: arrived piece");
    w.sendSlot =
        code.descriptorWords({plan.pieceDescriptor(s, MemorySpace::Vmem, landsIn, false, !direct)},
                             "reduce-scatter: sent piece");
    w.sendOwn =
        code.descriptorWords({ownDescriptor(landsIn, !direct)}, "reduce-scatter: own piece sent");
    w.store = code.descriptorWords(
        {keptOut
             ? plan.keptDescriptor(s, s.later, MemorySpace::Vmem, MemorySpace::Vmem, false, true)
             : plan.pieceDescriptor(s, MemorySpace::Vmem, MemorySpace::Hbm, false, !last)},
        "reduce-scatter: reduced piece");
    if (keptOut && s.phase == 0) {
      w.preload = code.descriptorWords({plan.preloadDescriptor(s)}, "reduce-scatter: final block");
      w.loadKept = code.descriptorWords(
          {plan.keptDescriptor(s, s.later, MemorySpace::Vmem, MemorySpace::Vmem, true, false)},
          "reduce-scatter: preloaded piece");
    }
    words.push_back(w);
  }

  int64_t vmemActions = 0;  // actions that combined in VMEM so far (slot = index mod kSlots)
  int epoch = 0;
  // Sends and deferred stores of each epoch not yet waited for (with paced
  // links: the stores alone; the sends count on their link's flag).
  std::vector<int64_t> epochSends{0};
  // Paced links (the landing slots' flags reserved): every send counts on its
  // (dimension, direction)'s own sent flag, and waits until the pieces sent
  // on its link before it have left, so that one piece at a time is on each
  // link. A link shares its bandwidth among the flows on it, so a step's
  // pieces sent at once all arrived at the step's end (v4 4x4x4 16 MiB: the
  // first combine at ~15k cycles instead of ~5.2k, the links 60% busy); one
  // at a time, they arrive a piece's time apart and the combines overlap
  // the link.
  // Not on the Hamiltonian ring (v5e 2x4 16 MiB: +1.2%; its one ring has
  // eight chips' pieces in flight and no other link to keep busy).
  const bool paced = flags.firstCredit >= 0 && g.ringOrder.empty();
  const int links = 2 * int(g.gridDims.size());
  auto linkOf = [&](const Stream& s) {
    return int(2 * (std::find(g.gridDims.begin(), g.gridDims.end(), s.dim) - g.gridDims.begin()) +
               (s.dir > 0 ? 0 : 1));
  };
  auto linkFlag = [&](int link) {
    return flags.firstCredit - 2 * int(g.gridDims.size()) - 1 - link;
  };
  std::vector<int64_t> linkSends(size_t(links), 0), linkTaken(size_t(links), 0);
  std::vector<std::vector<int64_t>> epochLinkSends{linkSends};  // per epoch: counts at its start
  // Paced rings with deferred stores: per out slot, the last send from it
  // (link, that link's send count after it; -1: none). Before a combine
  // writes the slot, that send (and only it) must have left; waiting at each
  // epoch for every link's sends of two epochs back held a final (no send of
  // its own) until the pieces of the step before had left all six links (v4
  // 4x4x4 64 MiB: the links idle ~2-3k cycles every round; 320,975 ->
  // 295,895 cycles). Lines keep the epoch waits (v5e 4x4 64 MiB all-reduce:
  // +0.09% with the slot waits).
  const bool slotWaits = paced && deferStores;
  std::vector<std::pair<int, int64_t>> slotSend(size_t(kSlots), {-1, 0});
  // Every send on `link` before number `upTo` has left.
  auto waitLink = [&](int link, int64_t upTo) {
    int64_t& taken = linkTaken[size_t(link)];
    if (upTo > taken) {
      code.emit({makeInstruction(Opcode::SyncWait, {linkFlag(link), upTo - taken})});
      taken = upTo;
    }
  };
  const int64_t epochActions = kSlots / 2;
  std::set<std::pair<int, int>> pendingStores;  // (part, phase) of deferred stores not drained
  // Every send and store counted so far has finished (the epochs before the
  // last two were waited for when their successors began).
  auto drain = [&] {
    for (int e = std::max(0, epoch - 1); e <= epoch; ++e)
      if (epochSends[size_t(e)] > 0) {
        code.emit({makeInstruction(Opcode::SyncWait, {flags.sent[e % 2], epochSends[size_t(e)]})});
        epochSends[size_t(e)] = 0;
      }
    pendingStores.clear();
  };
  // Before a read of the work buffer by stream s (an own load, or a step-0
  // send straight from HBM): the stores of its part's earlier phases.
  auto drainFor = [&](const Stream& s) {
    if (std::any_of(pendingStores.begin(), pendingStores.end(), [&](const std::pair<int, int>& p) {
          return p.first == s.part && p.second < s.phase;
        }))
      drain();
  };
  auto setAddr = [&](int64_t word, int field, const std::vector<uint32_t>& values,
                     const std::string& what) {
    tables.load(values, kVal, what, /*shifted=*/true);  // inside its devices' guard
    code.emit({makeInstruction(Opcode::SLi, {kSrc, word})});
    code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, field})});
  };
  auto maskOf = [&](const ActionPlan& a, auto pred) {
    std::vector<bool> on;
    for (int64_t dev = 0; dev < devices; ++dev) on.push_back(pred(a.roles[size_t(dev)]));
    return maskTable(on);
  };
  // The load of action k's own pieces into own buffer `buffer` (VMEM action
  // number mod 2) on the combining devices; it counts on flags.local, which
  // the action's wait for its loads takes with the arrived piece's load.
  const int preloadFlag = flags.firstCredit - 4 * int(g.gridDims.size()) - 1;
  int64_t preloads = 0, preloadsTaken = 0;  // issued, and waited for
  auto loadOwn = [&](size_t k, int64_t buffer) {
    const ActionPlan& a = plans[k];
    const Stream& s = streams[size_t(std::get<1>(actions[k]))];
    const Words& w = words[size_t(std::get<1>(actions[k]))];
    drainFor(s);
    if (a.meetBuffer >= 0 && a.roles.at(0) == Role::Final) return;  // adds to its meet buffer
    const bool kept = w.loadKept >= 0 && std::any_of(a.roles.begin(), a.roles.end(), isFinal);
    if (kept && preloadsTaken < preloads) {
      code.emit({makeInstruction(Opcode::SyncWait, {preloadFlag, preloads - preloadsTaken})});
      preloadsTaken = preloads;
    }
    const int64_t word = kept ? w.loadKept : w.loadOwn;
    tables.forDevicesWith(maskOf(a, isCombine), kVal, "reduce-scatter combines", [&] {
      setAddr(word, 1, a.own, "reduce-scatter own pieces");
      code.emit({makeInstruction(Opcode::SLi, {kVal, ownRow(buffer) * isa::kVmemRowBytes}),
                 makeInstruction(Opcode::SLi, {kSrc, word})});
      code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, 3})});
      code.emit({makeInstruction(Opcode::Dma, {kSrc, ownFlag, kLoadQueues[0]})});
    });
  };
  auto nextVmem = [&](size_t k) {
    while (k < plans.size() && !plans[k].usesVmem) ++k;
    return k;
  };
  // The first ownBuffers - 1 VMEM actions' own pieces; VMEM action j's go
  // into buffer j mod ownBuffers.
  size_t loadedUpTo = 0;  // the actions before it have had their own loads issued
  int64_t loads = 0;
  size_t emitted = 0;  // the actions before it have been emitted
  // Issue loads for VMEM actions < upTo, but none before the finals it reads
  // (a later phase's own piece is a final's result) have been emitted.
  auto loadAhead = [&](int64_t upTo) {
    while (loads < upTo) {
      size_t next = nextVmem(loadedUpTo);
      if (next >= plans.size()) return;
      if (order.readsFinal[next] >= int64_t(emitted)) return;
      loadOwn(next, loads % ownBuffers);
      loadedUpTo = next + 1;
      ++loads;
    }
  };
  // The first phase's kept blocks: each final's own pieces loaded into the
  // kept layout now, while the links pace the first sends and HBM has room,
  // instead of one by one at the phase's end (v4 4x4x4 16 MiB: 24 loads of
  // 170 KiB after the last sends, the links idle meanwhile). The finals
  // combine them from there (a VMEM -> VMEM own load).
  for (size_t i = 0; i < streams.size(); ++i) {
    const Words& w = words[i];
    if (w.preload < 0) continue;
    const Stream& s = streams[i];
    std::vector<uint32_t> from(static_cast<size_t>(devices)), to(from.size());
    const uint64_t keep = uint64_t(credits.keepRow.at({s.part, s.phase})) * isa::kVmemRowBytes;
    for (int64_t dev = 0; dev < devices; ++dev) {
      from[size_t(dev)] = uint32_t(plan.blockAddress(g.operand, s, dev, plan.coord(dev, s.dim), 0));
      to[size_t(dev)] = uint32_t(plan.keptFinalAddress(keep, s, 0));
    }
    setAddr(w.preload, 1, from, "reduce-scatter final blocks");
    setAddr(w.preload, 3, to, "reduce-scatter kept blocks");
    code.emit({makeInstruction(Opcode::SLi, {kSrc, w.preload})});
    code.emit({makeInstruction(Opcode::Dma, {kSrc, preloadFlag, storeQueue})});
    ++preloads;
  }
  loadAhead(ownBuffers - 1);

  for (size_t k = 0; k < actions.size(); ++k) {
    const auto& [t, i, x] = actions[k];
    const Stream& s = streams[size_t(i)];
    const Words& w = words[size_t(i)];
    const ActionPlan& a = plans[k];
    const int flag = flags.firstStream - i;
    auto mask = [&](auto pred) { return maskOf(a, pred); };
    // This action's own load, if its final came too late to load it ahead.
    if (a.usesVmem) loadAhead(vmemActions + 1);
    // Epochs of kSlots / 2 VMEM actions: before a slot is reused, every send
    // (paced: every deferred store; on lines also every link's sends) of the
    // epoch that used it last has finished (its parity's flag counts them);
    // paced rings wait for the slot's last send on its own link (slotSend).
    if (a.usesVmem) {
      int e = int(vmemActions / epochActions);
      while (epoch < e) {
        ++epoch;
        epochSends.push_back(0);
        epochLinkSends.push_back(linkSends);
        if (epoch >= 2 && epochSends[size_t(epoch - 2)] > 0)
          code.emit({makeInstruction(Opcode::SyncWait,
                                     {flags.sent[epoch % 2], epochSends[size_t(epoch - 2)]})});
        if (paced && !slotWaits && epoch >= 2)
          for (int l = 0; l < links; ++l) waitLink(l, epochLinkSends[size_t(epoch - 1)][size_t(l)]);
      }
    }
    const int64_t slot = vmemActions % kSlots;
    if (a.usesVmem && slotWaits && slotSend[size_t(slot)].first >= 0) {
      waitLink(slotSend[size_t(slot)].first, slotSend[size_t(slot)].second);
      slotSend[size_t(slot)].first = -1;
    }
    // A half ring's first final leaves its sum in its meet buffer; the
    // second adds its arrival to that instead of an own piece.
    const bool keep = a.meetBuffer >= 0 && a.roles.at(0) == Role::FinalKeep;
    const bool meet = a.meetBuffer >= 0 && !keep;
    const int64_t own = meet ? meetRow(a.meetBuffer) : ownRow(vmemActions % ownBuffers);
    // Where the combine's result goes: the out slot, or the meet buffer.
    const int64_t out = keep ? meetRow(a.meetBuffer) : slotRow(slot);
    const int sentFlag = flags.sent[epoch % 2];
    const int sendFlag = paced ? linkFlag(linkOf(s)) : sentFlag;

    const bool direct = credits.direct[size_t(i)];
    const int creditFlag =
        flags.firstCredit -
        int(2 * (std::find(g.gridDims.begin(), g.gridDims.end(), s.dim) - g.gridDims.begin()) +
            (s.dir > 0 ? 0 : 1));
    if (a.usesVmem && direct) {
      // The arrived piece is in its VMEM landing slot: combine it with the
      // own piece into the out slot, then hand the landing slot back.
      tables.forDevicesWith(mask(isCombine), kVal, "reduce-scatter combines", [&] {
        code.emit({makeInstruction(Opcode::SyncWait, {flag, 1})});
        if (!meet) code.emit({makeInstruction(Opcode::SyncWait, {ownFlag, 1})});
        tables.load(credits.landingRow[k], kSlotRow, "reduce-scatter landing slots");
        code.emit({makeInstruction(Opcode::SLi, {kOwnRow, own})});
        const int64_t vregs =
            int64_t((plan.pieceTotal(s) + 8 * isa::kVmemRowBytes - 1) / (8 * isa::kVmemRowBytes));
        combine.emit(vregs, own, int64_t(credits.first[size_t(i)]), out - own);
      });
      tables.forDevicesWith(credits.creditTo[k], kPeer, "reduce-scatter credits", [&] {
        code.emit({makeInstruction(Opcode::SyncRemote, {kPeer, creditFlag, 1})});
      });
    } else if (a.usesVmem) {
      tables.forDevicesWith(mask(isCombine), kVal, "reduce-scatter combines", [&] {
        code.emit({makeInstruction(Opcode::SyncWait, {flag, 1})});
        setAddr(w.loadArrived, 1, a.arrived, "reduce-scatter arrived pieces");
        code.emit({makeInstruction(Opcode::SLi, {kVal, slotRow(slot) * isa::kVmemRowBytes}),
                   makeInstruction(Opcode::SLi, {kSrc, w.loadArrived})});
        code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, 3})});
        code.emit({makeInstruction(Opcode::Dma, {kSrc, flags.local, kLoadQueues[1]})});
        if (meet) {
          code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
        } else if (ownFlag == flags.local) {
          code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 2})});
        } else {
          code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
          code.emit({makeInstruction(Opcode::SyncWait, {ownFlag, 1})});
        }
        code.emit({makeInstruction(Opcode::SLi, {kOwnRow, own}),
                   makeInstruction(Opcode::SLi, {kSlotRow, slotRow(slot)})});
        const int64_t vregs =
            int64_t((plan.pieceTotal(s) + 8 * isa::kVmemRowBytes - 1) / (8 * isa::kVmemRowBytes));
        if (keep)
          combine.emit(vregs, own, slotRow(slot), out - own);
        else
          combine.emit(vregs, own, slotRow(slot));
      });
    }
    // A send into a VMEM landing slot waits for the credit of the piece that
    // slot held R arrivals ago; grouped by count (the same code on every chip).
    std::vector<uint32_t> sendTo = a.sendTo;
    if (direct) {
      std::set<int64_t> counts;
      for (int64_t dev = 0; dev < devices; ++dev) {
        if (credits.wait[k][size_t(dev)] > 0) counts.insert(credits.wait[k][size_t(dev)]);
        if (isSend(a.roles[size_t(dev)]))
          sendTo[size_t(dev)] = credits.sendRow[k][size_t(dev)] * uint32_t(isa::kVmemRowBytes);
      }
      for (int64_t c : counts) {
        std::vector<bool> on;
        for (int64_t dev = 0; dev < devices; ++dev) on.push_back(credits.wait[k][size_t(dev)] == c);
        tables.forDevicesWith(maskTable(on), kVal, "reduce-scatter credit waits", [&] {
          code.emit({makeInstruction(Opcode::SyncWait, {creditFlag, c})});
        });
      }
    }
    if (std::any_of(a.roles.begin(), a.roles.end(), [](Role r) { return r == Role::SendOwn; }))
      drainFor(s);
    if (paced && a.sends) waitLink(linkOf(s), linkSends[size_t(linkOf(s))]);
    // Sends: the combined piece from its slot, or this chip's own piece.
    tables.forDevicesWith(
        mask([](Role r) { return r == Role::CombineSend; }), kVal, "reduce-scatter sends", [&] {
          setAddr(w.sendSlot, 3, sendTo, "reduce-scatter sent pieces");
          code.emit({makeInstruction(Opcode::SLi, {kVal, slotRow(slot) * isa::kVmemRowBytes}),
                     makeInstruction(Opcode::SLi, {kSrc, w.sendSlot})});
          code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, 1})});
          tables.load(peers.at({s.dim, s.dir}), kPeer, "reduce-scatter neighbours");
          code.emit({makeInstruction(
              Opcode::DmaRemote, {kSrc, kPeer, sendFlag, flag, kSendQueues[s.dir > 0 ? 0 : 1]})});
        });
    tables.forDevicesWith(
        mask([](Role r) { return r == Role::SendOwn; }), kVal, "reduce-scatter sends", [&] {
          setAddr(w.sendOwn, 1, a.own, "reduce-scatter own pieces");
          setAddr(w.sendOwn, 3, sendTo, "reduce-scatter sent pieces");
          tables.load(peers.at({s.dim, s.dir}), kPeer, "reduce-scatter neighbours");
          code.emit({makeInstruction(Opcode::SLi, {kSrc, w.sendOwn})});
          code.emit({makeInstruction(
              Opcode::DmaRemote, {kSrc, kPeer, sendFlag, flag, kSendQueues[s.dir > 0 ? 0 : 1]})});
        });
    // Every chip counts one send per sending action (its own, or a local signal).
    if (a.sends) {
      tables.forDevicesWith(mask([&](Role r) { return !isSend(r); }), kVal,
                            "reduce-scatter non-senders", [&] {
                              code.emit({makeInstruction(Opcode::SyncSignal, {sendFlag, 1})});
                            });
      if (paced) {
        ++linkSends[size_t(linkOf(s))];
        if (a.usesVmem && slotWaits)
          slotSend[size_t(slot)] = {linkOf(s), linkSends[size_t(linkOf(s))]};
      } else {
        ++epochSends[size_t(epoch)];
      }
    }
    // Finals: the reduced piece to the phase's destination.
    tables.forDevicesWith(
        mask([](Role r) { return r == Role::Final; }), kVal, "reduce-scatter finals", [&] {
          setAddr(w.store, 3, a.dest, "reduce-scatter reduced pieces");
          code.emit({makeInstruction(Opcode::SLi, {kVal, slotRow(slot) * isa::kVmemRowBytes}),
                     makeInstruction(Opcode::SLi, {kSrc, w.store})});
          code.emit({makeInstruction(Opcode::SSt, {kVal, kSrc, 1})});
          if (deferStores) {
            code.emit({makeInstruction(Opcode::Dma, {kSrc, sentFlag, storeQueue})});
          } else {
            code.emit({makeInstruction(Opcode::Dma, {kSrc, flags.local, storeQueue})});
            code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
          }
        });
    const bool finals =
        std::any_of(a.roles.begin(), a.roles.end(), [](Role r) { return r == Role::Final; });
    if (deferStores && finals) {
      // Every chip counts one per action with a final (its store, or a local signal).
      tables.forDevicesWith(mask([](Role r) { return r != Role::Final; }), kVal,
                            "reduce-scatter non-finals", [&] {
                              code.emit({makeInstruction(Opcode::SyncSignal, {sentFlag, 1})});
                            });
      ++epochSends[size_t(epoch)];
      pendingStores.insert({s.part, s.phase});
    }
    emitted = k + 1;
    if (a.usesVmem) {
      ++vmemActions;
      // The own pieces of the VMEM action ownBuffers - 1 ahead, into the
      // buffer this one used, after its final store (with two buffers: a
      // line's second final reads what the first stored) and wait.
      loadAhead(vmemActions + ownBuffers - 1);
    }
  }
  // Every send has left.
  for (int e = std::max(0, epoch - 1); e <= epoch; ++e)
    if (epochSends[size_t(e)] > 0)
      code.emit({makeInstruction(Opcode::SyncWait, {flags.sent[e % 2], epochSends[size_t(e)]})});
  for (int l = 0; l < links; ++l) waitLink(l, linkSends[size_t(l)]);
}

}  // namespace tpusim::lower
