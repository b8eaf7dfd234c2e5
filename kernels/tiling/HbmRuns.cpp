#include "kernels/tiling/HbmRuns.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace tpusim::kernels::tiling {

namespace {
// Bytes of data sampled per block: four DMA windows' worth is where the
// efficiency settles (the bank hash changes bank groups every few DRAM rows).
constexpr int64_t kSampleBytes = int64_t(1) << 20;
// N blocks of a row averaged (their runs start at j x run).
constexpr int64_t kOffsets = 4;

// Where a burst lands within its pseudo-channel (bank numbered across its groups).
struct Loc {
  uint32_t group, bank, row;
};
}  // namespace

HbmRunModel::HbmRunModel(const target::HbmConfig& h, const target::DmaConfig& dma)
    : map_(h),
      pseudoChannels_(uint32_t(h.pseudo_channels)),
      banksPerGroup_(uint32_t(h.banks_per_group)),
      pcs_(size_t(h.channels * h.pseudo_channels)),
      groups_(size_t(h.bank_groups)),
      banks_(size_t(h.bank_groups * h.banks_per_group)) {
  const double bus = double(h.burstCycles());
  colS_ = std::max(double(h.tCCD_S), bus);
  colL_ = std::max(double(h.tCCD_L), bus);
  act_ = std::max(double(h.tRRD_S), double(h.tFAW) / 4.0);
  rowCycle_ = double(h.tRAS + h.tRP);
  busBytes_ = double(h.bus_bytes_per_clock);
  // Refresh takes a bank (per_bank) or the pseudo-channel (all_bank) for
  // tRFCsb / tRFC of every tREFI.
  refresh_ = h.refresh == "none" ? 1.0
             : h.refresh == "all_bank"
                 ? 1.0 - double(h.tRFC) / double(std::max<int64_t>(h.tREFI, 1))
                 : 1.0 - double(h.tRFCsb) / double(std::max<int64_t>(h.tREFI, 1));
  window_ = std::max<int64_t>(1, dma.max_outstanding_requests * dma.request_bytes /
                                     std::max<int64_t>(h.burst_bytes * int64_t(pcs_), 1));
  // Everything compute() reads, folded into the memo's key.
  uint64_t k = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { k = (k ^ v) * 1099511628211ull; };
  for (char c : h.address_mapping + "/" + h.address_hash) mix(uint64_t(uint8_t(c)));
  mix(uint64_t(h.rows)), mix(uint64_t(h.row_bytes)), mix(uint64_t(h.burst_bytes));
  mix(pcs_), mix(pseudoChannels_), mix(groups_), mix(banks_);
  mix(uint64_t(colS_)), mix(uint64_t(colL_)), mix(uint64_t(act_ * 4));
  mix(uint64_t(rowCycle_)), mix(uint64_t(busBytes_)), mix(uint64_t(window_)),
      mix(uint64_t(refresh_ * 1e6));
  key_ = k;
}

double HbmRunModel::compute(int64_t run, int64_t stride, int64_t rows) const {
  const size_t pcs = pcs_, groups = groups_, banks = banks_;
  const int64_t offsets = std::max<int64_t>(1, std::min(kOffsets, stride / run));
  double bytes = 0, cycles = 0;
  std::vector<std::vector<Loc>> seq(pcs);
  std::vector<int64_t> openRow(banks), perGroup(groups), perBank(banks);
  for (int64_t j = 0; j < offsets; ++j) {
    for (auto& s : seq) s.clear();
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t base = uint64_t(j * run + r * stride);
      const uint64_t burst = map_.burstBytes();
      for (uint64_t a = base / burst * burst; a < base + uint64_t(run); a += burst) {
        const target::BurstLocation b = map_.locate(a);
        seq[b.channel * pseudoChannels_ + b.pseudoChannel].push_back(
            {b.bankGroup, b.bankGroup * banksPerGroup_ + b.bank, b.row});
      }
    }
    double worst = 0;
    for (const auto& s : seq) {
      std::fill(openRow.begin(), openRow.end(), -1);
      double t = 0;
      for (size_t c = 0; c < s.size(); c += size_t(window_)) {
        const size_t end = std::min(s.size(), c + size_t(window_));
        std::fill(perGroup.begin(), perGroup.end(), 0);
        std::fill(perBank.begin(), perBank.end(), 0);
        int64_t acts = 0;
        for (size_t i = c; i < end; ++i) {
          ++perGroup[s[i].group];
          if (openRow[s[i].bank] != int64_t(s[i].row)) {
            openRow[s[i].bank] = int64_t(s[i].row);
            ++acts;
            ++perBank[s[i].bank];
          }
        }
        t += std::max({colS_ * double(end - c),
                       colL_ * double(*std::max_element(perGroup.begin(), perGroup.end())),
                       act_ * double(acts),
                       rowCycle_ * double(*std::max_element(perBank.begin(), perBank.end()))});
      }
      worst = std::max(worst, t);
    }
    bytes += double(rows * run);
    cycles += worst;
  }
  return refresh_ * (cycles > 0 ? std::min(1.0, bytes / (cycles * double(pcs) * busBytes_)) : 1.0);
}

double HbmRunModel::efficiency(int64_t run, int64_t stride, int64_t rows) const {
  run = std::max<int64_t>(run, 1);
  stride = std::max(stride, run);
  rows = std::clamp<int64_t>(rows, 1, std::max<int64_t>(1, kSampleBytes / run));
  if (stride == run) rows = std::max<int64_t>(1, kSampleBytes / run);  // one contiguous run
  static std::mutex mutex;
  static std::map<std::tuple<uint64_t, int64_t, int64_t, int64_t>, double> memo;
  const auto key = std::make_tuple(key_, run, stride, rows);
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  const double e = compute(run, stride, rows);
  std::lock_guard<std::mutex> lock(mutex);
  memo.emplace(key, e);
  return e;
}

}  // namespace tpusim::kernels::tiling
