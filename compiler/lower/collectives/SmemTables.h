// Per-device values of the collectives' hand-placed code: every chip runs the
// same code, so what differs between devices (a neighbour, a block address)
// is a table of one SMEM word per device read at chip.id (held in kTableId).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/lower/control/ControlCode.h"
#include "isa/Isa.h"

namespace tpusim::lower {

// Registers of the tables (the module's own code keeps nothing in registers
// across ops): chip.id, the address scratch and the compare scratch.
constexpr int kTableId = 2, kTableAddr = 7, kTableTmp = 4;
constexpr uint32_t kNoDevice = 0xFFFFFFFFu;  // "nothing for this device"

class SmemTables {
 public:
  explicit SmemTables(ControlCode& code) : code_(code) {}
  // reg = values[chip.id]; an immediate when every device has the same value.
  void load(const std::vector<uint32_t>& values, int reg, const std::string& what) {
    if (std::all_of(values.begin(), values.end(), [&](uint32_t v) { return v == values[0]; })) {
      code_.emit({makeInstruction(isa::Opcode::SLi, {reg, int64_t(values[0])})});
      return;
    }
    auto it = words_.find(values);
    int64_t word =
        it != words_.end() ? it->second : (words_[values] = code_.smemWords(values, what));
    code_.emit({makeInstruction(isa::Opcode::SLi, {kTableAddr, word})});
    code_.emit({makeInstruction(isa::Opcode::SAdd, {kTableAddr, kTableAddr, kTableId})});
    code_.emit({makeInstruction(isa::Opcode::SLd, {reg, kTableAddr, 0})});
  }

  // Emits `body` on the devices whose `values` entry is not kNoDevice (all of
  // them without a test when none is, nothing when all are). `values` is
  // loaded into `reg` first.
  template <typename Body>
  void forDevicesWith(const std::vector<uint32_t>& values, int reg, const std::string& what,
                      Body body) {
    auto none = [](uint32_t v) { return v == kNoDevice; };
    if (std::all_of(values.begin(), values.end(), none)) return;
    load(values, reg, what);
    bool some = std::any_of(values.begin(), values.end(), none);
    uint32_t skip = 0;
    if (some) {
      code_.emit({makeInstruction(isa::Opcode::SLi, {kTableTmp, int64_t(kNoDevice)})});
      code_.emit({makeInstruction(isa::Opcode::SCmpEq, {kTableTmp, reg, kTableTmp})});
      skip = code_.branchIfNonZero(kTableTmp);
    }
    body();
    if (some) code_.patch(skip, code_.label());
  }

 private:
  ControlCode& code_;
  std::map<std::vector<uint32_t>, int64_t> words_;
};

// The grid algorithms' neighbours: per (slice dimension, direction +1 / -1),
// each device's neighbour (kNoDevice where it has none).
using NeighbourTables = std::map<std::pair<int, int>, std::vector<uint32_t>>;

template <typename NeighbourOf>  // uint32_t(int dim, int dir, int64_t dev)
NeighbourTables neighbourTables(const std::vector<int>& dims, int64_t devices,
                                NeighbourOf neighbour) {
  NeighbourTables peers;
  for (int d : dims)
    for (int dir : {1, -1}) {
      std::vector<uint32_t> p;
      for (int64_t dev = 0; dev < devices; ++dev) p.push_back(neighbour(d, dir, dev));
      peers[{d, dir}] = p;
    }
  return peers;
}

// The grid algorithms' start: each chip tells each neighbour it is ready (the
// neighbour sends into this chip's buffers), then waits until each has told it.
inline void emitNeighbourReady(ControlCode& code, SmemTables& tables, const NeighbourTables& peers,
                               int peerReg, int readyFlag, const std::string& what) {
  for (const auto& [key, p] : peers)
    tables.forDevicesWith(p, peerReg, what, [&] {
      code.emit({makeInstruction(isa::Opcode::SyncRemote, {peerReg, readyFlag, 1})});
    });
  for (const auto& [key, p] : peers)
    tables.forDevicesWith(p, peerReg, what, [&] {
      code.emit({makeInstruction(isa::Opcode::SyncWait, {readyFlag, 1})});
    });
}

}  // namespace tpusim::lower
