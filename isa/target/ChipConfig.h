// One chip: every unit's parameters, as loaded from a preset (sim/chips/*.json)
// plus overrides. Metadata (name, description, sources) travels with the values
// so stats can record exactly which configuration produced them.
// Ownership: isa/target owns this aggregate; unit owners edit their own struct.
#pragma once

#include <map>
#include <string>

#include "isa/target/CoreConfig.h"
#include "isa/target/DmaConfig.h"
#include "isa/target/HbmConfig.h"
#include "isa/target/IciConfig.h"
#include "isa/target/LatencyConfig.h"
#include "isa/target/MxuConfig.h"
#include "isa/target/VmemConfig.h"
#include "isa/target/VpuConfig.h"
#include "isa/target/XluConfig.h"

namespace tpusim::target {

struct ChipConfig {
  // Metadata, not parameters: not visited, written and read by the JSON layer.
  std::string name = "default";
  std::string description;
  bool test_preset = false;  // a small chip for fast tests and cosimulation
  // Field path ("hbm.tRCD") -> where its value comes from (public source
  // name, "derived: ...", "assumption: ...").
  std::map<std::string, std::string> sources;

  CoreConfig core;
  VmemConfig vmem;
  MxuConfig mxu;
  VpuConfig vpu;
  XluConfig xlu;
  LatencyConfig latency;
  DmaConfig dma;
  HbmConfig hbm;
  IciConfig ici;

  template <class V>
  void visit(V& v) {
    v.section("core", core);
    v.section("vmem", vmem);
    v.section("mxu", mxu);
    v.section("vpu", vpu);
    v.section("xlu", xlu);
    v.section("latency", latency);
    v.section("dma", dma);
    v.section("hbm", hbm);
    v.section("ici", ici);
  }

  void check(ConfigProblems& p) const {
    p.checkSection("core", core);
    p.checkSection("vmem", vmem);
    p.checkSection("mxu", mxu);
    p.checkSection("vpu", vpu);
    p.checkSection("xlu", xlu);
    p.checkSection("latency", latency);
    p.checkSection("dma", dma);
    p.checkSection("hbm", hbm);
    p.checkSection("ici", ici);
    // A VMEM that cannot hold one (8,128) tile per bank cannot serve a vector load.
    p.require(vmem.rows() >= 8, "vmem.bytes", "must hold at least 8 rows (one vreg)");
  }

  // Derived peaks of the whole chip.
  double macsPerCycle() const {
    return double(core.cores) * double(mxu.count) * double(mxu.size) * double(mxu.size);
  }
  double peakFlopsBf16() const { return 2.0 * macsPerCycle() * core.clock_hz; }
  double peakOpsInt8() const { return peakFlopsBf16() * double(mxu.int8_rate); }
  double hbmPeakBytesPerSecond() const { return hbm.peakBytesPerSecond(); }
  double iciPeakBytesPerSecond() const { return double(ici.links) * ici.link_bytes_per_second; }
};

}  // namespace tpusim::target
