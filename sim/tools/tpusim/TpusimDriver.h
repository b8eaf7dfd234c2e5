// Everything tpusim does after parsing its command line (kept apart from the
// llvm::cl front end, which must be compiled without RTTI).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::sim {

struct TpusimArgs {
  std::string program;  // .tpuprog, .s (assembled in memory) or .hlo (compiled with tpuc)
  std::string chip = "v5e";
  std::vector<std::string> sets;    // key=value overrides
  std::string mode = "functional";  // or "timing"
  std::vector<std::string> inputs;  // NAME=file.npy
  std::string outputDir;
  bool force = false;
  std::string statsPath, tracePath;
  int64_t maxCycles = 0;  // 0: no limit
  bool strict = false;
  uint64_t seed = 1;
  std::string randomInputs = "uniform";  // or "fan-in" (sim/chip/BufferIo.h)
  std::string mxuModel = "fast";
  bool quiet = false;
  bool referenceStepping = false;
  int64_t quantum = 10000;
  int hostThreads = 1;  // --host-threads (sim/systemc/HostThreads.h)
  int64_t traceEventsPerTrack = 200000;
  int topOps = 20;        // rows of the summary's per-op table (0: all)
  bool check = false;     // .hlo only: compare outputs with the reference evaluator
  double checkRtol = -1;  // < 0: the default tolerance per dtype (ReferenceCheck.h); 0: exact
  bool checkRtolGiven = false;
  // --profile: profile.json, report.html, trace.json there (ProfileOutput.h).
  std::string profileDir;
  int profileDevice = -1;  // a multi-chip run: whose ops the profile holds (-1: the slowest)
  std::string topology;    // "2x4": a multi-chip system (SystemRun.h); empty: one chip
  // Runs of the program; each run's outputs that alias a donated input
  // (input_output_alias) are that input of the next (a training step fed back).
  int64_t steps = 1;
};

// Runs the tool; returns the process exit code (0 ok, 1 error or fault).
int runTpusim(const TpusimArgs& args);

}  // namespace tpusim::sim
