// Many short lists (one per instruction of a block: the registers it reads,
// the ones it writes) in one vector, filled list by list in index order.
// A vector per list cost an allocation each, n of them per scheduled block.
#pragma once

#include <cstddef>
#include <vector>

namespace tpusim::kernels::codegen {

template <class T>
class FlatLists {
 public:
  struct Range {
    const T* b;
    const T* e;
    const T* begin() const { return b; }
    const T* end() const { return e; }
    size_t size() const { return size_t(e - b); }
    const T& operator[](size_t k) const { return b[k]; }
  };

  // Opens the next list (index size()); add() appends to it.
  void open() { starts_.push_back(items_.size()); }
  void add(const T& v) { items_.push_back(v); }
  // The list being filled (the last one opened).
  Range last() const { return at(starts_.size() - 1); }
  size_t size() const { return starts_.size(); }
  Range operator[](size_t i) const { return at(i); }

 private:
  Range at(size_t i) const {
    const size_t end = i + 1 < starts_.size() ? starts_[i + 1] : items_.size();
    return {items_.data() + starts_[i], items_.data() + end};
  }
  std::vector<size_t> starts_;
  std::vector<T> items_;
};

}  // namespace tpusim::kernels::codegen
