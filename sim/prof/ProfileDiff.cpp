#include "sim/prof/ProfileDiff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "sim/prof/ProfileText.h"

namespace tpusim::prof {
namespace {

std::string change(double a, double b) {
  if (a == b) return "0.0%";
  if (a == 0) return "new";
  return fmt::format("{:+.1f}%", 100.0 * (b - a) / a);
}

struct Pair {
  Category category = Category::Other;
  std::string folded;
  const OpProfile* a = nullptr;
  const OpProfile* b = nullptr;
  size_t instancesA = 0, instancesB = 0;
  int64_t cyclesA() const { return a ? a->cycles : 0; }
  int64_t cyclesB() const { return b ? b->cycles : 0; }
  int64_t delta() const { return cyclesB() - cyclesA(); }
};

}  // namespace

std::string diffText(const Profile& A, const Profile& B, const DiffOptions& opt, bool* changed) {
  const int64_t stepA = A.overview.stepCycles, stepB = B.overview.stepCycles;
  std::string out = fmt::format("tpu-prof diff: A = {} on {}, B = {} on {}\n", A.program,
                                A.peaks.chip, B.program, B.peaks.chip);
  out += fmt::format("  step           {} -> {} cycles ({}), {:.3f} -> {:.3f} us\n", stepA, stepB,
                     change(double(stepA), double(stepB)), A.overview.stepSeconds * 1e6,
                     B.overview.stepSeconds * 1e6);
  out += fmt::format("  FLOP/s         {}FLOP/s -> {}FLOP/s ({:.1f}% -> {:.1f}% of peak)\n",
                     humanCount(A.overview.flopsPerSecond), humanCount(B.overview.flopsPerSecond),
                     A.overview.flopsPercentOfPeak, B.overview.flopsPercentOfPeak);
  out += fmt::format("  MXU util       {:.1f}% -> {:.1f}%\n", 100.0 * A.overview.mxuUtilization,
                     100.0 * B.overview.mxuUtilization);
  out += fmt::format("  HBM bandwidth  {}B/s -> {}B/s ({:.1f}% -> {:.1f}% of peak)\n",
                     humanCount(A.overview.hbmBytesPerSecond),
                     humanCount(B.overview.hbmBytesPerSecond), A.overview.hbmPercentOfPeak,
                     B.overview.hbmPercentOfPeak);

  // Folded ops matched by (category, folded name).
  std::map<std::pair<int, std::string>, Pair> pairs;
  for (const FoldedOp& f : A.folded) {
    Pair& p = pairs[{int(f.category), f.folded}];
    p.category = f.category;
    p.folded = f.folded;
    p.a = &f.total;
    p.instancesA = f.ops.size();
  }
  for (const FoldedOp& f : B.folded) {
    Pair& p = pairs[{int(f.category), f.folded}];
    p.category = f.category;
    p.folded = f.folded;
    p.b = &f.total;
    p.instancesB = f.ops.size();
  }
  std::vector<const Pair*> moved;
  std::map<Category, std::pair<int64_t, int64_t>> byCategory;
  for (const auto& [key, p] : pairs) {
    byCategory[p.category].first += p.cyclesA();
    byCategory[p.category].second += p.cyclesB();
    bool boundChanged = p.a && p.b && p.a->boundBy != p.b->boundBy;
    if (p.delta() != 0 || boundChanged || !p.a || !p.b) moved.push_back(&p);
  }
  const bool any = stepA != stepB || !moved.empty();
  if (changed) *changed = any;
  if (!any) {
    out += "no change: the same step and the same cycles for every op\n";
    return out;
  }
  const int64_t stepDelta = stepB - stepA;
  // Per category, largest change first.
  std::vector<std::pair<Category, std::pair<int64_t, int64_t>>> cats(byCategory.begin(),
                                                                     byCategory.end());
  std::stable_sort(cats.begin(), cats.end(), [](const auto& x, const auto& y) {
    return std::llabs(x.second.second - x.second.first) >
           std::llabs(y.second.second - y.second.first);
  });
  out += "\nby category (cycles A -> B, change, share of the step's change)\n";
  for (const auto& [c, ab] : cats) {
    if (ab.first == ab.second) continue;
    out += fmt::format(
        "  {:<22} {:>12} -> {:>12} {:>8} {:>8}\n", categoryName(c), ab.first, ab.second,
        change(double(ab.first), double(ab.second)),
        stepDelta != 0
            ? fmt::format("{:.0f}%", 100.0 * double(ab.second - ab.first) / double(stepDelta))
            : "");
  }
  std::stable_sort(moved.begin(), moved.end(), [](const Pair* x, const Pair* y) {
    return std::llabs(x->delta()) > std::llabs(y->delta());
  });
  size_t width = 30;
  for (const Pair* p : moved) width = std::max(width, std::min<size_t>(p->folded.size(), 56));
  out += fmt::format(
      "\nops (folded across layers), largest change first\n  {:<{}} {:<16} {:>12} "
      "{:>12} {:>8}  {}\n",
      "op", width, "category", "cycles A", "cycles B", "change", "bound by");
  size_t shown = 0;
  for (const Pair* p : moved) {
    if (opt.rows > 0 && shown == opt.rows) break;
    ++shown;
    std::string name =
        p->folded.size() > width ? p->folded.substr(0, width - 3) + "..." : p->folded;
    std::string bound = p->a && p->b ? (p->a->boundBy == p->b->boundBy
                                            ? std::string(boundByName(p->a->boundBy))
                                            : fmt::format("{} -> {}", boundByName(p->a->boundBy),
                                                          boundByName(p->b->boundBy)))
                        : p->a       ? "only in A"
                                     : "only in B";
    std::string cat = categoryName(p->category);
    out += fmt::format("  {:<{}} {:<16} {:>12} {:>12} {:>8}  {}\n", name, width,
                       cat.size() > 16 ? cat.substr(0, 16) : cat, p->cyclesA(), p->cyclesB(),
                       change(double(p->cyclesA()), double(p->cyclesB())), bound);
  }
  if (shown < moved.size())
    out +=
        fmt::format("  ... {} more ops changed (--rows 0 lists them all)\n", moved.size() - shown);

  // The summary: which way the step moved and the ops that moved it most.
  std::string who;
  size_t named = 0;
  for (const Pair* p : moved) {
    if (named == 3 || p->delta() == 0 || (p->delta() > 0) != (stepDelta > 0)) continue;
    who += fmt::format("{}{} ({}, {} cycles)", named == 0 ? "" : ", ", p->folded,
                       categoryName(p->category), fmt::format("{:+}", p->delta()));
    ++named;
  }
  out += fmt::format("\nsummary: B's step is {} cycles ({}) {} than A's", std::llabs(stepDelta),
                     change(double(stepA), double(stepB)),
                     stepDelta > 0   ? "slower"
                     : stepDelta < 0 ? "faster"
                                     : "the same length");
  if (!who.empty()) out += fmt::format("; mostly {}", who);
  out += ".\n";
  return out;
}

}  // namespace tpusim::prof
