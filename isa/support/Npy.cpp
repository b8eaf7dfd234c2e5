// .npy reading and writing; the format is described in Npy.h and in NumPy's
// numpy/lib/format.py documentation (magic, version, header length, a Python
// dict literal header, then the raw data).
#include "isa/support/Npy.h"

#include "isa/support/InputFile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "isa/support/Numerics.h"

namespace tpusim::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // NumPy pads the header so data starts 64-aligned.

bool hostIsLittleEndian() { return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__; }

[[noreturn]] void fail(std::string_view name, const std::string& what) {
  throw NpyError(fmt::format("{}: {}", name, what));
}

// A parsed header value: a string, a bool, or a tuple of integers.
struct Value {
  enum Kind { String, Bool, Tuple, Other } kind = Other;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// Parses the Python dict literal NumPy writes as the header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only the forms a .npy header can hold are accepted.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : text_(text), name_(name) {}

  std::vector<std::pair<std::string, Value>> parseDict() {
    std::vector<std::pair<std::string, Value>> entries;
    skipSpace();
    if (!consume('{')) error("header is not a Python dict (it does not start with '{')");
    skipSpace();
    while (!consume('}')) {
      if (pos_ >= text_.size()) error("header dict is not closed with '}'");
      std::string key = parseString("a dict key");
      skipSpace();
      if (!consume(':')) error(fmt::format("expected ':' after key '{}'", key));
      skipSpace();
      entries.emplace_back(key, parseValue(key));
      skipSpace();
      if (consume(',')) {
        skipSpace();
        continue;
      }
      skipSpace();
      if (!consume('}')) error(fmt::format("expected ',' or '}}' after the value of '{}'", key));
      break;
    }
    skipSpace();
    if (pos_ != text_.size()) error("unexpected text after the header dict");
    return entries;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail(name_, fmt::format("malformed header at offset {}: {}", pos_, what));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view w) {
    if (text_.substr(pos_, w.size()) == w) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  std::string parseString(const char* what) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      error(fmt::format("expected a quoted string as {}", what));
    char quote = text_[pos_++];
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') error("escape sequences are not supported in header strings");
      ++pos_;
    }
    if (pos_ >= text_.size()) error("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }
  int64_t parseInt() {
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      uint64_t d = static_cast<uint64_t>(text_[pos_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10)
        error("integer in shape is too large");
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ == start) {
      if (pos_ < text_.size() && text_[pos_] == '-') error("negative dimension in shape");
      error("expected an integer in shape");
    }
    consume('L');  // Python 2 long literals, as old NumPy wrote them
    return static_cast<int64_t>(v);
  }
  Value parseValue(const std::string& key) {
    Value v;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      v.kind = Value::String;
      v.str = parseString("a value");
    } else if (consumeWord("True")) {
      v.kind = Value::Bool;
      v.boolean = true;
    } else if (consumeWord("False")) {
      v.kind = Value::Bool;
      v.boolean = false;
    } else if (consume('(')) {
      v.kind = Value::Tuple;
      skipSpace();
      bool sawComma = false;
      while (!consume(')')) {
        v.ints.push_back(parseInt());
        skipSpace();
        if (consume(',')) {
          sawComma = true;
          skipSpace();
          continue;
        }
        if (!consume(')')) error(fmt::format("expected ',' or ')' in the value of '{}'", key));
        break;
      }
      if (v.ints.size() == 1 && !sawComma)
        error(fmt::format("the value of '{}' is a parenthesized integer, not a tuple", key));
    } else if (pos_ < text_.size() && text_[pos_] == '[') {
      error(fmt::format("the value of '{}' is a list (structured dtypes are not supported)", key));
    } else {
      error(fmt::format("unsupported value for '{}'", key));
    }
    return v;
  }

  std::string_view text_;
  std::string_view name_;
  size_t pos_ = 0;
};

struct Descr {
  DType dtype;
  bool bigEndian;
};

Descr parseDescr(const std::string& d, std::string_view name) {
  auto bad = [&](const std::string& why) -> Descr {
    fail(name, fmt::format("unsupported dtype '{}': {}", d, why));
  };
  if (d.size() < 3) return bad("expected a byte order, a kind and a size such as '<f4'");
  char order = d[0];
  std::string body = d.substr(1);
  static const struct {
    const char* body;
    DType dtype;
  } kTable[] = {{"b1", DType::Bool}, {"i1", DType::S8},  {"i2", DType::S16}, {"i4", DType::S32},
                {"i8", DType::S64},  {"u1", DType::U8},  {"u2", DType::U16}, {"u4", DType::U32},
                {"u8", DType::U64},  {"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64}};
  for (const auto& e : kTable) {
    if (body != e.body) continue;
    bool big;
    switch (order) {
      case '<':
        big = false;
        break;
      case '>':
        big = true;
        break;
      case '=':
        big = !hostIsLittleEndian();
        break;
      case '|':
        if (dtypeSize(e.dtype) != 1)
          return bad("'|' (no byte order) is only valid for 1-byte types");
        big = false;
        break;
      default:
        return bad("the byte order must be '<', '>', '=' or '|'");
    }
    return {e.dtype, big};
  }
  return bad("supported are b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4, f8");
}

void byteSwap(std::vector<uint8_t>& data, size_t elemSize) {
  for (size_t i = 0; i + elemSize <= data.size(); i += elemSize)
    for (size_t a = i, b = i + elemSize - 1; a < b; ++a, --b) std::swap(data[a], data[b]);
}

uint32_t readLe(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// Number of elements of `shape`, or nullopt if a dimension is negative or the
// product times `elemSize` does not fit in int64.
std::optional<int64_t> checkedCount(const std::vector<int64_t>& shape, size_t elemSize) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(elemSize), &bytes)) return std::nullopt;
  return n;
}

}  // namespace

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::S8:
    case DType::U8:
      return 1;
    case DType::S16:
    case DType::U16:
    case DType::F16:
      return 2;
    case DType::S32:
    case DType::U32:
    case DType::F32:
      return 4;
    case DType::S64:
    case DType::U64:
    case DType::F64:
      return 8;
  }
  return 1;
}

std::string_view dtypeName(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::S8:
      return "int8";
    case DType::S16:
      return "int16";
    case DType::S32:
      return "int32";
    case DType::S64:
      return "int64";
    case DType::U8:
      return "uint8";
    case DType::U16:
      return "uint16";
    case DType::U32:
      return "uint32";
    case DType::U64:
      return "uint64";
    case DType::F16:
      return "float16";
    case DType::F32:
      return "float32";
    case DType::F64:
      return "float64";
  }
  return "?";
}

std::string dtypeDescr(DType t) {
  switch (t) {
    case DType::Bool:
      return "|b1";
    case DType::S8:
      return "|i1";
    case DType::U8:
      return "|u1";
    case DType::S16:
      return "<i2";
    case DType::S32:
      return "<i4";
    case DType::S64:
      return "<i8";
    case DType::U16:
      return "<u2";
    case DType::U32:
      return "<u4";
    case DType::U64:
      return "<u8";
    case DType::F16:
      return "<f2";
    case DType::F32:
      return "<f4";
    case DType::F64:
      return "<f8";
  }
  return "?";
}

std::string shapeString(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

int64_t Array::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Array makeArray(DType dtype, std::vector<int64_t> shape) {
  auto n = checkedCount(shape, dtypeSize(dtype));
  if (!n) throw NpyError(fmt::format("invalid array shape {}", shapeString(shape)));
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.assign(static_cast<size_t>(*n) * dtypeSize(dtype), 0);
  return a;
}

Array parse(const uint8_t* bytes, size_t size, std::string_view name) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    fail(name, "not a .npy file (bad magic; expected \\x93NUMPY)");
  uint8_t major = bytes[6], minor = bytes[7];
  size_t lenBytes;
  if (major == 1 && minor == 0)
    lenBytes = 2;
  else if ((major == 2 || major == 3) && minor == 0)
    lenBytes = 4;
  else
    fail(name, fmt::format("unsupported .npy format version {}.{} (supported: 1.0, 2.0, 3.0)",
                           major, minor));
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (size < prefix) fail(name, "truncated header (the file ends inside the header length)");
  uint64_t headerLen = readLe(bytes + kMagicLen + 2, lenBytes);
  if (headerLen > size - prefix)
    fail(name, fmt::format("truncated header: the header length says {} bytes but only {} follow",
                           headerLen, size - prefix));
  std::string_view header(reinterpret_cast<const char*>(bytes + prefix), headerLen);

  std::optional<Descr> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  for (auto& [key, v] : HeaderParser(header, name).parseDict()) {
    if (key == "descr") {
      if (v.kind != Value::String) fail(name, "header 'descr' is not a string");
      descr = parseDescr(v.str, name);
    } else if (key == "fortran_order") {
      if (v.kind != Value::Bool) fail(name, "header 'fortran_order' is not True or False");
      fortran = v.boolean;
    } else if (key == "shape") {
      if (v.kind != Value::Tuple) fail(name, "header 'shape' is not a tuple of integers");
      shape = v.ints;
    } else {
      fail(name, fmt::format("unknown header key '{}'", key));
    }
  }
  if (!descr) fail(name, "header has no 'descr'");
  if (!fortran) fail(name, "header has no 'fortran_order'");
  if (!shape) fail(name, "header has no 'shape'");
  if (*fortran)
    fail(name,
         "fortran_order=True is not supported; save the array in C order "
         "(numpy.ascontiguousarray) and try again");

  size_t elemSize = dtypeSize(descr->dtype);
  auto count = checkedCount(*shape, elemSize);
  if (!count) fail(name, fmt::format("shape {} is too large", shapeString(*shape)));
  uint64_t want = static_cast<uint64_t>(*count) * elemSize;
  size_t have = size - prefix - headerLen;
  if (have < want)
    fail(name, fmt::format("data is truncated: shape {} of {} needs {} bytes but the file has {}",
                           shapeString(*shape), dtypeName(descr->dtype), want, have));
  if (have > want)
    fail(name, fmt::format("{} unexpected bytes after the data of shape {} of {}", have - want,
                           shapeString(*shape), dtypeName(descr->dtype)));

  Array a;
  a.dtype = descr->dtype;
  a.shape = std::move(*shape);
  const uint8_t* data = bytes + prefix + headerLen;
  a.data.assign(data, data + want);
  if (elemSize > 1 && descr->bigEndian == hostIsLittleEndian()) byteSwap(a.data, elemSize);
  if (a.dtype == DType::Bool)
    for (auto& b : a.data) b = b ? 1 : 0;
  return a;
}

Array read(const std::string& path) {
  if (auto problem = support::inputFileProblem(path)) fail(path, *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read error");
  return parse(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> serialize(const Array& a) {
  auto count = checkedCount(a.shape, dtypeSize(a.dtype));
  if (!count || static_cast<uint64_t>(*count) * dtypeSize(a.dtype) != a.data.size())
    throw NpyError(fmt::format("cannot write an array of shape {} of {} holding {} bytes",
                               shapeString(a.shape), dtypeName(a.dtype), a.data.size()));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   dtypeDescr(a.dtype), shapeString(a.shape));
  size_t lenBytes = 2;
  size_t total = kMagicLen + 2 + lenBytes + header.size() + 1;
  if ((total + kAlign - 1) / kAlign * kAlign - kMagicLen - 2 - lenBytes > 0xFFFF) {
    lenBytes = 4;
    total = kMagicLen + 2 + lenBytes + header.size() + 1;
  }
  size_t padded = (total + kAlign - 1) / kAlign * kAlign;
  header.append(padded - total, ' ');
  header.push_back('\n');
  size_t headerLen = header.size();

  // Built in a sized buffer with memcpy (GCC 12 warns falsely on vector::insert here).
  std::vector<uint8_t> out(kMagicLen + 2 + lenBytes + headerLen + a.data.size());
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, kMagicLen);
  p[kMagicLen] = lenBytes == 2 ? 1 : 2;
  p[kMagicLen + 1] = 0;
  for (size_t i = 0; i < lenBytes; ++i)
    p[kMagicLen + 2 + i] = static_cast<uint8_t>(headerLen >> (8 * i));
  p += kMagicLen + 2 + lenBytes;
  std::memcpy(p, header.data(), headerLen);
  p += headerLen;
  if (!a.data.empty()) std::memcpy(p, a.data.data(), a.data.size());
  if (!hostIsLittleEndian() && dtypeSize(a.dtype) > 1) {
    std::vector<uint8_t> tail(a.data);
    byteSwap(tail, dtypeSize(a.dtype));
    if (!tail.empty()) std::memcpy(p, tail.data(), tail.size());
  }
  return out;
}

void write(const std::string& path, const Array& a) {
  std::vector<uint8_t> bytes;
  try {
    bytes = serialize(a);
  } catch (const NpyError& e) {
    fail(path, e.what());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, fmt::format("cannot open for writing: {}", std::strerror(errno)));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) fail(path, "write error");
}

std::vector<uint16_t> toBf16Bits(const Array& a, std::string_view name) {
  size_t n = static_cast<size_t>(a.numElements());
  std::vector<uint16_t> bits(n);
  if (a.dtype == DType::U16) {
    std::memcpy(bits.data(), a.data.data(), n * 2);
  } else if (a.dtype == DType::F32) {
    const float* f = a.as<float>();
    for (size_t i = 0; i < n; ++i) bits[i] = f32ToBf16Bits(f[i]);
  } else {
    fail(name, fmt::format("a bf16 tensor must be stored as uint16 (bf16 bits) or float32 "
                           "(rounded to nearest even); this file holds {}",
                           dtypeName(a.dtype)));
  }
  return bits;
}

Array fromBf16Bits(std::vector<int64_t> shape, const std::vector<uint16_t>& bits) {
  Array a = makeArray(DType::U16, std::move(shape));
  if (a.data.size() != bits.size() * 2)
    throw NpyError(fmt::format("bf16 data has {} elements but shape {} needs {}", bits.size(),
                               shapeString(a.shape), a.data.size() / 2));
  std::memcpy(a.data.data(), bits.data(), a.data.size());
  return a;
}

std::vector<uint16_t> readBf16Bits(const std::string& path, std::vector<int64_t>& shape) {
  Array a = read(path);
  shape = a.shape;
  return toBf16Bits(a, path);
}

}  // namespace tpusim::npy
