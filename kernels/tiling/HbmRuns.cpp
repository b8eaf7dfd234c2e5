#include "kernels/tiling/HbmRuns.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace tpusim::kernels::tiling {

namespace {
enum Digit { Ro, Ba, Bg, Ch, Pc, Co };
// Bytes of data sampled per block: four DMA windows' worth is where the
// efficiency settles (the bank hash changes bank groups every few DRAM rows).
constexpr int64_t kSampleBytes = int64_t(1) << 20;
// N blocks of a row averaged (their runs start at j x run).
constexpr int64_t kOffsets = 4;

uint32_t log2u(uint64_t x) {
  uint32_t n = 0;
  while ((uint64_t(1) << n) < x) ++n;
  return n;
}
}  // namespace

HbmRunModel::HbmRunModel(const target::HbmConfig& h, const target::DmaConfig& dma) {
  radix_[Ro] = uint64_t(h.rows);
  radix_[Ba] = uint64_t(h.banks_per_group);
  radix_[Bg] = uint64_t(h.bank_groups);
  radix_[Ch] = uint64_t(h.channels);
  radix_[Pc] = uint64_t(h.pseudo_channels);
  radix_[Co] = uint64_t(h.columnsPerRow());
  std::vector<std::string> digits = h.mappingDigits();
  static const char* const kNames[] = {"ro", "ba", "bg", "ch", "pc", "co"};
  bool seen[6] = {};
  if (digits.size() != 6) throw std::invalid_argument("hbm.address_mapping: six digits expected");
  for (int i = 0; i < 6; ++i) {
    int d = int(std::find_if(std::begin(kNames), std::end(kNames),
                             [&](const char* n) { return digits[size_t(i)] == n; }) -
                std::begin(kNames));
    if (d >= 6 || seen[d]) throw std::invalid_argument("hbm.address_mapping: bad digit");
    seen[d] = true;
    order_[i] = d;
  }
  burst_ = uint64_t(h.burst_bytes);
  hash_ = h.address_hash == "xor_row_bank";
  bankShift_ = log2u(radix_[Ba]);
  bankBits_ = bankShift_ + log2u(radix_[Bg]);
  bankMask_ = (1u << bankBits_) - 1;
  hash_ = hash_ && bankBits_ > 0;
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
  const int64_t pcs = h.channels * h.pseudo_channels;
  window_ = std::max<int64_t>(1, dma.max_outstanding_requests * dma.request_bytes /
                                     std::max<int64_t>(h.burst_bytes * pcs, 1));
  // Everything above that compute() reads, folded into the memo's key.
  uint64_t k = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { k = (k ^ v) * 1099511628211ull; };
  for (int i = 0; i < 6; ++i) mix(radix_[i]), mix(uint64_t(order_[i]));
  mix(burst_), mix(hash_), mix(uint64_t(colS_)), mix(uint64_t(colL_)), mix(uint64_t(act_ * 4));
  mix(uint64_t(rowCycle_)), mix(uint64_t(busBytes_)), mix(uint64_t(window_)),
      mix(uint64_t(refresh_ * 1e6));
  key_ = k;
}

HbmRunModel::Loc HbmRunModel::locate(uint64_t address) const {
  uint64_t index = address / burst_, v[6] = {};
  for (int i = 5; i >= 0; --i) {  // least significant digit first
    v[order_[i]] = index % radix_[order_[i]];
    index /= radix_[order_[i]];
  }
  if (hash_) {  // AddressMap::permuteBanks
    uint32_t fold = 0;
    for (uint32_t r = uint32_t(v[Ro]); r != 0; r >>= bankBits_) fold ^= r & bankMask_;
    uint32_t both = ((uint32_t(v[Bg]) << bankShift_) | uint32_t(v[Ba])) ^ fold;
    v[Bg] = both >> bankShift_;
    v[Ba] = both & ((1u << bankShift_) - 1);
  }
  return {uint32_t(v[Ch] * radix_[Pc] + v[Pc]), uint32_t(v[Bg]),
          uint32_t(v[Bg] * radix_[Ba] + v[Ba]), uint32_t(v[Ro])};
}

double HbmRunModel::compute(int64_t run, int64_t stride, int64_t rows) const {
  const size_t pcs = size_t(radix_[Ch] * radix_[Pc]), groups = size_t(radix_[Bg]),
               banks = size_t(radix_[Bg] * radix_[Ba]);
  const int64_t offsets = std::max<int64_t>(1, std::min(kOffsets, stride / run));
  double bytes = 0, cycles = 0;
  std::vector<std::vector<Loc>> seq(pcs);
  std::vector<int64_t> openRow(banks), perGroup(groups), perBank(banks);
  for (int64_t j = 0; j < offsets; ++j) {
    for (auto& s : seq) s.clear();
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t base = uint64_t(j * run + r * stride);
      for (uint64_t a = base / burst_ * burst_; a < base + uint64_t(run); a += burst_) {
        Loc l = locate(a);
        seq[l.pc].push_back(l);
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
