// scatter of whole slabs with an add or replace combiner: the form JAX emits
// for the gradient of an embedding lookup (scatter-add of [tokens, D] rows
// into a zero [V, D] table). The result is accumulated in VMEM:
//  1. the operand (the table) is DMA'd into VMEM rows, the index array into SMEM;
//  2. the updates stream through VMEM in chunks of slabs, two buffers when
//     they fit (the next chunk loads while one is applied); for each slab a
//     hand-scheduled loop loads its index with `sld`, checks it is in bounds
//     (XLA skips out-of-bounds windows: those slabs go to a scratch row
//     instead) and adds the slab to its table rows (vld, vadd, vst), or
//     stores it there for a replace combiner. A loop body applies up to 4
//     slabs, each slab's row worked out while the one before is applied;
//  3. the table is DMA'd back to the result.
// Slabs are applied one after the other in the order of the update array,
// each finishing its stores before the next loads, so duplicate indices
// accumulate (add) or the last one wins (replace), as XLA defines it.
//
// Supported: one operand, 4-byte elements (f32 add, s32/u32 add, any
// replace), a single index component (scatter_dims_to_operand_dims =
// inserted_window_dims = {0}), index_vector_dim last, the update window the
// trailing update dims covering the operand's other dims fully, each slab a
// whole number of 128-element VMEM rows, and the table fitting in the VMEM
// free to the fragment ([vmemBase, vmemEnd): a kernel's prefetch region in
// flight across it stays untouched; the update chunks shrink to what is left).
#include <fmt/format.h>

#include <algorithm>

#include "compiler/hlo/HloComputation.h"
#include "compiler/lower/dma/DmaLowering.h"

namespace tpusim::lower {

using isa::Opcode;

namespace {
constexpr int64_t kMaxStagedIndices = 1 << 16;     // SMEM words for the index array
constexpr int64_t kChunkBytes = int64_t(4) << 20;  // updates staged per DMA
constexpr int64_t kMaxGroupsPerSlab = 64;          // 8-row vector groups per slab
constexpr int64_t kLanes = 128;                    // elements of a 4-byte VMEM row
constexpr int64_t kMaxRowImm = 32767;              // vld/vst row offset (Simm16)
MOperand I(int64_t v) { return MOperand::imm(v); }

enum class Combiner { Add, Replace };

// add(p0, p1) / add(p1, p0) or p1 (the update replaces the old value).
std::optional<Combiner> combinerOf(const hlo::HloInstruction& s) {
  const hlo::HloComputation* c = s.toApply();
  if (!c || !c->root()) return std::nullopt;
  const hlo::HloInstruction* r = c->root();
  auto param = [](const hlo::HloInstruction* i) {
    return i->opcode() == hlo::HloOpcode::Parameter ? i->attrs().parameterNumber : -1;
  };
  if (param(r) == 1) return Combiner::Replace;
  if (r->opcode() == hlo::HloOpcode::Add && r->operandCount() == 2) {
    int64_t a = param(r->operand(0)), b = param(r->operand(1));
    if ((a == 0 && b == 1) || (a == 1 && b == 0)) return Combiner::Add;
  }
  return std::nullopt;
}

std::vector<int64_t> listAttr(const hlo::HloInstruction& s, const char* key) {
  auto v = s.intListAttr(key);
  return v ? *v : std::vector<int64_t>{};
}
}  // namespace

void lowerScatter(DmaOp& op) {
  const hlo::HloInstruction& s = op.instr;
  if (s.operandCount() != 3)
    op.fail("scatter of several operands (a tuple result) is not supported");
  std::optional<Combiner> combiner = combinerOf(s);
  if (!combiner) op.fail("only scatter combiners add(p0, p1) and p1 (replace) are supported");
  const hlo::Shape& operand = op.operandShape(0);
  const hlo::Shape& indices = op.operandShape(1);
  const hlo::Shape& updates = op.operandShape(2);
  hlo::PrimitiveType t = operand.type;
  bool f32 = t == hlo::PrimitiveType::F32;
  bool int32 = t == hlo::PrimitiveType::S32 || t == hlo::PrimitiveType::U32;
  if (*combiner == Combiner::Add && !f32 && !int32)
    op.fail(fmt::format("scatter-add of {}: only f32, s32 and u32 are supported",
                        hlo::primitiveTypeName(t)));
  if (op.elemBytes() != 4)
    op.fail(fmt::format("scatter of {}: only 4-byte elements are supported",
                        hlo::primitiveTypeName(t)));
  if (!listAttr(s, "input_batching_dims").empty() ||
      !listAttr(s, "scatter_indices_batching_dims").empty())
    op.fail("scatter with batching dims is not supported");
  if (indices.type != hlo::PrimitiveType::S32 && indices.type != hlo::PrimitiveType::U32)
    op.fail(fmt::format("scatter indices of type {}: only s32 and u32 are supported",
                        hlo::primitiveTypeName(indices.type)));
  std::optional<int64_t> ivdAttr = s.intAttr("index_vector_dim");
  if (!ivdAttr) op.fail("scatter without index_vector_dim");
  std::vector<int64_t> idxDims = indices.dims;
  int64_t ivd = *ivdAttr;
  if (ivd == int64_t(idxDims.size())) idxDims.push_back(1);
  if (ivd != int64_t(idxDims.size()) - 1)
    op.fail("scatter with index_vector_dim before the last index dim is not supported");
  std::vector<int64_t> inserted = listAttr(s, "inserted_window_dims");
  std::vector<int64_t> toOperand = listAttr(s, "scatter_dims_to_operand_dims");
  std::vector<int64_t> window = listAttr(s, "update_window_dims");
  if (idxDims.back() != 1 || inserted != std::vector<int64_t>{0} ||
      toOperand != std::vector<int64_t>{0})
    op.fail(
        "only scatters of one index component into dim 0 (inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}) are supported");
  size_t rank = operand.dims.size();
  // The window: the trailing update dims, each covering an operand dim fully.
  if (window.size() + 1 != rank || window.size() > updates.dims.size())
    op.fail("update_window_dims do not match the operand's non-inserted dims");
  size_t firstWindow = updates.dims.size() - window.size();
  for (size_t j = 0; j < window.size(); ++j) {
    if (window[j] != int64_t(firstWindow + j))
      op.fail("only update windows on the trailing update dims are supported");
    if (updates.dims[firstWindow + j] != operand.dims[j + 1])
      op.fail(fmt::format("update window dim {} ({}) does not cover operand dim {} ({})", window[j],
                          updates.dims[firstWindow + j], j + 1, operand.dims[j + 1]));
  }
  if (firstWindow + 1 != idxDims.size())
    op.fail("the update scatter dims do not match the index dims");
  int64_t points = 1;
  for (size_t d = 0; d < firstWindow; ++d) {
    if (updates.dims[d] != idxDims[d])
      op.fail("the update scatter dims do not match the index dims");
    points *= updates.dims[d];
  }
  int64_t slots = operand.dims[0];  // index range
  int64_t slabElems = rank > 1 ? operand.elementCount() / std::max<int64_t>(1, slots) : 1;
  if (slabElems % kLanes != 0)
    op.fail(fmt::format("scatter slabs of {} elements: only whole 128-element rows are supported",
                        slabElems));
  int64_t slabRows = slabElems / kLanes, groups = (slabRows + 7) / 8;
  if (groups > kMaxGroupsPerSlab)
    op.fail(fmt::format("scatter slabs of {} elements are too large (at most {})", slabElems,
                        kMaxGroupsPerSlab * 8 * kLanes));

  DmaFragment& f = op.frag;
  const auto& target = f.target();
  if (target.cores > 1 && op.operandAddresses[0] == op.resultAddress)
    op.fail("an in-place scatter is not supported on a megacore chip (each core reads the table)");
  const int64_t rowBytes = isa::kVmemRowBytes;
  int64_t tableRows = slots * slabRows;
  int64_t slabBytes = slabRows * rowBytes;
  // VMEM rows [tableRow, endRow): the fragment's (a region in flight across
  // it, DmaFragment::vmemBase, stays untouched): the table, a scratch slab
  // for out-of-bounds windows, then the update chunk buffers.
  const int64_t tableRow = f.vmemBase() / rowBytes, endRow = f.vmemEnd() / rowBytes;
  int64_t scratchRow = tableRow + tableRows, bufferRow = scratchRow + groups * 8;
  // The slab loop may load one slab past its buffer (the next body's, unused after the last).
  auto fits = [&](int64_t buffers, int64_t slabs) {
    return bufferRow + buffers * slabs * slabRows + slabRows <= endRow;
  };
  int64_t chunkSlabs = 0;  // the largest divisor of points within kChunkBytes that fits
  for (int64_t c = std::max<int64_t>(1, std::min(points, kChunkBytes / slabBytes)); c >= 1; --c)
    if (points % c == 0 && fits(1, c)) {
      chunkSlabs = c;
      break;
    }
  if (chunkSlabs == 0)
    op.fail(fmt::format(
        "the scatter table ({} bytes) and its staging do not fit the VMEM free to it "
        "(bytes {} to {}{})",
        tableRows * rowBytes, f.vmemBase(), f.vmemEnd(),
        f.vmemEnd() - f.vmemBase() < target.vmemBytes ? ", beside a prefetch in flight" : ""));
  int64_t chunkRows = chunkSlabs * slabRows;
  // Two chunk buffers when they fit: the next chunk loads while this one is applied.
  const int64_t chunks = points / chunkSlabs;
  const bool prefetch = chunks > 1 && fits(2, chunkSlabs);
  if (points == 0) {
    if (op.operandAddresses[0] != op.resultAddress)
      emitMove(op, elementMove(4, {{operand.elementCount(), 1, 1}}, 0, 0), op.operandAddresses[0],
               op.resultAddress);
    return;
  }
  int64_t words = points;
  int64_t limit = std::min(kMaxStagedIndices, target.smemBytes / 4 / 4);
  if (words > limit)
    op.fail(fmt::format("{} scatter indices do not fit the SMEM staging area ({} words)", words,
                        limit));
  uint64_t tableBytes = uint64_t(tableRows * rowBytes);
  uint64_t updateBytes = uint64_t(points * slabBytes);
  if (tableBytes >= (uint64_t(1) << 32) || updateBytes >= (uint64_t(1) << 32))
    op.fail("scatter operands of 4 GiB or more are not supported");

  // 1. Table and indices in. One word past the indices: the slab loop loads
  // the next slab's index ahead, also after the last slab (the value is unused).
  int64_t staged = f.allocSmem(words + 1);
  isa::DmaDescriptor idxIn;
  idxIn.src = isa::MemorySpace::Hbm;
  idxIn.dst = isa::MemorySpace::Smem;
  idxIn.srcAddr = op.operandAddresses[1];
  idxIn.dstAddr = uint64_t(staged) * 4;
  idxIn.innerBytes = uint32_t(words * 4);
  f.dmaStatic(idxIn);
  isa::DmaDescriptor tableIn;
  tableIn.src = isa::MemorySpace::Hbm;
  tableIn.dst = isa::MemorySpace::Vmem;
  tableIn.srcAddr = op.operandAddresses[0];
  tableIn.dstAddr = uint64_t(tableRow * rowBytes);
  tableIn.innerBytes = uint32_t(tableBytes);
  f.dmaStatic(tableIn);
  f.waitAll();

  // 2. Updates, chunk by chunk; each slab applied by the manual loop.
  isa::DmaDescriptor chunkIn;
  chunkIn.src = isa::MemorySpace::Hbm;
  chunkIn.dst = isa::MemorySpace::Vmem;
  chunkIn.srcAddr = op.operandAddresses[2];
  chunkIn.dstAddr = uint64_t(bufferRow * rowBytes);
  chunkIn.innerBytes = uint32_t(chunkSlabs * slabBytes);
  int64_t chunkWord = f.addDescriptor(chunkIn);
  int queue = f.takeQueue();

  const int ls = target.latencyOf(isa::LatencyClass::ScalarMem);
  const int la = target.latencyOf(isa::LatencyClass::ScalarAlu);
  const int lv = target.latencyOf(isa::LatencyClass::VectorLoad);
  const int lw = target.latencyOf(isa::LatencyClass::VectorAlu);
  const int lst = target.latencyOf(isa::LatencyClass::VectorStore);
  // The table rows a slab touches are known only at run time, so no two VMEM
  // accesses share a cycle (they could hit the same banks): per group the
  // table load, the update load one cycle later, the store `storeAt` after
  // the first load; groups start `period` cycles apart, chosen so a store
  // never falls in a cycle of a later group's loads. With `early`, the update
  // load one cycle after the table load is the next slab's (two sets of
  // registers), so a slab's add waits only for its table rows.
  const int unroll = chunkSlabs % 4 == 0 ? 4 : chunkSlabs % 2 == 0 ? 2 : 1;
  const bool early = unroll >= 2 && groups <= 8;
  const int storeAt = (early ? 0 : 1) + lv + lw;
  int period = 2;
  while (storeAt % period < 2) ++period;
  Opcode addOp = f32 ? Opcode::VAddF32 : Opcode::VAddS32;
  // A slab's table row register holds its row less `immBase`, which the
  // loads and stores add as their immediate (no scalar op on the row's
  // critical path) when it fits one; the rest, `regBase`, is added to it.
  const int64_t immBase = tableRow + (groups - 1) * 8 <= kMaxRowImm ? tableRow : 0;
  const int64_t regBase = tableRow - immBase;
  MOperand limitReg = f.constant(slots);
  MOperand scratchReg = f.constant(scratchRow - immBase);
  MOperand baseReg = regBase != 0 ? f.constant(regBase) : MOperand{};

  // A body applies `unroll` slabs. Slab u's table loads issue once slab u-1's
  // stores are visible (duplicate indices accumulate in order: the interlock
  // of isa/README.md covers only loads issued after the store); its table row
  // (index load, bounds check, row) is worked out during slab u-1, the first
  // slab's during the previous body's last, so the loads do not wait for it.
  std::vector<MOperand> at;
  for (int u = 0; u < unroll; ++u) at.push_back(f.newScalar());
  MOperand idxPtr = f.newScalar(), updRow = f.newScalar();
  std::vector<std::vector<MOperand>> upd(2);
  if (early)
    for (auto& set : upd)
      for (int64_t g = 0; g < groups; ++g) set.push_back(f.newVector());
  auto groupMask = [&](int64_t g) {
    return (int64_t(1) << std::min<int64_t>(8, slabRows - g * 8)) - 1;
  };
  // Applies the chunk whose first index is at SMEM[first], staged at VMEM row `rows`.
  auto applyChunk = [&](MOperand first, MOperand rows) {
    // The first slab's table row (XLA skips out-of-bounds windows: those go
    // to the scratch row; the unsigned compare also catches negative indices).
    MOperand idx0 = f.loadSmem(first, 0);
    MOperand row0 = f.mulImm(idx0, slabRows);
    if (regBase != 0) row0 = f.binary(Opcode::SAdd, row0, baseReg);
    f.emit(Opcode::SSel, {at[0], f.binary(Opcode::SCmpLtu, idx0, limitReg), row0, scratchReg});
    f.emit(Opcode::SAddI, {idxPtr, first, I(1)});
    f.emit(Opcode::SAddI, {updRow, rows, I(0)});
    if (early)
      for (int64_t g = 0; g < groups; ++g)
        f.emit(Opcode::VLd, {upd[0][size_t(g)], rows, I(g * 8), I(1), I(groupMask(g))});
    MOperand count = f.constant(chunkSlabs / unroll);
    f.beginManualLoop();
    std::vector<int> scalarOps;  // per cycle, against the preset's scalar slots
    auto scalarAt = [&](int cycle) {
      for (;; ++cycle) {
        if (size_t(cycle) >= scalarOps.size()) scalarOps.resize(size_t(cycle) + 1, 0);
        if (scalarOps[size_t(cycle)] < target.scalarSlots) {
          ++scalarOps[size_t(cycle)];
          return cycle;
        }
      }
    };
    int lastStore = 0, lastLoad = 0, lastSld = 0, rowReady = 0, base = 0;
    for (int u = 0; u < unroll; ++u) {
      base = std::max(u == 0 ? 0 : lastStore + lst, rowReady);
      for (int64_t g = 0; g < groups; ++g) {
        int64_t mask = groupMask(g);
        int64_t off = g * 8;
        int cg = base + int(g) * period;
        MOperand v = early ? upd[size_t(u % 2)][size_t(g)] : f.newVector();
        // Early: the next slab's group (the next body's first slab after the last).
        MOperand loaded = early ? upd[size_t((u + 1) % 2)][size_t(g)] : v;
        int64_t slabAt = early ? u + 1 : u;
        f.emitAt(cg + 1, Opcode::VLd, {loaded, updRow, I(slabAt * slabRows + off), I(1), I(mask)});
        lastLoad = cg + 1;
        int store = cg + storeAt;
        if (*combiner == Combiner::Add) {
          MOperand a = f.newVector(), sum = f.newVector();
          f.emitAt(cg, Opcode::VLd, {a, at[size_t(u)], I(immBase + off), I(1), I(mask)});
          f.emitAt(cg + (early ? 0 : 1) + lv, addOp, {sum, a, v});
          f.emitAt(store, Opcode::VSt, {sum, at[size_t(u)], I(immBase + off), I(1), I(mask)});
        } else {
          f.emitAt(store, Opcode::VSt, {v, at[size_t(u)], I(immBase + off), I(1), I(mask)});
        }
        lastStore = store;
      }
      // The next slab's table row, from the index at SMEM[idxPtr + u], into a
      // register no load or store of this body reads after the select.
      MOperand idx = f.newScalar(), inRange = f.newScalar(), row = f.newScalar();
      int ld = scalarAt(base);
      f.emitAt(ld, Opcode::SLd, {idx, idxPtr, I(u)});
      lastSld = ld;
      int cmp = scalarAt(ld + ls), mul = scalarAt(ld + ls);
      f.emitAt(cmp, Opcode::SCmpLtu, {inRange, idx, limitReg});
      f.emitAt(mul, Opcode::SMulI, {row, idx, I(slabRows)});
      int rowAt = mul;
      if (regBase != 0) {
        MOperand based = f.newScalar();
        rowAt = scalarAt(mul + la);
        f.emitAt(rowAt, Opcode::SAdd, {based, row, baseReg});
        row = based;
      }
      int selFrom = std::max(cmp, rowAt) + la;
      if (unroll == 1) selFrom = std::max(selFrom, lastStore + 1);  // its stores read at[0]
      int sel = scalarAt(selFrom);
      f.emitAt(sel, Opcode::SSel, {at[size_t((u + 1) % unroll)], inRange, row, scratchReg});
      rowReady = sel + la;
    }
    // Pointer updates after their last readers in the body.
    f.emitAt(scalarAt(lastSld + 1), Opcode::SAddI, {idxPtr, idxPtr, I(unroll)});
    f.emitAt(scalarAt(lastLoad + 1), Opcode::SAddI, {updRow, updRow, I(unroll * slabRows)});
    int end = std::max({lastStore + lst, lastLoad + 2, rowReady - 1});
    while (size_t(end) < scalarOps.size() && scalarOps[size_t(end)] >= target.scalarSlots) ++end;
    f.endManualLoop(count, end, chunkSlabs / unroll);
  };

  MOperand bufRow = f.constant(bufferRow);
  if (!prefetch) {
    f.loopNest({{chunks, {chunkSlabs, int64_t(chunkSlabs * slabBytes)}}},
               {f.constant(staged), f.constant(0)}, 1, [&](const std::vector<MOperand>& cur, int) {
                 f.dmaAt(chunkWord,
                         RuntimeAddress{op.operandAddresses[2], true, cur[1], int64_t(updateBytes)},
                         RuntimeAddress{}, queue);
                 f.waitOldest(queue);
                 applyChunk(cur[0], bufRow);
               });
  } else {
    // Chunk j is staged in buffer j % 2 (`bufRow`, toggled); chunk j + 1 is
    // issued before chunk j is waited for (a `dma` reads its descriptor at issue).
    MOperand both = f.constant(2 * bufferRow + chunkRows);
    f.dmaAt(chunkWord, RuntimeAddress{}, RuntimeAddress{}, queue);
    f.loopNest({{chunks - 1, {chunkSlabs, int64_t(chunkSlabs * slabBytes)}}},
               {f.constant(staged), f.constant(chunkSlabs * slabBytes)}, 1,
               [&](const std::vector<MOperand>& cur, int) {
                 MOperand next = f.binary(Opcode::SSub, both, bufRow);
                 f.dmaAt(chunkWord,
                         RuntimeAddress{op.operandAddresses[2], true, cur[1], int64_t(updateBytes)},
                         RuntimeAddress{0, true, f.mulImm(next, rowBytes),
                                        int64_t((bufferRow + 2 * chunkRows) * rowBytes)},
                         queue);
                 f.waitOldest(queue);
                 applyChunk(cur[0], bufRow);
                 f.emit(Opcode::SAddI, {bufRow, next, I(0)});
               });
    f.waitOldest(queue);
    applyChunk(f.constant(staged + (chunks - 1) * chunkSlabs), bufRow);
  }

  // 3. The table out.
  isa::DmaDescriptor tableOut;
  tableOut.src = isa::MemorySpace::Vmem;
  tableOut.dst = isa::MemorySpace::Hbm;
  tableOut.srcAddr = uint64_t(tableRow * rowBytes);
  tableOut.dstAddr = op.resultAddress;
  tableOut.innerBytes = uint32_t(tableBytes);
  f.dmaStatic(tableOut);
  f.waitAll();

  op.info.hbmRead += tableBytes + uint64_t(words * 4) + updateBytes;
  op.info.hbmWritten += tableBytes;
  op.info.vmemWritten += tableBytes + updateBytes;
  op.info.vmemRead += tableBytes;
}

}  // namespace tpusim::lower
