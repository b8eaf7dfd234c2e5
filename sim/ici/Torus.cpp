#include "sim/ici/Torus.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tpusim::sim::ici {

Torus::Torus(std::vector<int> dims, const target::IciConfig& ici) : dims_(std::move(dims)) {
  std::vector<int64_t> pod = ici.podDims();
  std::string shape = shapeText();
  if (int64_t(dims_.size()) != ici.dimensions())
    throw std::runtime_error(fmt::format(
        "--topology {}: {} dimension(s), but the preset's ICI is a {} ({} dimensions, pod {})",
        shape, dims_.size(), ici.topology, ici.dimensions(), ici.pod_shape));
  int64_t chips = 1;
  for (size_t k = 0; k < dims_.size(); ++k) {
    if (dims_[k] < 1)
      throw std::runtime_error(fmt::format("--topology {}: dimension {} has no chips", shape, k));
    if (k < pod.size() && dims_[k] > pod[k])
      throw std::runtime_error(fmt::format(
          "--topology {}: dimension {} has {} chips, more than the preset's pod has ({}, "
          "ici.pod_shape {})",
          shape, k, dims_[k], pod[k], ici.pod_shape));
    chips *= dims_[k];
    wrap_.push_back(dims_[k] > 2 && dims_[k] % ici.wrap_multiple == 0);
  }
  numChips_ = int(chips);
}

Torus Torus::parse(const std::string& text, const target::IciConfig& ici) {
  std::vector<int> dims;
  size_t pos = 0;
  while (true) {
    size_t x = text.find('x', pos);
    std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 5 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error(fmt::format(
          "--topology {}: expected chips per dimension joined by 'x', e.g. 2x4 (a {}) or 2x2x2 "
          "(a 3d_torus)",
          text, ici.dimensions() == 3 ? "3d_torus" : "2d_torus"));
    dims.push_back(std::stoi(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return Torus(std::move(dims), ici);
}

std::string Torus::shapeText() const {
  std::string s;
  for (size_t k = 0; k < dims_.size(); ++k) s += (k ? "x" : "") + std::to_string(dims_[k]);
  return s;
}

std::vector<int> Torus::coords(int chip) const {
  std::vector<int> c(dims_.size());
  for (int k = numDims() - 1; k >= 0; --k) {
    c[size_t(k)] = chip % dims_[size_t(k)];
    chip /= dims_[size_t(k)];
  }
  return c;
}

int Torus::chipAt(const std::vector<int>& c) const {
  int chip = 0;
  for (size_t k = 0; k < dims_.size(); ++k) chip = chip * dims_[k] + c[k];
  return chip;
}

int Torus::neighbour(int chip, int dim, int dir) const {
  std::vector<int> c = coords(chip);
  int n = dims_[size_t(dim)];
  int next = c[size_t(dim)] + (dir == 0 ? 1 : -1);
  if (next < 0 || next >= n) {
    if (!wrap_[size_t(dim)]) return -1;
    next = (next + n) % n;
  }
  if (next == c[size_t(dim)]) return -1;
  c[size_t(dim)] = next;
  return chipAt(c);
}

int Torus::linkIndex(int chip, int dim, int dir) const {
  return (chip * numDims() + dim) * 2 + dir;
}

LinkId Torus::link(int index) const {
  LinkId l;
  l.dir = index % 2;
  l.dim = (index / 2) % numDims();
  l.chip = index / 2 / numDims();
  return l;
}

bool Torus::linkExists(int index) const {
  LinkId l = link(index);
  return neighbour(l.chip, l.dim, l.dir) >= 0;
}

std::string Torus::linkName(int index) const {
  LinkId l = link(index);
  return fmt::format("chip{} d{}{} -> chip{}", l.chip, l.dim, l.dir == 0 ? '+' : '-',
                     neighbour(l.chip, l.dim, l.dir));
}

std::vector<int> Torus::route(int src, int dst) const {
  std::vector<int> path;
  std::vector<int> at = coords(src), to = coords(dst);
  for (int k = 0; k < numDims(); ++k) {
    int n = dims_[size_t(k)];
    int forward = ((to[size_t(k)] - at[size_t(k)]) % n + n) % n;  // hops going +1 (with wrap)
    int dir, hops;
    if (wrap_[size_t(k)]) {
      dir = forward <= n - forward ? 0 : 1;
      hops = dir == 0 ? forward : n - forward;
    } else {
      dir = to[size_t(k)] >= at[size_t(k)] ? 0 : 1;
      hops = std::abs(to[size_t(k)] - at[size_t(k)]);
    }
    for (int h = 0; h < hops; ++h) {
      int chip = chipAt(at);
      path.push_back(linkIndex(chip, k, dir));
      at[size_t(k)] = (at[size_t(k)] + (dir == 0 ? 1 : -1) + n) % n;
    }
  }
  return path;
}

}  // namespace tpusim::sim::ici
