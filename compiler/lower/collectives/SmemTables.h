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
  //
  // `shifted`: the caller reads reg only on devices whose entry is not
  // kNoDevice. When a new table would leave less than a quarter of SMEM free
  // (v5e 16x16 64 MiB reduce-scatter: 1,014 own-piece tables of 256 words),
  // one whose entries are an earlier table's plus a constant (kNoDevice at the
  // same devices) is that table and an add; programs whose tables fit are
  // unchanged.
  void load(const std::vector<uint32_t>& values, int reg, const std::string& what,
            bool shifted = false) {
    if (std::all_of(values.begin(), values.end(), [&](uint32_t v) { return v == values[0]; })) {
      code_.emit({makeInstruction(isa::Opcode::SLi, {reg, int64_t(values[0])})});
      return;
    }
    auto it = words_.find(values);
    int64_t word = -1;
    uint32_t add = 0;
    if (it != words_.end()) {
      word = it->second;
    } else {
      auto [key, base] = shiftKey(values);
      auto sh = shiftedWords_.find(key);
      const int64_t cap = code_.smemCapacityWords();
      const bool tight = cap > 0 && cap - code_.nextSmemWord() - int64_t(values.size()) < cap / 4;
      if (shifted && tight && sh != shiftedWords_.end()) {
        word = sh->second.first;
        add = base - sh->second.second;
      } else {
        word = words_[values] = code_.smemWords(values, what);
        shiftedWords_.emplace(key, std::make_pair(word, base));
      }
    }
    code_.emit({makeInstruction(isa::Opcode::SLi, {kTableAddr, word})});
    code_.emit({makeInstruction(isa::Opcode::SAdd, {kTableAddr, kTableAddr, kTableId})});
    code_.emit({makeInstruction(isa::Opcode::SLd, {reg, kTableAddr, 0})});
    if (add != 0) {
      code_.emit({makeInstruction(isa::Opcode::SLi, {kTableAddr, int64_t(add)})});
      code_.emit({makeInstruction(isa::Opcode::SAdd, {reg, reg, kTableAddr})});
    }
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
  // A table less its first entry that is not kNoDevice (kNoDevice kept), and that entry.
  static std::pair<std::vector<uint32_t>, uint32_t> shiftKey(std::vector<uint32_t> values) {
    uint32_t base = 0;
    for (uint32_t v : values)
      if (v != kNoDevice) {
        base = v;
        break;
      }
    for (uint32_t& v : values)
      if (v != kNoDevice) v -= base;
    return {values, base};
  }

  ControlCode& code_;
  std::map<std::vector<uint32_t>, int64_t> words_;
  // shiftKey -> (word, base) of the first table with that key.
  std::map<std::vector<uint32_t>, std::pair<int64_t, uint32_t>> shiftedWords_;
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
