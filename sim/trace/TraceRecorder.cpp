#include "sim/trace/TraceRecorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tpusim::sim {

TraceRecorder::TraceRecorder(double clockHz, size_t maxEventsPerTrack)
    : clockHz_(clockHz), maxEvents_(std::max<size_t>(maxEventsPerTrack, 16)) {}

int TraceRecorder::track(const std::string& process, const std::string& thread) {
  for (size_t i = 0; i < tracks_.size(); ++i)
    if (tracks_[i].process == process && tracks_[i].thread == thread) return int(i);
  Track t;
  t.process = process;
  t.thread = thread;
  auto it = std::find(processes_.begin(), processes_.end(), process);
  t.pid = int(it - processes_.begin()) + 1;
  if (it == processes_.end()) processes_.push_back(process);
  t.tid = int(std::count_if(tracks_.begin(), tracks_.end(),
                            [&](const Track& o) { return o.process == process; })) +
          1;
  tracks_.push_back(std::move(t));
  return int(tracks_.size()) - 1;
}

void TraceRecorder::interval(int id, std::string_view name, int64_t begin, int64_t end) {
  if (end <= begin) return;
  Track& t = tracks_[id];
  if (!t.events.empty()) {
    Event& last = t.events.back();
    // Touching or overlapping with the same name, or closer than the merge gap.
    if (!last.counter && !last.instant && begin <= last.end + (t.gap - 1) &&
        (last.name == name || t.gap > 1) && begin >= last.begin) {
      if (last.name != name) last.name = "(merged)";
      last.end = std::max(last.end, end);
      ++last.merged;
      return;
    }
  }
  t.events.push_back(Event{begin, end, std::string(name)});
  if (t.events.size() >= maxEvents_) coarsen(t);
}

void TraceRecorder::counter(int id, int64_t cycle, double value) {
  Track& t = tracks_[id];
  if (!t.events.empty() && cycle < t.events.back().begin + t.gap) {
    t.events.back().value = std::max(t.events.back().value, value);
    return;
  }
  Event e{cycle, cycle, ""};
  e.counter = true;
  e.value = value;
  t.events.push_back(e);
  if (t.events.size() >= maxEvents_) coarsen(t);
}

void TraceRecorder::instant(int id, std::string_view name, int64_t cycle) {
  Event e{cycle, cycle, std::string(name)};
  e.instant = true;
  tracks_[id].events.push_back(e);
}

void TraceRecorder::flow(int from, int64_t fromCycle, int to, int64_t toCycle,
                         std::string_view name) {
  if (flows_.size() >= maxEvents_ / 4) {
    ++droppedFlows_;
    return;
  }
  flows_.push_back(Flow{from, to, fromCycle, toCycle, std::string(name)});
}

void TraceRecorder::coarsen(Track& t) {
  // Double the gap until the track fits in half its budget, so that coarsening
  // happens O(log(cycles)) times per track.
  while (t.events.size() > maxEvents_ / 2) {
    t.gap *= 2;
    std::vector<Event> out;
    out.reserve(t.events.size() / 2 + 1);
    for (Event& e : t.events) {
      if (!out.empty() && !e.instant && !out.back().instant && e.counter == out.back().counter &&
          e.begin < out.back().end + t.gap) {
        Event& last = out.back();
        if (e.counter) {
          last.value = std::max(last.value, e.value);
        } else {
          if (last.name != e.name) last.name = "(merged)";
          last.end = std::max(last.end, e.end);
          last.merged += e.merged;
        }
        continue;
      }
      out.push_back(std::move(e));
    }
    t.events = std::move(out);
  }
}

size_t TraceRecorder::eventCount() const {
  size_t n = 0;
  for (const Track& t : tracks_) n += t.events.size();
  return n + 2 * flows_.size();
}

std::string TraceRecorder::toJson() const {
  // Timestamps in microseconds of simulated time at the core clock.
  double usPerCycle = 1e6 / clockHz_;
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& s) {
    if (!first) out += ",\n";
    first = false;
    out += s;
  };
  for (size_t p = 0; p < processes_.size(); ++p)
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", p + 1,
                     nlohmann::json(processes_[p]).dump()));
  for (const Track& t : tracks_) {
    emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     t.pid, t.tid, nlohmann::json(t.thread).dump()));
    for (const Event& e : t.events) {
      if (e.counter) {
        emit(fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{:.6f},"args":{{"value":{}}}}})",
                         nlohmann::json(t.thread).dump(), t.pid, e.begin * usPerCycle, e.value));
      } else if (e.instant) {
        emit(fmt::format(R"({{"ph":"i","s":"t","name":{},"pid":{},"tid":{},"ts":{:.6f}}})",
                         nlohmann::json(e.name).dump(), t.pid, t.tid, e.begin * usPerCycle));
      } else {
        emit(fmt::format(
            R"({{"ph":"X","name":{},"pid":{},"tid":{},"ts":{:.6f},"dur":{:.6f},"args":{{"cycles":[{},{}],"merged":{}}}}})",
            nlohmann::json(e.name).dump(), t.pid, t.tid, e.begin * usPerCycle,
            (e.end - e.begin) * usPerCycle, e.begin, e.end, e.merged));
      }
    }
  }
  // Flow arrows (trace-event "s" / "f" pairs bound to the enclosing slices).
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    const Track& a = tracks_[f.from];
    const Track& b = tracks_[f.to];
    std::string name = nlohmann::json(f.name).dump();
    emit(fmt::format(R"({{"ph":"s","id":{},"name":{},"cat":"flow","pid":{},"tid":{},"ts":{:.6f}}})",
                     i + 1, name, a.pid, a.tid, f.fromCycle * usPerCycle));
    emit(fmt::format(
        R"({{"ph":"f","bp":"e","id":{},"name":{},"cat":"flow","pid":{},"tid":{},"ts":{:.6f}}})",
        i + 1, name, b.pid, b.tid, f.toCycle * usPerCycle));
  }
  out += "\n]}\n";
  return out;
}

void TraceRecorder::write(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot open the trace file for writing", path));
  f << toJson();
  if (!f) throw std::runtime_error(fmt::format("{}: error while writing the trace", path));
}

}  // namespace tpusim::sim
