// The cycle-accurate HBM timing model of one chip, as a plain C++ class (no
// SystemC): pseudo-channels (sim/hbm/PseudoChannel.h) behind an address map
// (isa/target/HbmAddressMap.h). Its interface counts CORE cycles; inside, each
// pseudo-channel runs in HBM clock cycles, converted exactly (ClockRatio.h).
//
// Protocol (the DMA engine drives it):
//   model.submit({id, address, bytes, isWrite, arrivalCycle});  // arrivalCycle >= now()
//   uint64_t t = model.nextEventCycle();  // no completion can happen before t
//   model.advanceTo(t + 1, done);          // simulates every cycle <= t; done gets the
//                                          // completions of those cycles (maybe none:
//                                          // t is a lower bound, so ask again)
// A request of any size is split into the bursts it touches (a partial burst
// costs a whole one); it completes at the first core cycle at or after the
// HBM cycle in which the data of its last burst has been transferred (reads:
// returned; writes: written into the array's sense amplifiers). Completions
// are reported in order of (cycle, submission order). Functional data is not
// here: sim/mem holds it, and the DMA engine moves it.
//
// Cost: pseudo-channels without work are not simulated until they get some
// (their refreshes are then caught up, in closed form once every bank is
// closed); busy ones jump from one command-issue opportunity to the next.
// Queue limits: each pseudo-channel's scheduler sees hbm.queue_depth bursts;
// more wait in an unbounded FIFO in arrival order (the DMA engine's
// outstanding-request limit is what bounds it).
//
// hbm.model = "fast" (the default) gives exactly the cycles and stats of
// "detailed" at a fraction of the cost: pseudo-channels in the same state
// that get the same bursts (a stream interleaved over channels gives every
// channel the same bank, row and arrival) are one group, simulated once by
// its leader (PcGroups.h). A request that treats members differently splits
// the group first; idle groups whose futures are the same
// (PseudoChannel::sameFutureAs) merge again. A request within one channel
// line (AddressMap::channelLine) to exactly one group, or to several whole
// groups, is located once and becomes one burst for each leader.
// Consecutive requests with the same
// direction and arrival whose bursts follow each other within one channel
// line (a DMA descriptor cut into requests smaller than a line) are held
// back until the next call that is not such a request, then handed over as
// one run: one burst for the line's group (or for each of the groups that
// together are the run's pseudo-channels), which completes the requests of
// the run (HbmRuns.cpp). A run may continue into the next line when the two
// lines are a pair (same bank group, bank and row at the next pseudo-channel
// index), so that both indices' groups take one record and can merge as
// twins. testbench/unit/hbm proves the two models equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "isa/target/HbmAddressMap.h"
#include "isa/target/HbmConfig.h"
#include "sim/hbm/ClockRatio.h"
#include "sim/hbm/HbmStats.h"
#include "sim/hbm/PcGroups.h"
#include "sim/hbm/PseudoChannel.h"

namespace tpusim::sim::hbm {

// The address map is the machine model's (the dot tiler prices DMA with it too).
using target::AddressMap;
using target::BurstLocation;

// The model has work but issues nothing (timing that leaves no time for work).
struct HbmNoProgress : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HbmRequest {
  uint64_t id = 0;  // returned in the completion; the model does not interpret it
  uint64_t address = 0;
  uint32_t bytes = 0;  // > 0
  bool isWrite = false;
  uint64_t arrivalCycle = 0;  // core cycle
};

struct HbmCompletion {
  uint64_t id;
  uint64_t cycle;  // core cycle
};

class HbmModel {
 public:
  // Throws std::invalid_argument (naming the hbm.* field) on an unusable config.
  HbmModel(const target::HbmConfig& config, double coreClockHz);

  void submit(const HbmRequest& request);
  // A core cycle >= now() before which no completion can happen; UINT64_MAX
  // when nothing is outstanding.
  uint64_t nextEventCycle() const;
  // Simulates every core cycle < `cycle` and appends the completions of those
  // cycles to `done`.
  void advanceTo(uint64_t cycle, std::vector<HbmCompletion>& done);

  uint64_t now() const { return now_; }
  bool idle() const { return outstanding_ == 0; }
  uint64_t outstanding() const { return outstanding_; }

  const ClockRatio& clocks() const { return clocks_; }
  const HbmTiming& timing() const { return timing_; }
  const target::HbmConfig& config() const { return config_; }
  int channels() const { return int(config_.channels); }
  // Peak data bandwidth of all pseudo-channels, bytes per core cycle.
  double peakBytesPerCoreCycle() const;
  // Stats per channel (summed over its pseudo-channels), as of now(): idle
  // pseudo-channels are first caught up (their refreshes counted).
  std::vector<HbmChannelStats> channelStats();
  HbmChannelStats totalStats();
  // Pseudo-channels simulated separately now: all of them in the detailed
  // model, the number of groups in the fast one (for tests and benchmarks).
  size_t simulatedPseudoChannels() const;

 private:
  struct RequestState {
    uint64_t id = 0;
    uint64_t sequence = 0;
    uint32_t remaining = 0;  // bursts not yet issued
    uint64_t dataEnd = 0;    // HBM cycle
    // A line run (flushRun): the next request whose bursts the same leader
    // burst carries (kNoRequest: the last), and this one's channels of the
    // line [firstChannel, firstChannel + remaining at submission).
    uint32_t nextInRun = kNoRequest;
    uint32_t firstChannel = 0, runBursts = 0;
    // The record of a run (not a request): the head of its chain of parts;
    // remaining counts the run's pseudo-channels that have not issued it.
    bool isRun = false;
    // A run over a line pair (linePair): its first line's pseudo-channel
    // index and the second's; a part's firstChannel counts from the first
    // line's start over both lines (the second's channels follow the first's).
    bool pair = false;
    uint8_t pairFirst = 0, pairSecond = 0;
  };
  static constexpr uint32_t kNoRequest = ~0u;
  struct Pending {
    uint64_t cycle, sequence;
    uint32_t slot;
    bool operator>(const Pending& o) const {
      return cycle != o.cycle ? cycle > o.cycle : sequence > o.sequence;
    }
  };

  uint32_t allocateRequest(const HbmRequest& r);
  // A free request slot (reused, else a new one); its fields are the caller's to set.
  uint32_t takeRequestSlot();
  void catchUp(uint64_t hbmLimit);
  void activate(uint32_t pc);
  // The burst at `loc` of request `slot`; returns its pseudo-channel.
  uint32_t burstAt(const BurstLocation& loc, uint32_t slot, bool write, uint64_t arrival,
                   PcBurst* out) const;
  // hbm.model = "fast": HbmSubmitGrouped.cpp.
  void submitGrouped(uint32_t slot, const HbmRequest& r, uint64_t arrival);
  bool submitChannelLine(uint32_t slot, const HbmRequest& r, uint64_t arrival, uint64_t first,
                         uint64_t last);
  // The leader of the group that is exactly the `bursts` pseudo-channels of
  // the channel line starting at pseudo-channel pc0, or -1.
  int64_t lineLeader(uint32_t pc0, uint32_t bursts);
  // A run: consecutive requests (same direction and arrival) whose bursts
  // follow each other within one channel line, held back by submit until
  // something else happens, then handed over as one burst per pseudo-channel.
  struct RunPart {
    uint32_t slot;
    HbmRequest request;
    uint64_t arrival;      // HBM cycle
    uint64_t first, last;  // its burst indices
  };
  // Burst index of a byte address, channel line of a burst index and the
  // burst's place in its line, with shifts when the sizes are powers of two
  // (every preset).
  uint64_t burstOf(uint64_t address) const {
    return burstShift_ >= 0 ? address >> burstShift_ : address / map_.burstBytes();
  }
  uint64_t lineOf(uint64_t burst) const {
    return lineShift_ >= 0 ? burst >> lineShift_ : burst / map_.channelLine();
  }
  uint64_t inLine(uint64_t burst) const {
    return lineShift_ >= 0 ? burst & (map_.channelLine() - 1) : burst % map_.channelLine();
  }
  int burstShift_ = -1, lineShift_ = -1;
  // clocks_.hbmAtOrAfterCore of the last core cycle converted (a cycle's requests arrive together).
  uint64_t hbmAtOrAfter(uint64_t core) {
    if (core != lastCoreIn_) {
      lastCoreIn_ = core;
      lastHbmOut_ = clocks_.hbmAtOrAfterCore(core);
    }
    return lastHbmOut_;
  }
  uint64_t lastCoreIn_ = ~uint64_t(0), lastHbmOut_ = 0;
  // The run's parts: a vector that keeps its elements when cleared, so that
  // adding one writes its fields once (addRunPart) rather than zeroing a new
  // element first.
  struct RunParts {
    std::vector<RunPart> parts;
    size_t count = 0;
    bool empty() const { return count == 0; }
    size_t size() const { return count; }
    void clear() { count = 0; }
    const RunPart& operator[](size_t i) const { return parts[i]; }
    const RunPart& front() const { return parts[0]; }
    const RunPart* begin() const { return parts.data(); }
    const RunPart* end() const { return parts.data() + count; }
    RunPart& add() {
      if (count == parts.size()) parts.emplace_back();
      return parts[count++];
    }
  };
  RunParts run_;
  void addRunPart(uint32_t slot, const HbmRequest& r, uint64_t arrival, uint64_t first,
                  uint64_t last) {
    // Field by field: `r` was just built on the caller's stack, and copying it
    // (or a whole RunPart) with 16-byte loads stalls on store forwarding.
    RunPart& p = run_.add();
    p.slot = slot;
    p.request.id = r.id;
    p.request.address = r.address;
    p.request.bytes = r.bytes;
    p.request.isWrite = r.isWrite;
    p.request.arrivalCycle = r.arrivalCycle;
    p.arrival = arrival;
    p.first = first;
    p.last = last;
  }
  uint64_t runFirst_ = 0, runLast_ = 0;  // burst indices of the run
  bool runJoins(const HbmRequest& r, uint64_t arrival, uint64_t first, uint64_t last);
  // Whether a run may start with a request of bursts [first, last]: within
  // one line, or over a line pair.
  bool runStarts(uint64_t first, uint64_t last) {
    return lineOf(first) == lineOf(last) ||
           (lineOf(last) == lineOf(first) + 1 && linePair(lineOf(first)));
  }
  void flushRun();
  // Line pairs (HbmRuns.cpp): lines L and L + 1 whose bursts have the same
  // bank group, bank and row and differ in the pseudo-channel index (the
  // pseudo-channel digit right above the channel digit: L even), so that a run
  // may continue from L into L + 1 and still give each pseudo-channel one
  // burst, all alike. Remembered for the last line asked.
  bool linePair(uint64_t line);
  // The definition, from the address map (the constructor checks linePair against it).
  bool linePairByLocation(uint64_t line) const;
  uint32_t pairSecondIndex_ = 0;  // the pseudo-channel index of the line after the last pair
  bool pairsPossible_ = false;    // the config allows them (masks fit 64 bits)
  void flushPairRun();
  // A run's record, its parts chained after it, each part's first burst
  // counted from lineStart (the run's first line).
  uint32_t linkRunParts(uint64_t lineStart);
  // A run that could not be handed over whole: its parts as submit would
  // have handed them over without line pairs (runs within one line).
  void replayRunByLines();
  RunParts replay_;
  bool groupsWithinPair(uint32_t firstIndex, uint32_t firstChannel, uint32_t secondIndex,
                        uint32_t lastChannel, const std::vector<uint32_t>** leaders);
  void issueRunBurst(uint32_t pc, uint32_t run, uint64_t dataEnd);
  bool mergeIdleLine(uint32_t pc0, uint32_t bursts);
  // Whether those pseudo-channels are exactly a union of groups (*leaders:
  // theirs, valid until the groups change).
  bool groupsWithinLine(uint32_t pc0, uint32_t bursts, const std::vector<uint32_t>** leaders);
  bool unionOfGroups(uint32_t pc0, uint32_t bursts, std::vector<uint32_t>& leaders);
  std::vector<uint32_t> runLeaders_;  // scratch of flushRun: the group that takes a run's burst
  // The location of burst `index`: bursts of one channel line differ only in
  // their channel (AddressMap::channelLine), so the last line located is
  // remembered (a stream's line is often located twice in a row: its halves
  // come in different cycles).
  // (A reference, valid until the next call, and no whole-struct copies: a
  // location just written field by field and copied with 16-byte loads stalls
  // on store forwarding.)
  const BurstLocation& locateInLine(uint64_t index) {
    const uint64_t line = map_.channelLine();
    if (line < 2) {
      lastLine_ = ~uint64_t(0);
      map_.locate(index * map_.burstBytes(), &lastLineLoc_);
      return lastLineLoc_;
    }
    if (lineOf(index) != lastLine_) {
      lastLine_ = lineOf(index);
      map_.locate(lastLine_ * line * map_.burstBytes(), &lastLineLoc_);
    }
    lastLineLoc_.channel = uint32_t(inLine(index));
    return lastLineLoc_;
  }
  uint64_t lastLine_ = ~uint64_t(0);
  BurstLocation lastLineLoc_;
  // clocks_.coreAtOrAfterHbm of the last HBM cycle converted (the parts of a
  // run complete together).
  uint64_t coreAtOrAfter(uint64_t hbm) {
    if (hbm != lastHbm_) {
      lastHbm_ = hbm;
      lastCore_ = clocks_.coreAtOrAfterHbm(hbm);
    }
    return lastCore_;
  }
  uint64_t lastHbm_ = ~uint64_t(0), lastCore_ = 0;
  // groupsWithinLine, per first pseudo-channel: its answer and leaders for
  // `bursts` pseudo-channels when the groups had seen `changes` splits and merges.
  struct LineGroups {
    uint64_t changes = ~uint64_t(0);
    uint32_t bursts = 0;
    uint32_t secondIndex = ~0u;  // a line pair's second pseudo-channel index (~0u: one line)
    bool exact = false;
    std::vector<uint32_t> leaders;
  };
  std::vector<LineGroups> lineUnions_;
  // issueRunBurst: a leader's members as a mask of channels (hbm.channels <= 64), kept likewise.
  struct LeaderMask {
    uint64_t changes = ~uint64_t(0);
    uint64_t mask = 0;
  };
  std::vector<LeaderMask> channelMasks_;
  uint64_t channelMask(uint32_t leader);
  // A leader's members as a mask of (index * channels + channel), kept as channelMasks_.
  std::vector<LeaderMask> pcMasks_;
  uint64_t pcMask(uint32_t leader);
  void splitUneven(uint32_t leader);
  void mergeIdle(uint32_t cls);
  // The same for the leaders of class `cls` that are twins (mergeTwinLeaders), busy or not.
  void mergeTwins(uint32_t cls);
  std::vector<uint32_t> classLeaders_;  // scratch of mergeTwins
  // Merges into part_[0] each of part_[1..] (idle leaders, caught up to now
  // first) with the same future; whether any merged.
  bool mergeIdleLeaders();
  // Merges the leaders among `leaders` (about to take the same burst) whose
  // states are the same (PseudoChannel::sameStateAs), busy or not, each into
  // the first of them that it equals; whether any merged (HbmTwins.cpp).
  bool mergeTwinLeaders(const std::vector<uint32_t>& leaders);
  std::vector<uint32_t> twins_;  // scratch of mergeTwinLeaders: the leaders kept

  // One burst of the request being submitted (fast model), by pseudo-channel.
  struct Touch {
    uint32_t pc;
    PcBurst burst;
  };
  // The bursts one pseudo-channel gets from it: touches_[begin, end).
  struct TouchedPc {
    uint32_t pc, begin, end, cls;
  };

  target::HbmConfig config_;
  HbmTiming timing_;
  AddressMap map_;
  ClockRatio clocks_;
  std::vector<PseudoChannel> pcs_;  // channel * pseudo_channels + pseudo-channel
  std::vector<uint32_t> active_;    // pseudo-channels with queued bursts
  std::vector<uint8_t> isActive_;
  // The earliest time() of the pseudo-channels in active_ (UINT64_MAX: none),
  // for nextEventCycle without a loop: advanceTo leaves every one of them at
  // its limit, and activate adds the newcomers.
  uint64_t earliestActive_ = ~uint64_t(0);
  std::vector<RequestState> requests_;
  std::vector<uint32_t> freeRequests_;
  // Completions not yet reported, in (cycle, sequence) order: pending_[pendingHead_..].
  std::vector<Pending> pending_;
  size_t pendingHead_ = 0;
  void addPending(const Pending& p);
  std::vector<IssuedBurst> issued_;  // scratch
  bool fast_;
  PcGroups groups_;  // every pseudo-channel its own group in the detailed model
  // Scratch of submitGrouped: kept to avoid allocations per request.
  std::vector<Touch> touches_;
  std::vector<TouchedPc> touched_;
  std::vector<uint32_t> classFirst_;  // per class: its first entry of touched_
  std::vector<int32_t> classOf_;      // per pseudo-channel; -1: not touched
  std::vector<uint64_t> seen_;        // per leader: the submission that last checked it
  std::vector<uint32_t> part_;        // scratch of splitUneven
  // submitChannelLine, per first pseudo-channel of a line: whether the line's
  // `bursts` pseudo-channels were exactly one group (its leader, else -1) when
  // the groups had seen `changes` splits and merges.
  struct LineGroup {
    uint64_t changes = ~uint64_t(0);
    uint32_t bursts = 0;
    int64_t leader = -1;
  };
  std::vector<LineGroup> lineGroups_;
  uint64_t now_ = 0;
  uint64_t sequence_ = 0;
  uint64_t outstanding_ = 0;
  // Progress check: the HBM cycle of the last issued burst (or arrival while
  // idle); work pending for kNoProgressLimit cycles without one is reported.
  uint64_t lastProgress_ = 0;
  void checkProgress(uint64_t hbmLimit);
};

}  // namespace tpusim::sim::hbm
