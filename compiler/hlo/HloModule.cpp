#include "compiler/hlo/HloModule.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/HloPrinter.h"

namespace tpusim::hlo {

std::optional<std::string> HloModule::headerAttribute(const std::string& key) const {
  for (const auto& [k, v] : header_)
    if (k == key) return v;
  return std::nullopt;
}

static int64_t headerInt(const HloModule& m, const std::string& key) {
  auto v = m.headerAttribute(key);
  if (!v || v->empty() || v->size() > 18) return 1;
  int64_t n = 0;
  for (char c : *v) {
    if (c < '0' || c > '9') return 1;
    n = n * 10 + (c - '0');
  }
  return n > 0 ? n : 1;
}

int64_t HloModule::replicaCount() const { return headerInt(*this, "replica_count"); }
int64_t HloModule::numPartitions() const { return headerInt(*this, "num_partitions"); }

HloComputation* HloModule::addComputation(std::unique_ptr<HloComputation> c) {
  c->parent_ = this;
  instructionNamesIndexed_ = false;
  comps_.push_back(std::move(c));
  return comps_.back().get();
}

HloComputation* HloModule::addComputationBefore(std::unique_ptr<HloComputation> c,
                                                HloComputation* before) {
  c->parent_ = this;
  instructionNamesIndexed_ = false;
  auto it =
      std::find_if(comps_.begin(), comps_.end(), [&](const auto& p) { return p.get() == before; });
  return comps_.insert(it, std::move(c))->get();
}

bool HloModule::removeComputation(HloComputation* c) {
  if (!c || c == entry_ || !callersOf(c).empty()) return false;
  auto it = std::find_if(comps_.begin(), comps_.end(), [&](const auto& p) { return p.get() == c; });
  if (it == comps_.end()) return false;
  comps_.erase(it);
  instructionNamesIndexed_ = false;
  return true;
}

int64_t HloModule::removeUnreachableComputations() {
  std::unordered_set<const HloComputation*> live;
  std::vector<const HloComputation*> work;
  if (entry_) work.push_back(entry_);
  while (!work.empty()) {
    const HloComputation* c = work.back();
    work.pop_back();
    if (!live.insert(c).second) continue;
    for (const auto& i : c->instructions())
      for (HloComputation* callee : i->calledComputations())
        if (callee) work.push_back(callee);
  }
  size_t before = comps_.size();
  instructionNamesIndexed_ = false;
  comps_.erase(std::remove_if(comps_.begin(), comps_.end(),
                              [&](const auto& p) { return !live.count(p.get()); }),
               comps_.end());
  return static_cast<int64_t>(before - comps_.size());
}

HloComputation* HloModule::findComputation(const std::string& name) const {
  for (const auto& c : comps_)
    if (c->name() == name) return c.get();
  return nullptr;
}

std::vector<HloInstruction*> HloModule::callersOf(const HloComputation* c) const {
  std::vector<HloInstruction*> out;
  for (const auto& comp : comps_)
    for (const auto& i : comp->instructions())
      for (HloComputation* callee : i->calledComputations())
        if (callee == c) {
          out.push_back(i.get());
          break;
        }
  return out;
}

std::string HloModule::uniqueInstructionName(const std::string& base) const {
  if (!instructionNamesIndexed_) {
    instructionNames_.clear();
    for (const auto& c : comps_)
      for (const auto& i : c->instructions()) ++instructionNames_[i->name()];
    instructionNamesIndexed_ = true;
  }
  auto used = [&](const std::string& name) {
    auto it = instructionNames_.find(name);
    return it != instructionNames_.end() && it->second > 0;
  };
  if (!used(base)) return base;
  for (int64_t n = 1;; ++n) {
    std::string cand = base + "." + std::to_string(n);
    if (!used(cand)) return cand;
  }
}

void HloModule::noteInstructionName(const std::string& name) {
  if (instructionNamesIndexed_) ++instructionNames_[name];
}

void HloModule::forgetInstructionName(const std::string& name) {
  if (!instructionNamesIndexed_) return;
  auto it = instructionNames_.find(name);
  if (it != instructionNames_.end() && --it->second <= 0) instructionNames_.erase(it);
}

std::string HloModule::uniqueComputationName(const std::string& base) const {
  if (!findComputation(base)) return base;
  for (int64_t n = 1;; ++n) {
    std::string cand = base + "." + std::to_string(n);
    if (!findComputation(cand)) return cand;
  }
}

std::unique_ptr<HloModule> HloModule::clone() const {
  auto m = std::make_unique<HloModule>(name_);
  m->sourceFile_ = sourceFile_;
  m->header_ = header_;
  std::unordered_map<const HloComputation*, HloComputation*> map;
  for (const auto& c : comps_) map[c.get()] = m->addComputation(c->clone(c->name()));
  for (const auto& c : m->comps_)
    for (const auto& i : c->instructions())
      for (auto& call : i->attrs().calls)
        for (auto& callee : call.computations)
          if (map.count(callee)) callee = map[callee];
  if (entry_ && map.count(entry_)) m->entry_ = map[entry_];
  return m;
}

std::string HloModule::toString() const { return printModule(*this); }

}  // namespace tpusim::hlo
