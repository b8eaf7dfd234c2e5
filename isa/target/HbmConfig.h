// High-bandwidth memory: geometry, DRAM timing (HBM clock cycles), address
// interleaving and the scheduler queue. Peak bandwidth follows from the
// geometry: channels x pseudo_channels x bus_bytes_per_clock x clock_hz.
// Ownership: the engineer who owns this unit may add a field here. Add it with
// its key, unit, one-line doc and limits in visit(), give it a value and a
// "sources" entry in every sim/chips/*.json (non-extending presets must list
// every field), then regenerate docs/presets.md with
// `build/bin/tpusim-config --doc > docs/presets.md`.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "isa/target/Params.h"

namespace tpusim::target {

struct HbmConfig {
  int64_t capacity_bytes = int64_t(16) << 30;
  double clock_hz = 1.6e9;
  int64_t channels = 16;
  int64_t pseudo_channels = 2;
  int64_t bank_groups = 4;
  int64_t banks_per_group = 4;
  int64_t rows = 32768;
  int64_t row_bytes = 1024;
  int64_t burst_bytes = 32;
  int64_t bus_bytes_per_clock = 16;
  int64_t tRCD = 23;
  int64_t tCL = 23;
  int64_t tCWL = 7;
  int64_t tRP = 23;
  int64_t tRAS = 53;
  int64_t tRRD_S = 4;
  int64_t tRRD_L = 6;
  int64_t tFAW = 26;
  int64_t tCCD_S = 2;
  int64_t tCCD_L = 4;
  int64_t tWR = 26;
  int64_t tWTR = 12;
  int64_t tRTP = 12;
  int64_t tREFI = 6240;
  int64_t tRFC = 560;
  std::string refresh = "per_bank";
  int64_t tRFCsb = 256;
  std::string address_mapping = "ro-ba-co-bg-pc-ch";
  std::string address_hash = "none";
  int64_t queue_depth = 64;
  int64_t starvation_limit = 16;
  std::string model = "fast";

  template <class V>
  void visit(V& v) {
    v.field("capacity_bytes", capacity_bytes, "bytes", "HBM capacity of the chip (addressable)",
            4096, 1e15);
    v.field("clock_hz", clock_hz, "Hz", "HBM command clock; every t* timing counts these cycles",
            1e6, 1e10);
    v.field("channels", channels, "count", "HBM channels on the chip (all stacks)", 1, 1024);
    v.field("pseudo_channels", pseudo_channels, "count",
            "pseudo-channels per channel, each with its own data bus and banks", 1, 4);
    v.field("bank_groups", bank_groups, "count", "bank groups per pseudo-channel", 1, 16);
    v.field("banks_per_group", banks_per_group, "count", "banks per bank group", 1, 16);
    v.field("rows", rows, "count", "rows per bank", 1, int64_t(1) << 24);
    v.field("row_bytes", row_bytes, "bytes", "row (page) size of one bank of a pseudo-channel", 32,
            65536);
    v.field("burst_bytes", burst_bytes, "bytes",
            "bytes one read or write command moves (bus width x burst length)", 8, 1024);
    v.field("bus_bytes_per_clock", bus_bytes_per_clock, "bytes/cycle",
            "data bus bytes per HBM clock per pseudo-channel (double data rate included)", 1, 256);
    v.field("tRCD", tRCD, "cycles", "activate to read/write", 1, 1000);
    v.field("tCL", tCL, "cycles", "read command to first data", 1, 1000);
    v.field("tCWL", tCWL, "cycles", "write command to first data", 0, 1000);
    v.field("tRP", tRP, "cycles", "precharge to activate of the same bank", 1, 1000);
    v.field("tRAS", tRAS, "cycles", "activate to precharge of the same bank", 1, 1000);
    v.field("tRRD_S", tRRD_S, "cycles", "activate to activate, different bank groups", 1, 1000);
    v.field("tRRD_L", tRRD_L, "cycles", "activate to activate, same bank group", 1, 1000);
    v.field("tFAW", tFAW, "cycles", "window in which at most four activates may issue", 1, 10000);
    v.field("tCCD_S", tCCD_S, "cycles", "column command to column command, different bank groups",
            1, 1000);
    v.field("tCCD_L", tCCD_L, "cycles", "column command to column command, same bank group", 1,
            1000);
    v.field("tWR", tWR, "cycles", "end of write data to precharge (write recovery)", 1, 1000);
    v.field("tWTR", tWTR, "cycles", "end of write data to read command", 1, 1000);
    v.field("tRTP", tRTP, "cycles", "read to precharge", 1, 1000);
    v.field("tREFI", tREFI, "cycles", "average interval between refresh commands", 1, 1e7);
    v.field("tRFC", tRFC, "cycles", "all-bank refresh cycle time (every bank busy)", 1, 1e5);
    v.field("refresh", refresh, "-",
            "\"per_bank\": one bank at a time, every tREFI / banks, busy tRFCsb (the others keep "
            "working); \"all_bank\": every tREFI, all banks busy tRFC; \"none\"");
    v.field("tRFCsb", tRFCsb, "cycles", "per-bank refresh cycle time (that bank busy)", 1, 1e5);
    v.field("address_mapping", address_mapping, "-",
            "how a burst index splits into ro, ba, bg, ch, pc, co digits, most significant first "
            "(mixed radix, so counts need not be powers of two)");
    v.field("address_hash", address_hash, "-",
            "\"none\": the digits as address_mapping splits them; \"xor_row_bank\": the bank "
            "group and bank digits XORed with the row digit folded to their width "
            "(permutation-based interleaving: streams a multiple of a row stride apart land in "
            "different banks; needs power-of-two bank_groups and banks_per_group)");
    v.field("queue_depth", queue_depth, "bursts",
            "scheduler (FR-FCFS) queue entries per pseudo-channel", 1, 4096);
    v.field("starvation_limit", starvation_limit, "bursts",
            "younger row hits that may pass an older request to the same bank before the "
            "scheduler closes the row for it",
            1, 1e6);
    v.field("model", model, "-",
            "simulator implementation, not hardware: \"fast\" simulates pseudo-channels that "
            "hold the same state and get the same bursts once; \"detailed\" simulates every "
            "one (same cycles and stats, slower)");
  }

  // Bytes the geometry can address; at least capacity_bytes.
  double geometryBytes() const {
    return double(channels) * pseudo_channels * bank_groups * banks_per_group * rows * row_bytes;
  }
  double peakBytesPerSecond() const {
    return double(channels) * pseudo_channels * bus_bytes_per_clock * clock_hz;
  }
  int64_t columnsPerRow() const { return row_bytes / burst_bytes; }  // bursts per row
  int64_t burstCycles() const { return burst_bytes / bus_bytes_per_clock; }
  // HBM cycles of the longest single access of one bank: activate, read or
  // write one burst, precharge.
  int64_t rowCycleCycles() const {
    int64_t read = std::max(tRAS, tRCD + tRTP) + tRP;
    int64_t write = tRCD + tCWL + burstCycles() + tWR + tRP;
    return std::max(read, write);
  }

  // The six mapping digits in order, or an empty vector when the string is malformed.
  std::vector<std::string> mappingDigits() const {
    static const char* const kDigits[] = {"ro", "ba", "bg", "ch", "pc", "co"};
    std::vector<std::string> out;
    std::string cur;
    for (size_t i = 0; i <= address_mapping.size(); ++i) {
      if (i == address_mapping.size() || address_mapping[i] == '-') {
        out.push_back(cur);
        cur.clear();
      } else {
        cur += address_mapping[i];
      }
    }
    if (out.size() != 6) return {};
    for (const char* d : kDigits) {
      int seen = 0;
      for (const std::string& s : out) seen += s == d;
      if (seen != 1) return {};
    }
    return out;
  }

  void check(ConfigProblems& p) const {
    p.require(!mappingDigits().empty(), "address_mapping",
              "must name ro, ba, bg, ch, pc, co once each, separated by '-' (e.g. "
              "\"ro-ba-co-bg-pc-ch\")");
    p.require(address_hash == "none" || address_hash == "xor_row_bank", "address_hash",
              "must be \"none\" or \"xor_row_bank\"");
    auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
    p.require(address_hash != "xor_row_bank" || (pow2(bank_groups) && pow2(banks_per_group)),
              "address_hash",
              "\"xor_row_bank\" needs power-of-two hbm.bank_groups and hbm.banks_per_group");
    p.require(row_bytes % burst_bytes == 0, "row_bytes", "must be a multiple of hbm.burst_bytes");
    p.require(burst_bytes % bus_bytes_per_clock == 0, "burst_bytes",
              "must be a multiple of hbm.bus_bytes_per_clock");
    p.require(geometryBytes() >= double(capacity_bytes), "capacity_bytes",
              "larger than the geometry holds (hbm.channels x hbm.pseudo_channels x "
              "hbm.bank_groups x hbm.banks_per_group x hbm.rows x hbm.row_bytes = " +
                  std::to_string(int64_t(geometryBytes())) + " bytes)");
    p.require(
        tCCD_S >= burstCycles(), "tCCD_S",
        "shorter than one burst on the data bus (hbm.burst_bytes / hbm.bus_bytes_per_clock = " +
            std::to_string(burstCycles()) + ")");
    p.require(tCCD_L >= tCCD_S, "tCCD_L", "must be >= hbm.tCCD_S");
    p.require(tRRD_L >= tRRD_S, "tRRD_L", "must be >= hbm.tRRD_S");
    p.require(tRAS >= tRCD, "tRAS", "must be >= hbm.tRCD");
    p.require(tFAW >= tRRD_S, "tFAW", "must be >= hbm.tRRD_S");
    p.require(tRFC < tREFI, "tRFC", "must be shorter than hbm.tREFI");
    p.require(refresh == "per_bank" || refresh == "all_bank" || refresh == "none", "refresh",
              "must be \"per_bank\", \"all_bank\" or \"none\"");
    p.require(tRFCsb < tREFI, "tRFCsb", "must be shorter than hbm.tREFI");
    p.require(model == "fast" || model == "detailed", "model", "must be \"fast\" or \"detailed\"");
    p.require(refresh != "per_bank" || tREFI >= bank_groups * banks_per_group, "tREFI",
              "per-bank refresh needs tREFI >= banks per pseudo-channel");
    // Refresh must leave a bank time for one access between two refreshes:
    // activate, read or write, precharge. Less, and refreshes come due before
    // any row cycle ends, so no request ever completes.
    if (refresh == "all_bank" || refresh == "per_bank") {
      int64_t busy = refresh == "all_bank" ? tRFC : tRFCsb;
      int64_t window = tREFI - busy;
      int64_t need = rowCycleCycles();
      p.require(window >= need, "tREFI",
                "leaves " + std::to_string(window) + " cycles between " +
                    (refresh == "all_bank" ? std::string("all-bank refreshes (tREFI - tRFC)")
                                           : std::string("refreshes of a bank (tREFI - tRFCsb)")) +
                    ", less than one access needs (" + std::to_string(need) +
                    ": the longer of a read, max(tRAS, tRCD + tRTP) + tRP, and a write, tRCD + "
                    "tCWL + burst + tWR + tRP): no request would ever complete");
    }
  }
};

}  // namespace tpusim::target
