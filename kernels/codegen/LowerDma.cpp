// Lowering of async copies: descriptor templates in an SMEM data segment, the
// window addresses written into them at run time, one `dma` per descriptor,
// and `sync.wait` for as many completions as descriptors.
#include <fmt/format.h>

#include "kernels/codegen/CopyPlan.h"
#include "kernels/codegen/Lowering.h"
#include "kernels/llo/Printer.h"

namespace tpusim::kernels::codegen {

using isa::Opcode;

namespace {
MOperand I(int64_t v) { return MOperand::imm(v); }

// Byte address of a ref's element 0 in its space (VMEM: row * 512).
ScalarVal placeBytes(Lowerer& L, const RefPlace& p) {
  int64_t scale = p.type.space == llo::MemSpace::Vmem   ? isa::kVmemRowBytes
                  : p.type.space == llo::MemSpace::Smem ? 4
                                                        : 1;
  return L.mulImm(placeBase(p), scale);
}
}  // namespace

// An array's offsets are computed in 32-bit registers; its base may be anywhere.
static void checkSpan(const AddressSpan& s, const std::string& what) {
  if (s.end - s.begin > (int64_t(1) << 32))
    throw CodegenError(
        fmt::format("{}: an array of {} bytes: offsets within one array are "
                    "computed in 32-bit registers, so arrays must stay below 4 GiB",
                    what, s.end - s.begin));
}

int64_t Lowerer::descriptorTemplate(isa::DmaDescriptor d, const std::string& what, AddressSpan src,
                                    AddressSpan dst) {
  checkSpan(src, what);
  checkSpan(dst, what);
  // The low words are written at run time; fixed high words go in the template.
  if (!src.crossesSegment()) d.srcAddr = uint64_t(src.begin >> 32) << 32;
  if (!dst.crossesSegment()) d.dstAddr = uint64_t(dst.begin >> 32) << 32;
  return fixedDescriptor(d, what);
}

int64_t Lowerer::fixedDescriptor(const isa::DmaDescriptor& d, const std::string& what) {
  int64_t word = mem_.smemWords(what, isa::kDmaDescriptorWords);
  isa::DataSegment seg;
  seg.space = isa::MemorySpace::Smem;
  seg.address = uint64_t(word) * 4;
  for (uint32_t w : d.pack())
    for (int b = 0; b < 4; ++b) seg.bytes.push_back(uint8_t(w >> (8 * b)));
  data_.push_back(std::move(seg));
  return word;
}

void Lowerer::storeDescriptorAddress(MOperand templ, int word, const ScalarVal& addr,
                                     AddressSpan span, const MemAccess& mem) {
  MOperand low = reg(addr);
  auto store = [&](MOperand value, int index) {
    MInstr st = makeInstr(Opcode::SSt, {value, templ, I(index)});
    st.mem = mem;
    emit(st);
  };
  store(low, word);
  if (!span.crossesSegment()) return;
  // addr = span.begin + offset, offset < 2^32: the low word wrapped past the
  // boundary exactly when it is below the base's low word.
  MOperand carry = fn_.newReg(RegClass::Scalar), high = fn_.newReg(RegClass::Scalar);
  emit(Opcode::SCmpLtu, {carry, low, constReg(span.begin & 0xFFFFFFFF)});
  emit(Opcode::SAdd, {high, carry, constReg(span.begin >> 32)});
  store(high, word + 1);
}

// The bytes an HBM ref covers (an empty span for VMEM and SMEM refs).
static AddressSpan hbmSpan(const RefPlace& p) {
  if (p.type.space != llo::MemSpace::Hbm) return {};
  return {p.base, p.base + llo::refBytes(p.type)};
}

// Address of a window's first element: the ref's base plus each index times
// its byte stride (a VMEM column index counts whole column tiles).
static ScalarVal windowAddress(Lowerer& L, const RefPlace& p, const std::vector<ScalarVal>& idx) {
  ScalarVal a = placeBytes(L, p);
  std::vector<int64_t> strides = elementStrides(p.type);
  size_t n = idx.size();
  for (size_t d = 0; d < n; ++d) {
    if (p.type.space == llo::MemSpace::Vmem && d + 1 == n) {
      int64_t tile = llo::tiledLayout(p.type.shape).paddedRows * isa::kVmemRowBytes;
      a = L.add(a, L.mulImm(L.scalarOp(llo::ScalarBin::Shr, idx[d], ScalarVal{true, 7, {}}), tile));
    } else {
      a = L.add(a, L.mulImm(idx[d], strides[d]));
    }
  }
  return a;
}

// The sync flag of a semaphore view (its index must be a constant: flags are
// named in the instruction).
int Lowerer::semaphoreFlag(const llo::Op& op, const llo::ViewRange& v) {
  const RefPlace& sem = place(v.ref);
  ScalarVal semIdx{true, 0, {}};
  for (size_t d = 0; d < v.indices.size(); ++d)
    semIdx = add(mulImm(semIdx, sem.type.shape[d]), scalar(v.indices[d]));
  if (!semIdx.isConst) {
    std::string text = llo::printOp(op);
    throw CodegenError(
        fmt::format("{}:{}: error: cannot compile '{}': the semaphore index must be "
                    "a compile-time constant (sync flags are named in the instruction)",
                    op.loc.file, op.loc.line, text.substr(0, text.find('\n'))));
  }
  return sem.flagBase + int(semIdx.c);
}

void Lowerer::lowerDma(const llo::Op& op) {
  auto views = llo::opViews(op);
  const RefPlace& src = place(views[0].ref);
  const RefPlace& dst = place(views[1].ref);
  const bool remote = op.kind == llo::OpKind::RemoteDmaStart;
  int flag = semaphoreFlag(op, views[2]);
  CopyPlan plan;
  try {
    plan = planCopy(src.type, dst.type, op.ints);
  } catch (const CodegenError& e) {
    throw CodegenError(fmt::format("{}:{}: error: {}", op.loc.file, op.loc.line, e.what()));
  }
  if (op.kind == llo::OpKind::DmaWait) {
    emit(Opcode::SyncWait, {I(flag), I(int64_t(plan.descriptors.size()))});
    return;
  }
  std::vector<ScalarVal> si, di;
  for (const llo::Value* v : views[0].indices) si.push_back(scalar(v));
  for (const llo::Value* v : views[1].indices) di.push_back(scalar(v));
  ScalarVal srcAddr = windowAddress(*this, src, si), dstAddr = windowAddress(*this, dst, di);
  const AddressSpan srcSpan = hbmSpan(src), dstSpan = hbmSpan(dst);
  // A remote copy: dma.remote to the device in a register; the receive flag
  // is the same flag number on the target, which runs the same program.
  MOperand device;
  int recvFlag = -1;
  if (remote) {
    device = reg(scalar(llo::remoteDevice(op)));
    recvFlag = semaphoreFlag(op, views[3]);
  }
  for (size_t i = 0; i < plan.descriptors.size(); ++i) {
    if (remote && plan.descriptors[i].widening())
      throw CodegenError(fmt::format(
          "{}:{}: error: a remote copy cannot use the widening DMA (bf16 / int8 between HBM and "
          "VMEM); copy within one memory space",
          op.loc.file, op.loc.line));
    int64_t word =
        descriptorTemplate(plan.descriptors[i],
                           fmt::format("DMA descriptor (line {})", op.loc.line), srcSpan, dstSpan);
    MOperand base = constReg(word);
    MemAccess mem{MemAccess::Space::Smem, -2, true, -1, 0};
    storeDescriptorAddress(base, 1, addImm(srcAddr, plan.srcOffset[i]), srcSpan, mem);
    storeDescriptorAddress(base, 3, addImm(dstAddr, plan.dstOffset[i]), dstSpan, mem);
    MOperand queue = I(int64_t(i % t_.dmaQueues));
    if (remote)
      emit(Opcode::DmaRemote, {base, device, I(flag), I(recvFlag), queue});
    else
      emit(Opcode::Dma, {base, I(flag), queue});
  }
}

void Lowerer::lowerSemaphore(const llo::Op& op) {
  auto views = llo::opViews(op);
  int flag = semaphoreFlag(op, views[0]);
  int64_t amount = op.ints[0];
  if (op.kind == llo::OpKind::SemWait) return emit(Opcode::SyncWait, {I(flag), I(amount)});
  if (const llo::Value* d = llo::remoteDevice(op))
    return emit(Opcode::SyncRemote, {reg(scalar(d)), I(flag), I(amount)});
  emit(Opcode::SyncSignal, {I(flag), I(amount)});
}

}  // namespace tpusim::kernels::codegen
