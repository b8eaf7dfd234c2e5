// The profile of one run, XProf-style: what each HLO op (or hand-written
// kernel) cost, where it sits under its roofline and what bounds it, grouped
// by category, folded across layers, plus the HBM memory viewer and an
// overview with plain-language findings. Built by buildProfile()
// (BuildProfile.h) from the run's counters; written as profile.json
// (ProfileJson.h), text (ProfileText.h) and report.html (HtmlReport.h).
//
// Units: time in core cycles (an op's cycles are summed over the cores that
// ran it, so on a megacore chip the ops sum to cores x step cycles); rates
// per second use the core clock; peaks are per core (ChipPeaks).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/StallCause.h"

namespace tpusim::prof {

constexpr int kProfileVersion = 1;

// XProf's op categories.
enum class Category : uint8_t {
  MatmulFusion,    // dots and fusions holding one
  LoopFusion,      // element-wise ops and fusions of them
  Reduction,       // reduce, reduce-window and fusions ending in one
  DataFormatting,  // copy, transpose, pad, concatenate, broadcast, slice
  DynamicSlice,    // dynamic-slice, dynamic-update-slice, gather, scatter
  Collective,      // all-reduce, all-gather, ...
  ControlFlow,     // while, conditional, call (their own scalar code)
  LibraryKernel,   // custom calls and hand-written kernels
  Other,           // bundles outside every op, idle cores
};
constexpr int kNumCategories = 9;
const char* categoryName(Category c);  // "matmul fusion", ...
bool categoryFromName(const std::string& name, Category* out);

// What limits an op: the unit or memory it keeps busiest, when that is busy
// at least kBoundThreshold of the op's time; otherwise latency: its stalls
// (DMA waits, dependencies, branches) and issue of bundles that keep no unit
// busy (scalar loop code) say why.
enum class BoundBy : uint8_t { Mxu, Vpu, Hbm, Vmem, Latency };
constexpr int kNumBoundBy = 5;
const char* boundByName(BoundBy b);  // "MXU", "VPU", "HBM", "VMEM", "latency"
bool boundByFromName(const std::string& name, BoundBy* out);
constexpr double kBoundThreshold = 0.4;

// The chip's peaks per core and cycle (from the preset) and the clock.
struct ChipPeaks {
  int64_t valuSlots = 1, vldSlots = 1, vstSlots = 1;
  std::string chip;
  double clockHz = 0;
  int64_t cores = 1;
  double mxuFlopsPerCycle = 0;   // mxu.count x size^2 MACs x 2
  double vpuFlopsPerCycle = 0;   // valu_slots x one vreg (8 x 128 elements)
  double hbmBytesPerCycle = 0;   // the HBM peak shared by the cores, per core
  double vmemBytesPerCycle = 0;  // (vld_slots + vst_slots) x one vreg (4 KiB)
};

// One op: a debug-map op name (an HLO instruction or a kernel), all its
// bundles' cycles together.
struct OpProfile {
  std::string name;    // HLO instruction or kernel name
  std::string opcode;  // HLO opcode ("fusion", "dot", ...; "" for kernels)
  std::string opName;  // op_name metadata without jit(...) scopes and parameters
  std::string folded;  // opName with layers_N -> layers_* (or `name` without op_name)
  int64_t layer = -1;  // N of layers_N/ in opName, -1 if none
  std::string source;  // file:line
  Category category = Category::Other;
  int64_t cycles = 0, bundles = 0;
  double flops = 0;  // the HLO's FLOPs (cost table) or, without one, those executed
  double mxuFlops = 0, vpuFlops = 0;            // executed (MXU tiles count in full)
  int64_t hbmReadBytes = 0, hbmWriteBytes = 0;  // moved by the op's DMAs
  int64_t vmemBytes = 0;                        // vector loads and stores
  // Slot use: vector ALU ops, EUP busy cycles, vector loads, vector stores.
  int64_t valuOps = 0, transcendentalBusy = 0, vldOps = 0, vstOps = 0;
  std::array<int64_t, sim::kNumStallCauses> stalls{};
  int64_t stallCycles = 0;
  // Derived (deriveOp()).
  double intensity = 0;               // FLOP per HBM byte (0 without HBM bytes)
  double flopsPerSecond = 0;          // achieved
  double hbmBytesPerSecond = 0;       // achieved
  double rooflineFlopsPerSecond = 0;  // min(peak compute, intensity x HBM peak, VMEM roof)
  double rooflineEfficiency = 0;      // roofline time / time (0..1)
  // MXU, VPU, HBM, VMEM: the share of the op's time the unit is busy: MXU
  // FLOPs over its peak; the VALU slots or the EUP, whichever is fuller; HBM
  // bytes over its peak; the vector load or store slots, whichever is fuller.
  std::array<double, 4> unitUse{};
  BoundBy boundBy = BoundBy::Latency;
  std::string boundDetail;   // "HBM 82% of peak", "latency: sync_wait 61%, ..."
  double dmaStallShare = 0;  // (sync_wait + dma_queue_full) / cycles
  double wastedCycles = 0;   // cycles x (1 - rooflineEfficiency)
  int64_t hbmBytes() const { return hbmReadBytes + hbmWriteBytes; }
};

// Ops folded by their folded name: the same op across layers.
struct FoldedOp {
  std::string folded;
  Category category = Category::Other;
  std::vector<size_t> ops;  // indices into Profile::ops
  OpProfile total;          // the sums, derived like one op
};

struct CategorySummary {
  Category category = Category::Other;
  int64_t ops = 0, cycles = 0;
  double flops = 0, wastedCycles = 0;
  int64_t hbmBytes = 0;
  std::array<int64_t, kNumBoundBy> cyclesByBound{};
};

struct LayerSummary {
  int64_t layer = -1;  // -1: ops outside every layer
  int64_t ops = 0, cycles = 0;
  double flops = 0;
  int64_t hbmBytes = 0;
  std::array<int64_t, kNumCategories> cyclesByCategory{};
};

// HBM buffers over the program's order (buffer assignment of the entry).
struct MemoryBuffer {
  std::string name;  // defining instruction (with {tuple index})
  std::string kind;  // parameter, constant, temporary, output, scratch
  std::string shape;
  int64_t bytes = 0;  // allocated (aligned)
  int64_t offset = 0;
  int64_t defineStep = 0, lastUseStep = 0;  // inclusive
};

struct MemoryProfile {
  bool present = false;  // only programs compiled from HLO in process have one
  int64_t capacityBytes = 0;
  std::vector<std::string> steps;     // the schedule: instruction per step
  std::vector<MemoryBuffer> buffers;  // those with bytes of their own
  std::vector<int64_t> liveBytes;     // per step: the live buffers' bytes
  int64_t peakLiveBytes = 0, peakStep = 0;
  int64_t heapPeakBytes = 0;   // offset + size high-water mark (with reuse)
  std::vector<size_t> atPeak;  // buffers live at peakStep, largest first
  std::map<std::string, int64_t> atPeakByKind;
};

struct Overview {
  int64_t stepCycles = 0;
  double stepSeconds = 0;
  double flops = 0, flopsPerSecond = 0, flopsPercentOfPeak = 0;
  double mxuUtilization = 0;  // executed MACs / peak MACs over the step
  int64_t hbmBytes = 0;
  double hbmBytesPerSecond = 0, hbmPercentOfPeak = 0;
  // Core cycles by the bound of the op they belong to.
  int64_t computeBoundCycles = 0, memoryBoundCycles = 0, latencyBoundCycles = 0;
  std::array<int64_t, sim::kNumStallCauses> stalls{};  // over all ops
  int64_t stallCycles = 0;
  double dmaStallShare = 0;
  std::vector<std::string> findings;
};

// A run of several chips (SPMD): the profile is one device's (the slowest by
// default, as XProf shows one host's chip at a time), and this says which,
// how the others compare, and what went over the ICI links.
struct PodChip {
  int device = 0;
  int64_t cycles = 0;
  std::string status;          // halted, waiting, fault, stopped
  int64_t syncWaitCycles = 0;  // its cores' sync_wait stalls (DMA and ICI flags)
  double iciBytesOut = 0;      // on the links leaving it (its own and forwarded)
};
struct PodLink {
  std::string name;  // "chip0 d1+ -> chip1"
  double bytes = 0;
  int64_t flows = 0;
  double utilization = 0;  // bytes / (link bandwidth x step)
};
struct PodProfile {
  bool present = false;
  std::string topology;  // "2x4"
  int device = 0;        // whose ops this profile holds
  std::string chosenBy;  // "slowest" or "--profile-device"
  double linkBytesPerSecond = 0;
  int64_t hopLatencyCycles = 0;
  std::vector<PodChip> chips;
  std::vector<PodLink> links;  // the used ones
};

struct Profile {
  std::string program;
  ChipPeaks peaks;
  Overview overview;
  std::vector<OpProfile> ops;               // program (debug-map) order
  std::vector<FoldedOp> folded;             // most cycles first
  std::vector<CategorySummary> categories;  // most cycles first, empty ones left out
  std::vector<LayerSummary> layers;         // by layer, outside-layers last; empty without layers
  MemoryProfile memory;
  PodProfile pod;
  std::string trace;  // the trace file next to profile.json ("" if none)
};

// Fills the derived fields of `op` from its counters.
void deriveOp(OpProfile& op, const ChipPeaks& peaks);

}  // namespace tpusim::prof
