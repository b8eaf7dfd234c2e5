// Records what the units did, as Chrome trace-event JSON (opens in Perfetto
// UI and chrome://tracing). Tracks are grouped by process (one per chip/core,
// e.g. "chip0/core0") and thread (one per unit: "ops", "mxu0", "dma q1" ...).
//
// Size limit (so that runs of millions of cycles give a usable file): busy
// intervals of a track that touch or overlap and carry the same name are
// merged as they arrive. When a track reaches `maxEventsPerTrack` events it
// is coarsened: neighbouring intervals closer than the track's merge gap
// (starting at 1 cycle, doubling at each coarsening) are fused into one, whose
// args record how many intervals it stands for. Counters are thinned the same
// way (a sample closer than the gap to the previous one replaces it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::sim {

class TraceRecorder {
 public:
  explicit TraceRecorder(double clockHz, size_t maxEventsPerTrack = 200000);

  // A track id for (process, thread); the same pair gives the same id.
  int track(const std::string& process, const std::string& thread);

  // A busy interval [begin, end) in core cycles.
  void interval(int track, std::string_view name, int64_t begin, int64_t end);
  // A counter sample (e.g. HBM bandwidth in GB/s) from `cycle` on.
  void counter(int track, int64_t cycle, double value);
  // A zero-length marker (faults, halts).
  void instant(int track, std::string_view name, int64_t cycle);
  // A flow arrow from `fromTrack` at `fromCycle` to `toTrack` at `toCycle`
  // (a DMA's issue to the cycle its completion raises the flag a wait
  // needs). At most maxEventsPerTrack / 4 are kept (the first ones);
  // droppedFlows() counts the rest.
  void flow(int fromTrack, int64_t fromCycle, int toTrack, int64_t toCycle, std::string_view name);
  int64_t droppedFlows() const { return droppedFlows_; }

  size_t eventCount() const;
  int64_t mergeGap(int track) const { return tracks_[track].gap; }

  // Writes the JSON file; throws std::runtime_error naming the file on failure.
  void write(const std::string& path) const;
  std::string toJson() const;

 private:
  struct Event {
    int64_t begin, end;
    std::string name;
    int64_t merged = 1;
    double value = 0;
    bool counter = false, instant = false;
  };
  struct Track {
    std::string process, thread;
    int pid = 0, tid = 0;
    int64_t gap = 1;
    std::vector<Event> events;
  };
  void coarsen(Track& t);

  struct Flow {
    int from, to;
    int64_t fromCycle, toCycle;
    std::string name;
  };

  double clockHz_;
  size_t maxEvents_;
  std::vector<Flow> flows_;
  int64_t droppedFlows_ = 0;
  std::vector<Track> tracks_;
  std::vector<std::string> processes_;
};

}  // namespace tpusim::sim
