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

}  // namespace tpusim::isa
