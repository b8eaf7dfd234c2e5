#include "kernels/codegen/TargetInfo.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tpusim::kernels::codegen {

int TargetInfo::slotsOf(isa::SlotKind k) const {
  switch (k) {
    case isa::SlotKind::Scalar:
      return scalarSlots;
    case isa::SlotKind::VectorAlu:
      return valuSlots;
    case isa::SlotKind::VectorLoad:
      return vldSlots;
    case isa::SlotKind::VectorStore:
      return vstSlots;
    default:
      return isa::slotInfo(k).count;
  }
}

TargetInfo TargetInfo::defaults() {
  TargetInfo t;
  t.name = "default";
  for (int i = 0; i < isa::kNumLatencyClasses; ++i) {
    using L = isa::LatencyClass;
    switch (static_cast<L>(i)) {
      case L::VectorAlu:
      case L::VectorLoad:
      case L::MxuPop:
      case L::ScalarMem:
        t.latency[i] = 2;
        break;
      case L::VectorTrans:
      case L::XluShort:
      case L::XluReduce:
      case L::XluTranspose:
        t.latency[i] = 8;
        break;
      default:
        t.latency[i] = 1;
    }
  }
  return t;
}

namespace {

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TargetError(fmt::format("{}: error: cannot open the chip preset", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Overlays the fields present in `j` onto `t`, checking types and ranges.
void apply(const nlohmann::json& j, const std::string& file, TargetInfo& t) {
  auto field = [&](const char* section, const char* key, auto& out, int64_t lo, int64_t hi) {
    if (!j.contains(section)) return;
    const auto& s = j.at(section);
    if (!s.is_object())
      throw TargetError(fmt::format("{}: error: '{}' must be an object", file, section));
    if (!s.contains(key)) return;
    const auto& v = s.at(key);
    if (!v.is_number_integer())
      throw TargetError(fmt::format("{}: error: '{}.{}' must be an integer", file, section, key));
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      throw TargetError(
          fmt::format("{}: error: '{}.{}' is {}, outside [{}, {}]", file, section, key, x, lo, hi));
    out = static_cast<std::remove_reference_t<decltype(out)>>(x);
  };
  if (j.contains("name") && j.at("name").is_string()) t.name = j.at("name").get<std::string>();
  field("core", "cores", t.cores, 1, 2);
  field("core", "vector_regs", t.vectorRegs, 1, isa::kMaxVectorRegs);
  field("core", "sync_flags", t.syncFlags, 1, isa::kMaxSyncFlags);
  field("core", "scalar_slots", t.scalarSlots, 1, isa::slotInfo(isa::SlotKind::Scalar).count);
  field("core", "valu_slots", t.valuSlots, 1, isa::slotInfo(isa::SlotKind::VectorAlu).count);
  field("core", "vld_slots", t.vldSlots, 1, isa::slotInfo(isa::SlotKind::VectorLoad).count);
  field("core", "vst_slots", t.vstSlots, 1, isa::slotInfo(isa::SlotKind::VectorStore).count);
  field("core", "branch_penalty", t.branchPenalty, 0, 64);
  field("core", "smem_bytes", t.smemBytes, 64, int64_t(1) << 30);
  field("vmem", "bytes", t.vmemBytes, isa::kVmemRowBytes, int64_t(1) << 32);
  field("vmem", "banks", t.vmemBanks, 1, 1024);
  field("mxu", "count", t.mxuCount, 1, isa::kMaxMxus);
  field("mxu", "size", t.mxuSize, 4, 256);
  field("mxu", "acc_slots", t.accSlots, 1, isa::kMaxAccSlots);
  field("vpu", "transcendental_interval", t.transcendentalInterval, 1, 256);
  field("xlu", "count", t.xluCount, 1, 8);
  field("xlu", "permute_interval", t.xluPermuteInterval, 1, 1024);
  field("xlu", "reduce_interval", t.xluReduceInterval, 1, 1024);
  field("dma", "queues", t.dmaQueues, 1, isa::kMaxDmaQueues);
  field("dma", "queue_depth", t.dmaQueueDepth, 1, 1024);
  for (int i = 0; i < isa::kNumLatencyClasses; ++i) {
    std::string key(isa::latencyInfo(static_cast<isa::LatencyClass>(i)).presetKey);
    field("latency", key.c_str(), t.latency[i], 0, 4096);
  }
}

TargetInfo parseAt(const std::string& text, const std::string& file, int depth) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw TargetError(fmt::format("{}: error: not valid JSON: {}", file, e.what()));
  }
  if (!j.is_object())
    throw TargetError(fmt::format("{}: error: a chip preset is a JSON object", file));
  TargetInfo t = TargetInfo::defaults();
  if (j.contains("extends")) {
    if (!j.at("extends").is_string())
      throw TargetError(fmt::format("{}: error: 'extends' must be a preset name", file));
    if (depth > 8) throw TargetError(fmt::format("{}: error: 'extends' nests too deeply", file));
    std::string base = dirOf(file) + "/" + j.at("extends").get<std::string>() + ".json";
    t = parseAt(readFile(base), base, depth + 1);
  } else {
    for (const char* s : {"core", "vmem", "mxu", "latency"})
      if (!j.contains(s))
        throw TargetError(fmt::format("{}: error: the preset has no '{}' section", file, s));
  }
  apply(j, file, t);
  if (t.mxuSize & (t.mxuSize - 1))
    throw TargetError(fmt::format("{}: error: 'mxu.size' must be a power of two", file));
  return t;
}

}  // namespace

TargetInfo parseTarget(const std::string& text, const std::string& file) {
  return parseAt(text, file, 0);
}

TargetInfo loadTarget(const std::string& path) { return parseTarget(readFile(path), path); }

TargetInfo loadTargetByName(const std::string& nameOrPath, const std::string& chipsDir) {
  bool isPath = nameOrPath.find('/') != std::string::npos ||
                (nameOrPath.size() > 5 && nameOrPath.substr(nameOrPath.size() - 5) == ".json");
  return loadTarget(isPath ? nameOrPath : chipsDir + "/" + nameOrPath + ".json");
}

}  // namespace tpusim::kernels::codegen
