#include "compiler/hlo/HloAttributes.h"

#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

namespace tpusim::hlo {

const char* comparisonDirectionName(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::EQ:
      return "EQ";
    case ComparisonDirection::NE:
      return "NE";
    case ComparisonDirection::LT:
      return "LT";
    case ComparisonDirection::LE:
      return "LE";
    case ComparisonDirection::GT:
      return "GT";
    case ComparisonDirection::GE:
      return "GE";
  }
  return "EQ";
}

std::optional<ComparisonDirection> parseComparisonDirection(const std::string& s) {
  for (auto d : {ComparisonDirection::EQ, ComparisonDirection::NE, ComparisonDirection::LT,
                 ComparisonDirection::LE, ComparisonDirection::GT, ComparisonDirection::GE})
    if (s == comparisonDirectionName(d)) return d;
  return std::nullopt;
}

std::vector<std::vector<int64_t>> ReplicaGroups::expand() const {
  if (!iotaForm) return groups;
  if (iotaGroupShape.size() != 2) return {};
  int64_t total = 1;
  for (int64_t d : iotaReshape) {
    if (d <= 0 || d > (1 << 20) || total * d > (1 << 20)) return {};
    total *= d;
  }
  int64_t g = iotaGroupShape[0], s = iotaGroupShape[1];
  if (g <= 0 || s <= 0 || g > total || s > total || g * s != total) return {};
  size_t rank = iotaReshape.size();
  std::vector<int64_t> perm = iotaTranspose;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != rank) return {};
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[p]) return {};
    seen[p] = true;
  }
  // Transposed dims: tdims[i] = reshape[perm[i]]; element at transposed index
  // t has value = row-major index in reshape dims of (idx[perm[i]] = t[i]).
  std::vector<int64_t> tdims(rank), strides(rank, 1);
  for (size_t i = 0; i < rank; ++i) tdims[i] = iotaReshape[perm[i]];
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * iotaReshape[i];
  std::vector<int64_t> flat;
  flat.reserve(static_cast<size_t>(total));
  std::vector<int64_t> t(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t v = 0;
    for (size_t i = 0; i < rank; ++i) v += t[i] * strides[perm[i]];
    flat.push_back(v);
    for (size_t i = rank; i-- > 0;) {
      if (++t[i] < tdims[i]) break;
      t[i] = 0;
    }
  }
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(g));
  for (int64_t i = 0; i < total; ++i) out[i / s].push_back(flat[i]);
  return out;
}

bool AttrValue::operator==(const AttrValue& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int:
      return i == o.i;
    case Kind::IntList:
      return list == o.list;
    case Kind::IntListList:
      return lists == o.lists;
    case Kind::Bool:
      return b == o.b;
    case Kind::Float:
      return std::memcmp(&f, &o.f, sizeof f) == 0;
    default:
      return s == o.s;
  }
}

static std::string intList(const std::vector<int64_t>& v) {
  return "{" + fmt::format("{}", fmt::join(v, ",")) + "}";
}

std::string AttrValue::toString() const {
  switch (kind) {
    case Kind::Int:
      return std::to_string(i);
    case Kind::IntList:
      return intList(list);
    case Kind::IntListList: {
      std::string out = "{";
      for (size_t k = 0; k < lists.size(); ++k) out += (k ? "," : "") + intList(lists[k]);
      return out + "}";
    }
    case Kind::Bool:
      return b ? "true" : "false";
    case Kind::Float:
      return fmt::format("{}", f);
    case Kind::String:
      return "\"" + s + "\"";
    default:
      return s;
  }
}

AttrValue::Kind genericAttrKind(const std::string& key) {
  using K = AttrValue::Kind;
  static const std::unordered_map<std::string, K> kinds = {
      {"index", K::Int},
      {"iota_dimension", K::Int},
      {"feature_index", K::Int},
      {"index_vector_dim", K::Int},
      {"split_dimension", K::Int},
      {"exponent_bits", K::Int},
      {"mantissa_bits", K::Int},
      {"k", K::Int},
      {"slice_sizes", K::IntList},
      {"dynamic_slice_sizes", K::IntList},
      {"offset_dims", K::IntList},
      {"collapsed_slice_dims", K::IntList},
      {"start_index_map", K::IntList},
      {"operand_batching_dims", K::IntList},
      {"start_indices_batching_dims", K::IntList},
      {"update_window_dims", K::IntList},
      {"inserted_window_dims", K::IntList},
      {"scatter_dims_to_operand_dims", K::IntList},
      {"input_batching_dims", K::IntList},
      {"scatter_indices_batching_dims", K::IntList},
      {"fft_length", K::IntList},
      {"source_target_pairs", K::IntListList},
      {"use_global_device_ids", K::Bool},
      {"constrain_layout", K::Bool},
      {"indices_are_sorted", K::Bool},
      {"unique_indices", K::Bool},
      {"is_stable", K::Bool},
      {"largest", K::Bool},
      {"epsilon", K::Float},
      {"kind", K::Ident},
      {"algorithm", K::Ident},
      {"type", K::Ident},
      {"distribution", K::Ident},
      {"api_version", K::Ident},
      {"fft_type", K::Ident},
      {"custom_call_schedule", K::Ident},
      {"async_execution_thread", K::String},
  };
  auto it = kinds.find(key);
  return it == kinds.end() ? K::Raw : it->second;
}

std::string unescapeHloString(const std::string& e) {
  std::string out;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < e.size(); ++i) {
    char c = e[i];
    if (c != '\\' || i + 1 >= e.size()) {
      out += c;
      continue;
    }
    char n = e[++i];
    switch (n) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '"':
        out += '"';
        break;
      case '\'':
        out += '\'';
        break;
      case 'x': {
        int v = 0, k = 0;
        while (k < 2 && i + 1 < e.size() && hex(e[i + 1]) >= 0) v = v * 16 + hex(e[++i]), ++k;
        out += static_cast<char>(v);
        break;
      }
      default:
        if (n >= '0' && n <= '7') {
          // Octal (\000); XLA's MLIR-style dumps also write two hex digits (\9C).
          if (i + 1 < e.size() && hex(e[i + 1]) >= 0 && (e[i + 1] > '7' || hex(n) > 7)) {
            out += static_cast<char>(hex(n) * 16 + hex(e[++i]));
            break;
          }
          int v = n - '0', k = 1;
          while (k < 3 && i + 1 < e.size() && e[i + 1] >= '0' && e[i + 1] <= '7')
            v = v * 8 + (e[++i] - '0'), ++k;
          out += static_cast<char>(v & 0xFF);
        } else if (hex(n) >= 0 && i + 1 < e.size() && hex(e[i + 1]) >= 0) {
          out += static_cast<char>(hex(n) * 16 + hex(e[++i]));
        } else {
          out += n;
        }
    }
  }
  return out;
}

}  // namespace tpusim::hlo
