#include "compiler/lower/collectives/GridAllGather.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "compiler/lower/collectives/HamiltonianRing.h"
#include "compiler/lower/collectives/SmemTables.h"
#include "isa/Isa.h"

namespace tpusim::lower {

using isa::Instruction;
using isa::Opcode;

namespace {

// Registers (the module's own code keeps nothing in registers across ops).
constexpr int kId = 2, kPeer = 3, kTmp = 4, kAddr = 7, kVal = 8, kSrc = 9;
constexpr int kQueue = 0;
constexpr uint32_t kNone = kNoDevice;

int64_t deviceAt(const std::vector<int>& coords, const std::vector<int>& dims) {
  int64_t id = 0;
  for (size_t k = 0; k < dims.size(); ++k) id = id * dims[k] + coords[k];
  return id;
}

// One direction of one part in one phase: its blocks move along `dim`.
// A segment of a block: piece q, its byte range within the stream's range.
struct Segment {
  int q = 0;
  uint64_t offset = 0, bytes = 0;
};

struct Stream {
  int part = 0, phase = 0, dir = 0, dim = 0;
  bool ring = false;
  // A ring of a grid dimension goes half way round each way: both directions
  // carry the part's whole range, each to the nearer half of the ring (the
  // last step of an even ring: each direction half of the opposite chunk), so
  // a block takes n / 2 hops, not n - 1, for the same bytes per link.
  bool halfRing = false, splitLast = false;  // splitLast: an even ring
  uint64_t offset = 0, bytes = 0;            // byte range of each chunk it moves
  std::vector<int> earlier;                  // dimensions gathered in earlier phases
  double stepCycles = 0, start = 0;
  int steps = 0;  // send steps of the chip that sends the most
  // Paced rings: a block in `pieces` pieces of pieceBytes of each chunk's
  // range (the last one the rest), and the actions' order key of step 0.
  int pieces = 1;
  uint64_t pieceBytes = 0;
  double orderStart = 0;
  uint64_t pieceLength(int q) const {
    return q + 1 < pieces ? pieceBytes : bytes - uint64_t(pieces - 1) * pieceBytes;
  }
  // The pieces step k sends, in their send order (a half ring's last step of
  // an even ring: the direction's half of them, or of the range when it is
  // one piece).
  std::vector<Segment> segments(int64_t k) const {
    std::vector<Segment> v;
    const bool half = splitLast && k == steps - 1;
    if (half && pieces == 1) {
      const uint64_t mid = bytes / 2;
      v.push_back(dir > 0 ? Segment{0, 0, mid} : Segment{0, mid, bytes - mid});
      return v;
    }
    int first = 0, end = pieces;
    if (half) (dir > 0 ? end : first) = pieces / 2;
    for (int q = first; q < end; ++q) v.push_back({q, uint64_t(q) * pieceBytes, pieceLength(q)});
    // The reverse way sends its pieces last to first at every step: a chip
    // takes a stream's arrivals in their send order (one counting flag), so
    // the upper half it forwards at the split step must arrive first.
    if (halfRing && dir < 0) std::reverse(v.begin(), v.end());
    return v;
  }
};

// A paced ring's block goes in pieces of about this many hop latencies on the
// wire when it takes at least two: a step then waits for the first piece's
// transfer and hop, not the whole block's. The count comes from a part's
// last phase (Planner::partPieces) and holds for all its phases, so a later
// phase's piece q reads only the earlier phases' pieces q.
constexpr double kPieceHops = 1.0;
constexpr uint64_t kMinPieceBytes = 32 << 10;  // of the last phase's block
constexpr int kMaxPieces = 16;

class Planner {
 public:
  // `paced`: the per-dimension rings' sends are paced per link (their blocks
  // may go in pieces); the estimate (totalCycles) does not depend on it.
  Planner(const GridGather& g, const target::ChipConfig& chip, bool paced = false)
      : g_(g), chip_(chip) {
    for (int64_t d : g.gridDims) {
      int64_t s = 1;
      for (int64_t e : g.gridDims)
        if (e > d) s *= g.slice[size_t(e)];
      stride_[int(d)] = s;
    }
    devices_ = 1;
    for (int d : g.slice) devices_ *= d;
    for (int64_t id = 0; id < devices_; ++id) coords_.push_back(coordsOf(id, g.slice));
    for (size_t p = 0; p < g.ringOrder.size(); ++p) coords_[size_t(g.ringOrder[p])] = {int(p)};
    // Only where every dimension is a ring: with a line among them (v5e 4x4,
    // tiny8 2x4) the line's end links set the step and the pieces only add
    // sends (tiny8 2x4 4 MiB: 43,741 cycles in pieces, 42,754 paced whole).
    paced_ = paced && g.ringOrder.empty() &&
             std::all_of(g.gridDims.begin(), g.gridDims.end(),
                         [&](int d) { return sliceWraps(size(d), chip.ici); });
    buildStreams();
    // No block in pieces (small sizes): the unpaced plan, as before.
    if (paced_ && std::all_of(streams_.begin(), streams_.end(),
                              [](const Stream& s) { return s.pieces == 1; })) {
      paced_ = false;
      streams_.clear();
      buildStreams();
    }
  }

  const std::vector<Stream>& streams() const { return streams_; }
  int64_t devices() const { return devices_; }
  int size(int dim) const { return g_.slice[size_t(dim)]; }

  // Blocks device `dev` sends / receives in stream `s` (line: only towards an end).
  int64_t sends(const Stream& s, int64_t dev) const {
    int a = coords_[size_t(dev)][size_t(s.dim)], n = size(s.dim);
    if (s.ring) return s.steps;
    if (s.dir > 0) return a < n - 1 ? a + 1 : 0;
    return a > 0 ? n - a : 0;
  }
  int64_t arrivals(const Stream& s, int64_t dev) const {
    int a = coords_[size_t(dev)][size_t(s.dim)], n = size(s.dim);
    if (s.ring) return s.steps;
    return s.dir > 0 ? a : n - 1 - a;
  }
  // The address of the block device `dev` sends at step k (the same on every chip).
  uint64_t blockAddress(const Stream& s, int64_t dev, int64_t k) const {
    const std::vector<int>& a = coords_[size_t(dev)];
    int n = size(s.dim);
    int64_t x = a[size_t(s.dim)] - s.dir * k;
    x = ((x % n) + n) % n;
    int64_t slot = g_.ringOrder.empty() ? x * stride_.at(s.dim) : g_.ringOrder[size_t(x)];
    for (int e : g_.gridDims)
      if (e != s.dim && std::find(s.earlier.begin(), s.earlier.end(), e) == s.earlier.end())
        slot += a[size_t(e)] * stride_.at(e);
    return g_.result + uint64_t(slot) * g_.chunk + s.offset;
  }
  // The neighbour of `dev` along `dim` in direction `dir` (kNone at a line's end).
  uint32_t neighbour(int dim, int dir, int64_t dev) const {
    std::vector<int> c = coords_[size_t(dev)];
    int n = size(dim);
    c[size_t(dim)] += dir;
    if (c[size_t(dim)] < 0 || c[size_t(dim)] >= n) {
      if (!sliceWraps(n, chip_.ici) && g_.ringOrder.empty()) return kNone;
      c[size_t(dim)] = (c[size_t(dim)] + n) % n;
    }
    if (!g_.ringOrder.empty()) return uint32_t(g_.ringOrder[size_t(c[size_t(dim)])]);
    return uint32_t(deviceAt(c, g_.slice));
  }
  int64_t slotOf(int64_t dev) const {
    if (!g_.ringOrder.empty()) return dev;  // the ring spans the whole slice
    int64_t slot = 0;
    for (int e : g_.gridDims) slot += coords_[size_t(dev)][size_t(e)] * stride_.at(e);
    return slot;
  }
  bool pacedStream(const Stream&) const { return paced_; }
  isa::DmaDescriptor descriptor(const Stream& s, uint64_t bytes) const {
    isa::DmaDescriptor d;
    d.src = isa::MemorySpace::Hbm;
    d.dst = isa::MemorySpace::Hbm;
    d.innerBytes = uint32_t(bytes);
    d.numDims = 1 + int(s.earlier.size());
    d.counts = {1, 1, 1};
    d.srcStrides = {0, 0, 0};
    d.dstStrides = {0, 0, 0};
    for (size_t i = 0; i < s.earlier.size(); ++i) {
      d.counts[i] = uint32_t(size(s.earlier[i]));
      d.srcStrides[i] = d.dstStrides[i] = uint32_t(uint64_t(stride_.at(s.earlier[i])) * g_.chunk);
    }
    return d;
  }
  double totalCycles() const {
    double worst = 0;
    for (const Stream& s : streams_)
      worst = std::max(worst, s.start + double(s.steps) * s.stepCycles);
    return worst + double(chip_.ici.latency_cycles);  // the ready signals
  }

 private:
  // Every phase of a part goes in the pieces of its last phase's block (the
  // largest: every chunk of the other dimensions), about a hop's time each
  // where that block takes at least two hops on the wire: a later phase's
  // piece q then reads only the earlier phases' pieces q and starts right
  // after their last arrivals, and the first phases' small blocks (under a
  // hop each) are forwarded piece by piece instead of whole at every hop
  // (v5e 16x16 16 MiB all-gather, 12 pieces: 155,843 -> 148,496 cycles).
  int partPieces(uint64_t partBytes, int lastDim) const {
    const double bw = chip_.ici.link_bytes_per_second / chip_.core.clock_hz;
    const double lat = double(chip_.ici.latency_cycles);
    uint64_t chunks = 1;
    for (int e : g_.gridDims)
      if (e != lastDim) chunks *= uint64_t(size(e));
    const uint64_t blockBytes = partBytes * chunks;
    const double block = double(blockBytes) / bw;
    if (block < 2 * kPieceHops * lat) return 1;
    const int pieces = int(std::clamp<double>(
        std::min(std::round(block / (kPieceHops * lat)), double(blockBytes / kMinPieceBytes)), 1,
        kMaxPieces));
    // Even: an even ring's last step splits its pieces equally between the
    // two directions (tiny8 4x4 192 KiB per device: 9 pieces 22,008 cycles,
    // 8 21,492, 10 21,526).
    return std::max(2, pieces / 2 * 2);
  }

  void buildStreams() {
    const int parts = int(g_.gridDims.size());
    const double bw = chip_.ici.link_bytes_per_second / chip_.core.clock_hz;
    const double lat = double(chip_.ici.latency_cycles);
    for (int j = 0; j < parts; ++j) {
      uint64_t lo = g_.chunk * uint64_t(j) / uint64_t(parts);
      uint64_t hi = g_.chunk * uint64_t(j + 1) / uint64_t(parts);
      double start = 0, orderStart = 0;
      int prevPieces = 1;
      double prevStep = 0;
      bool prevInOrder = true;
      std::vector<int> earlier;
      const int pieces =
          paced_ ? partPieces(hi - lo, g_.gridDims[size_t((j + parts - 1) % parts)]) : 1;
      for (int p = 0; p < parts; ++p) {
        int dim = g_.gridDims[size_t((j + p) % parts)];
        bool ring = sliceWraps(size(dim), chip_.ici) || !g_.ringOrder.empty();
        // The Hamiltonian ring keeps a half of the part each way all round.
        const bool halfRing = ring && g_.ringOrder.empty();
        uint64_t half = lo + (hi - lo) / 2;
        int64_t blockChunks = 1;
        for (int e : earlier) blockChunks *= size(e);
        double step = 0;
        for (int dir : {1, -1}) {
          Stream s;
          s.part = j;
          s.phase = p;
          s.dir = dir;
          s.dim = dim;
          s.ring = ring;
          s.halfRing = halfRing;
          s.splitLast = halfRing && size(dim) % 2 == 0;
          s.steps = halfRing ? size(dim) / 2 : size(dim) - 1;
          s.offset = ring && !halfRing && dir < 0 ? half : lo;
          s.bytes = ring && !halfRing ? (dir > 0 ? half - lo : hi - half) : hi - lo;
          s.earlier = earlier;
          s.start = start;
          step = std::max(step, lat + double(s.bytes * uint64_t(blockChunks)) / bw);
          streams_.push_back(s);
        }
        const int steps = streams_.back().steps;
        // A later phase with the previous one's pieces starts right after their
        // last arrivals (its piece q after their pieces q), else after the phase.
        // Only where those last arrivals come in piece order each way: an odd
        // half ring's reverse way takes every piece at its last step, last to
        // first, so its piece 0 arrives last, after the later phase's piece 0
        // was sent (tiny8 3x9 / 3x3 / 5x5 wrapping, 1 MiB: stale blocks sent).
        if (p > 0 && pieces > 1 && pieces == prevPieces && prevInOrder)
          orderStart -= prevStep * (1 - 1e-3 / pieces);
        for (size_t b = streams_.size() - 2; b < streams_.size(); ++b) {
          Stream& s = streams_[b];
          s.stepCycles = step;
          // At least one piece: a chunk under 4 bytes (an f32[1] gathered) has no 4-byte pieces.
          s.pieces = int(std::clamp<uint64_t>(s.bytes / 4, 1, uint64_t(pieces)));
          s.pieceBytes = (s.bytes / uint64_t(s.pieces) + 3) / 4 * 4;
          while (s.pieces > 1 && uint64_t(s.pieces - 1) * s.pieceBytes >= s.bytes) --s.pieces;
          s.orderStart = orderStart;
        }
        prevPieces = pieces;
        prevStep = step;
        prevInOrder = !(halfRing && size(dim) % 2 == 1);
        start += double(steps + 1) * step;
        orderStart += double(steps + 1) * step;
        earlier.push_back(dim);
      }
    }
  }

  const GridGather& g_;
  const target::ChipConfig& chip_;
  bool paced_ = false;
  std::map<int, int64_t> stride_;  // slot stride of each grid dimension
  int64_t devices_ = 0;
  std::vector<std::vector<int>> coords_;
  std::vector<Stream> streams_;
};

}  // namespace

std::optional<std::vector<int>> gridGatherDims(const DeviceGroups& groups,
                                               const std::vector<int>& slice) {
  std::optional<std::vector<int>> spans;
  for (const auto& g : groups) {
    std::vector<std::vector<int>> c;
    for (int64_t id : g) c.push_back(coordsOf(id, slice));
    std::vector<int> dims;
    int64_t size = 1;
    for (size_t d = 0; d < slice.size(); ++d)
      for (const auto& m : c)
        if (m[d] != c[0][d]) {
          dims.push_back(int(d));
          size *= slice[d];
          break;
        }
    if (dims.empty() || int(dims.size()) > kMaxGridGatherDims || size != int64_t(g.size()))
      return std::nullopt;
    if (spans && *spans != dims) return std::nullopt;
    spans = dims;
    // Member p sits at the row-major coordinates p over `dims`.
    for (size_t p = 0; p < g.size(); ++p) {
      int64_t rest = int64_t(p);
      for (size_t k = dims.size(); k-- > 0;) {
        int d = dims[k];
        if (c[p][size_t(d)] != rest % slice[size_t(d)]) return std::nullopt;
        rest /= slice[size_t(d)];
      }
    }
  }
  return spans;
}

bool gridAllGatherFits(const GridGather& g) {
  const uint64_t n = uint64_t(g.groups.at(0).size());
  const uint64_t limit = uint64_t(1) << 32;
  return g.chunk >= 2 * uint64_t(g.gridDims.size()) && g.result + n * g.chunk < limit &&
         g.operand + g.chunk < limit && n * g.chunk < (uint64_t(1) << 31);
}

namespace {

// The Hamiltonian ring's plan where its link share is no higher and its
// estimate beats the grid's (taken at least as the busiest link's share of
// the data: the grid's own estimate charges each part's phases as if they
// had their links alone); else g. Unlike the reduce-scatter, the ring also
// wins on square slices at large sizes, where the link shares are equal:
// the grid's phases run one after the other (v5e 2x2, 16 MiB: 285,646 ->
// 215,815 cycles; 4x4: 306,450 -> 286,504).
GridGather planned(const GridGather& g, const target::ChipConfig& chip) {
  std::optional<RingView<GridGather>> v = hamiltonianView(g, chip);
  if (!v || v->ringShare > 1.0001 * v->gridShare) return g;
  // Equal shares and small chunks: per-step costs the estimates leave out
  // decide (tiny8 2x2, 1-cycle hops, 2 KiB chunks: the ring 0.3% slower).
  if (v->ringShare >= 0.97 * v->gridShare && g.chunk < (64 << 10)) return g;
  const double grid = std::max(Planner(g, chip).totalCycles(), v->gridLinkCycles);
  return Planner(v->ring, chip).totalCycles() < grid ? v->ring : g;
}

}  // namespace

double gridAllGatherCycles(const GridGather& g, const target::ChipConfig& chip) {
  return Planner(planned(g, chip), chip).totalCycles();
}

namespace {

// The emission's state, kept from the beginning to the rest (an async
// start's done): the plan, the tables, the actions and how far they went.
struct GridEmission {
  GridEmission(ControlCode& code, const GridGather& gather, const target::ChipConfig& chip,
               const GridGatherFlags& f)
      : g(planned(gather, chip)), plan(g, chip, f.firstLink >= 0), tables(code), flags(f) {}
  GridGather g;
  Planner plan;
  SmemTables tables;
  GridGatherFlags flags;
  NeighbourTables peers;
  std::vector<std::map<uint64_t, int64_t>> descWord;  // per stream: segment bytes -> descriptor
  std::vector<std::tuple<double, int, int64_t, int>> actions;  // (key, stream, step, piece)
  size_t next = 0;                                             // the first action not emitted yet
  bool ownChunkCopied = false;
  // Paced streams' sends per link (2 x grid dimension index + (dir < 0)),
  // and how many of them have been waited for.
  std::vector<int64_t> linkSends = std::vector<int64_t>(2 * kMaxGridGatherDims, 0);
  std::vector<int64_t> linkTaken = std::vector<int64_t>(2 * kMaxGridGatherDims, 0);

  int linkOf(const Stream& s) const {
    return int(2 * (std::find(g.gridDims.begin(), g.gridDims.end(), s.dim) - g.gridDims.begin()) +
               (s.dir > 0 ? 0 : 1));
  }
  // Every send on `link` before number `upTo` has left.
  void waitLink(ControlCode& code, int link, int64_t upTo) {
    int64_t& taken = linkTaken[size_t(link)];
    if (upTo > taken) {
      code.emit({makeInstruction(Opcode::SyncWait, {flags.firstLink - link, upTo - taken})});
      taken = upTo;
    }
  }

  // dst[stream][k]: the block address a device sends, kNone if it sends nothing.
  std::vector<uint32_t> sendTable(const Stream& s, int64_t k) const {
    std::vector<uint32_t> v;
    for (int64_t dev = 0; dev < plan.devices(); ++dev)
      v.push_back(k < plan.sends(s, dev) ? uint32_t(plan.blockAddress(s, dev, k)) : kNone);
    return v;
  }

  // This chip's own chunk into its slot (a local DMA, waited for before the
  // first block that holds it, or at the end).
  void copyOwnChunk(ControlCode& code) {
    const int64_t devices = plan.devices();
    {
      isa::DmaDescriptor d;
      d.src = isa::MemorySpace::Hbm;
      d.dst = isa::MemorySpace::Hbm;
      d.srcAddr = g.operand;
      d.innerBytes = uint32_t(g.chunk);
      int64_t word = code.descriptorWords({d}, "all-gather: own chunk");
      std::vector<uint32_t> slot;
      for (int64_t dev = 0; dev < devices; ++dev)
        slot.push_back(uint32_t(g.result + uint64_t(plan.slotOf(dev)) * g.chunk));
      tables.load(slot, kVal, "all-gather: own slot");
      code.emit({makeInstruction(Opcode::SLi, {kAddr, word})});
      code.emit({makeInstruction(Opcode::SSt, {kVal, kAddr, 3})});
      code.emit({makeInstruction(Opcode::Dma, {kAddr, flags.local, kQueue})});
    }
  }

  // `async`: the own chunk's copy waits for the rest (in the work between
  // the parts it would take HBM bandwidth from that work, not from the
  // transfers, which do not use HBM here).
  void begin(ControlCode& code, bool async) {
    const std::vector<Stream>& streams = plan.streams();
    const int64_t devices = plan.devices();
    code.emit({makeInstruction(Opcode::ChipId, {kId})});
    if (!async) copyOwnChunk(code);

    peers = neighbourTables(g.gridDims, devices, [&](int d, int dir, int64_t dev) {
      return plan.neighbour(d, dir, dev);
    });
    emitNeighbourReady(code, tables, peers, kPeer, flags.ready, "all-gather neighbours");

    // The actions (stream, step) in the order of their estimated start, the
    // same on every chip: every block a chip waits for was sent by an action
    // its neighbour runs earlier in the order, so no chip waits in a cycle.
    for (const Stream& s : streams) {
      std::map<uint64_t, int64_t>& words = descWord.emplace_back();
      for (int64_t k = 0; k < s.steps; ++k)
        for (const Segment& seg : s.segments(k))
          if (!words.count(seg.bytes))
            words[seg.bytes] = code.descriptorWords(
                {plan.descriptor(s, seg.bytes)},
                words.empty() ? "all-gather stream" : "all-gather stream, other piece");
    }
    for (size_t i = 0; i < streams.size(); ++i) {
      const Stream& s = streams[i];
      // Action (k, q): piece q's arrival of step k - 1 (k >= 1), then its send of step k.
      for (int64_t k = 0; k <= s.steps; ++k) {
        const std::vector<Segment> received = s.segments(k == 0 ? 0 : k - 1);
        const std::vector<Segment> sent = k < s.steps ? s.segments(k) : std::vector<Segment>{};
        for (size_t at = 0; at < received.size(); ++at) {
          // Unpaced: the estimate's start (main's order); paced: the pieces'
          // by their place among the step's sends (a split step's from its
          // start each way, so both links are busy), else among its arrivals.
          const int q = received[at].q;
          auto it =
              std::find_if(sent.begin(), sent.end(), [&](const Segment& x) { return x.q == q; });
          const double place = double(it != sent.end() ? size_t(it - sent.begin()) : at);
          double key = plan.pacedStream(s) ? s.orderStart + double(k) * s.stepCycles +
                                                 place * s.stepCycles / s.pieces
                                           : s.start + double(k) * s.stepCycles;
          actions.emplace_back(key, int(i), k, q);
        }
      }
    }
    std::stable_sort(actions.begin(), actions.end());
    // The first sends (this chip's chunk, phase 0) wait for nothing.
    while (next < actions.size()) {
      auto [t, i, k, q] = actions[next];
      if (streams[size_t(i)].phase != 0 || k != 0) break;
      emitAction(code, i, k, q);
      ++next;
    }
  }

  void emitAction(ControlCode& code, int i, int64_t k, int q) {
    const Stream& s = plan.streams()[size_t(i)];
    // The piece this step sends, if it sends piece q at all.
    std::optional<Segment> segment;
    if (k < s.steps)
      for (const Segment& seg : s.segments(k))
        if (seg.q == q) segment = seg;
    const bool paced = plan.pacedStream(s);
    const int flag = flags.firstStream - i;
    if (s.phase > 0 && !ownChunkCopied) {  // later blocks hold this chip's chunk
      code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
      ownChunkCopied = true;
    }
    if (k >= 1) {
      std::vector<uint32_t> wait;
      for (int64_t dev = 0; dev < plan.devices(); ++dev)
        wait.push_back(k <= plan.arrivals(s, dev) ? 1u : kNone);
      tables.forDevicesWith(wait, kVal, "all-gather arrivals", [&] {
        code.emit({makeInstruction(Opcode::SyncWait, {flag, 1})});
      });
    }
    if (!segment) return;
    const std::vector<uint32_t> blocks = sendTable(s, k);
    const bool sends =
        std::any_of(blocks.begin(), blocks.end(), [](uint32_t v) { return v != kNone; });
    if (paced && sends) waitLink(code, linkOf(s), linkSends[size_t(linkOf(s))]);
    const int64_t pieceOffset = int64_t(segment->offset);
    tables.forDevicesWith(blocks, kVal, "all-gather blocks", [&] {
      if (pieceOffset > 0) {  // (saddi takes 16 bits)
        code.emit({makeInstruction(Opcode::SLi, {kTmp, pieceOffset})});
        code.emit({makeInstruction(Opcode::SAdd, {kVal, kVal, kTmp})});
      }
      if (s.phase == 0 && k == 0)  // this chip's chunk: straight from the operand
        code.emit(
            {makeInstruction(Opcode::SLi, {kSrc, int64_t(g.operand + s.offset) + pieceOffset})});
      else
        code.emit({makeInstruction(Opcode::SAddI, {kSrc, kVal, 0})});
      tables.load(peers.at({s.dim, s.dir}), kPeer, "all-gather neighbours");
      code.emit({makeInstruction(Opcode::SLi, {kAddr, descWord[size_t(i)].at(segment->bytes)})});
      code.emit({makeInstruction(Opcode::SSt, {kVal, kAddr, 3})});
      code.emit({makeInstruction(Opcode::SSt, {kSrc, kAddr, 1})});
      const int sentFlag = paced ? flags.firstLink - linkOf(s) : flags.sent;
      code.emit({makeInstruction(Opcode::DmaRemote, {kAddr, kPeer, sentFlag, flag, kQueue})});
    });
    if (paced && sends) ++linkSends[size_t(linkOf(s))];
  }

  void finish(ControlCode& code, bool resumed) {
    const std::vector<Stream>& streams = plan.streams();
    // Work between the parts used the registers: chip.id again.
    if (resumed) {
      code.emit({makeInstruction(Opcode::ChipId, {kId})});
      copyOwnChunk(code);
    }
    for (; next < actions.size(); ++next) {
      auto [t, i, k, q] = actions[next];
      emitAction(code, i, k, q);
    }
    // Every send has left (one count per send, as many as this chip made).
    for (size_t i = 0; i < streams.size(); ++i) {
      if (plan.pacedStream(streams[i])) continue;
      for (int64_t k = 0; k < streams[i].steps; ++k) {
        const int64_t segments = int64_t(streams[i].segments(k).size());
        tables.forDevicesWith(sendTable(streams[i], k), kVal, "all-gather blocks", [&] {
          code.emit({makeInstruction(Opcode::SyncWait, {flags.sent, segments})});
        });
      }
    }
    for (int l = 0; l < 2 * kMaxGridGatherDims; ++l) waitLink(code, l, linkSends[size_t(l)]);
    if (!ownChunkCopied) code.emit({makeInstruction(Opcode::SyncWait, {flags.local, 1})});
  }
};

}  // namespace

void emitGridAllGather(ControlCode& code, const GridGather& g, const target::ChipConfig& chip,
                       const GridGatherFlags& flags) {
  GridEmission e(code, g, chip, flags);
  e.begin(code, false);
  e.finish(code, false);
}

std::function<void(ControlCode&)> beginGridAllGather(ControlCode& code, const GridGather& g,
                                                     const target::ChipConfig& chip,
                                                     const GridGatherFlags& flags) {
  auto e = std::make_shared<GridEmission>(code, g, chip, flags);
  e->begin(code, true);
  return [e](ControlCode& c) { e->finish(c, true); };
}

}  // namespace tpusim::lower
