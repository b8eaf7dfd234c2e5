#include "isa/Program.h"

namespace tpusim::isa {

const char* dtypeName(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::Bf16:
      return "bf16";
    case DType::S32:
      return "s32";
    case DType::S8:
      return "s8";
    case DType::U8:
      return "u8";
    case DType::S16:
      return "s16";
    case DType::U16:
      return "u16";
    case DType::Pred:
      return "pred";
    case DType::F16:
      return "f16";
    case DType::U32:
      return "u32";
    case DType::S64:
      return "s64";
    case DType::U64:
      return "u64";
  }
  return "?";
}

int dtypeBytes(DType t) {
  switch (t) {
    case DType::S64:
    case DType::U64:
      return 8;
    case DType::F32:
    case DType::S32:
    case DType::U32:
      return 4;
    case DType::F16:
    case DType::Bf16:
    case DType::S16:
    case DType::U16:
      return 2;
    case DType::S8:
    case DType::U8:
    case DType::Pred:
      return 1;
  }
  return 0;
}

bool dtypeFromName(const std::string& name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtypeName(DType(i))) {
      *out = DType(i);
      return true;
    }
  return false;
}

const char* bufferRoleName(BufferRole r) {
  switch (r) {
    case BufferRole::Input:
      return "input";
    case BufferRole::Output:
      return "output";
    case BufferRole::Scratch:
      return "scratch";
    case BufferRole::Constant:
      return "constant";
  }
  return "?";
}

bool bufferRoleFromName(const std::string& name, BufferRole* out) {
  for (int i = 0; i < kNumBufferRoles; ++i)
    if (name == bufferRoleName(BufferRole(i))) {
      *out = BufferRole(i);
      return true;
    }
  return false;
}

bool buffersOverlap(const BufferDesc& a, const BufferDesc& b) {
  if (a.space != b.space || a.sizeBytes == 0 || b.sizeBytes == 0) return false;
  if (!(a.address < b.address + b.sizeBytes && b.address < a.address + a.sizeBytes)) return false;
  bool donated = ((a.role == BufferRole::Input && b.role == BufferRole::Output) ||
                  (a.role == BufferRole::Output && b.role == BufferRole::Input)) &&
                 a.address == b.address && a.sizeBytes == b.sizeBytes;
  return !donated;
}

bool pairLayoutValid(const BufferDesc& b, std::string* why) {
  if (b.pairRows == 0) return true;
  const char* err = nullptr;
  if (b.dtype != DType::S8 || b.shape.size() != 2)
    err = "the packed s8x2 layout is for rank-2 s8 buffers";
  else if (b.space != MemorySpace::Hbm || b.role != BufferRole::Input)
    err = "the packed s8x2 layout is for HBM input buffers";
  else if (b.shape[0] % (2 * int64_t(b.pairRows)) != 0)
    err = "the packed s8x2 layout needs rows in whole chunks of 2 x pair_rows";
  else if (b.shape[1] % kPairLayoutLanes != 0)
    err = "the packed s8x2 layout needs columns in whole tiles of 128";
  if (err && why) *why = err;
  return !err;
}

namespace {

// Calls f(dense offset, stored offset) for every byte of a packed buffer.
template <typename F>
void forPairs(const BufferDesc& b, F f) {
  const uint64_t S = b.pairRows, rows = uint64_t(b.shape[0]), n = uint64_t(b.shape[1]);
  const uint64_t lanes = kPairLayoutLanes, tile = S * lanes * 2;
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t chunk = r / (2 * S), in = r % (2 * S), half = in / S, row = in % S;
    const uint64_t at = chunk * 2 * S * n + row * lanes * 2 + half;
    for (uint64_t c = 0; c < n; ++c) f(r * n + c, at + c / lanes * tile + c % lanes * 2);
  }
}

}  // namespace

std::vector<uint8_t> packBuffer(const BufferDesc& b, const std::vector<uint8_t>& dense) {
  if (b.pairRows == 0) return dense;
  std::vector<uint8_t> out(dense.size());
  forPairs(b, [&](uint64_t d, uint64_t s) { out[s] = dense[d]; });
  return out;
}

std::vector<uint8_t> unpackBuffer(const BufferDesc& b, const std::vector<uint8_t>& stored) {
  if (b.pairRows == 0) return stored;
  std::vector<uint8_t> out(stored.size());
  forPairs(b, [&](uint64_t d, uint64_t s) { out[d] = stored[s]; });
  return out;
}

}  // namespace tpusim::isa
