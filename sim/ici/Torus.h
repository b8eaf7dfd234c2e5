// The shape of a slice of the pod: chips per dimension, which dimensions have
// wraparound links, device ids, the links of every chip and the route a
// transfer takes (dimension-order routing). Plain C++, no SystemC.
//
// Device ids are row-major over the shape, the last dimension fastest, as
// XLA's iota device assignment ([2,4]<=[8]) numbers them. Chip d has, per
// dimension k, a link to its + and its - neighbour when they exist: inside
// the slice, or around it where dimension k wraps. A dimension wraps when its
// size is a multiple of the preset's ici.wrap_multiple (it spans the whole
// torus dimension, or whole cubes joined by optical switches) and has more
// than 2 chips (with 2 the wraparound would join the same two chips again).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/target/IciConfig.h"

namespace tpusim::sim::ici {

struct LinkId {
  int chip = 0;  // the sending chip
  int dim = 0;
  int dir = 0;  // 0: towards +1, 1: towards -1
};

class Torus {
 public:
  Torus() = default;
  // The shape `dims` on a pod described by `ici`; throws std::runtime_error
  // (a user error) when it does not fit.
  Torus(std::vector<int> dims, const target::IciConfig& ici);

  // Parses "2x4" / "2x2x2" for the preset; throws std::runtime_error with a
  // message naming the flag value and the rule it breaks.
  static Torus parse(const std::string& text, const target::IciConfig& ici);

  int numChips() const { return numChips_; }
  int numDims() const { return int(dims_.size()); }
  const std::vector<int>& dims() const { return dims_; }
  bool wraps(int dim) const { return wrap_[size_t(dim)]; }
  std::string shapeText() const;  // "2x4"

  std::vector<int> coords(int chip) const;
  int chipAt(const std::vector<int>& coords) const;

  // Links: numbered densely, chip-major, then dimension, then direction;
  // -1 for a link that does not exist.
  int numLinkSlots() const { return numChips_ * numDims() * 2; }
  int linkIndex(int chip, int dim, int dir) const;
  bool linkExists(int index) const;
  LinkId link(int index) const;
  int neighbour(int chip, int dim, int dir) const;  // -1 if there is no link
  std::string linkName(int index) const;            // "chip0 d1+ -> chip1"

  // The links a transfer from `src` to `dst` crosses, in order: dimension 0
  // first, then 1, then 2; in a wrapping dimension the shorter way (ties go
  // towards +1). Empty when src == dst.
  std::vector<int> route(int src, int dst) const;

 private:
  std::vector<int> dims_;
  std::vector<bool> wrap_;
  int numChips_ = 1;
};

}  // namespace tpusim::sim::ici
