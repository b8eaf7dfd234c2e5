// NumPy .npy files: the tensor format every tool reads and writes (DESIGN.md,
// "Files and formats"). Shared by the simulator and the compiler.
//
// Reading accepts format versions 1.0, 2.0 and 3.0; writing produces 1.0 (or
// 2.0 when a header would not fit 1.0's 16-bit length, which takes thousands of
// dimensions). Supported dtypes: bool ('b1'), signed 'i1' 'i2' 'i4' 'i8',
// unsigned 'u1' 'u2' 'u4' 'u8', float 'f2' 'f4' 'f8', little- or big-endian,
// C order only (fortran_order=True is rejected with a clear error). Scalars
// (shape ()) and zero-size arrays (a 0 in the shape) are supported.
//
// In memory an Array holds its elements in C order and in the host's byte
// order, whatever the file's byte order was. Bool elements are bytes 0 or 1.
// f2 elements are stored as their IEEE binary16 bits (uint16_t).
//
// bf16 convention: NumPy has no bf16 dtype, so a bf16 tensor is
//   - written as '<u2' (uint16) holding the bf16 bits, and
//   - read either from such a uint16 file (bits taken as they are) or from a
//     float32 file, each value rounded to bf16 with round-to-nearest-even
//     (tpusim::f32ToBf16Bits; NaN becomes the canonical quiet NaN).
// See readBf16Bits / toBf16Bits / fromBf16Bits.
//
// Errors: every malformed or unsupported file raises NpyError whose message
// names the file and the problem ("x.npy: header is not a Python dict ...").
// Nothing in here asserts or crashes on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::npy {

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DType : uint8_t { Bool, S8, S16, S32, S64, U8, U16, U32, U64, F16, F32, F64 };

// Size of one element in bytes.
size_t dtypeSize(DType t);
// NumPy's name for the dtype: "bool", "int8", ..., "float64".
std::string_view dtypeName(DType t);
// The little-endian descr string written to files: "|b1", "<i4", "<f2" ...
std::string dtypeDescr(DType t);

struct Array {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // empty: a scalar
  std::vector<uint8_t> data;   // numElements() * dtypeSize(dtype) bytes, C order, host order

  int64_t numElements() const;
  // Reinterprets the data as T (the caller picks T matching dtype).
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
};

// Makes an array of the given dtype and shape, zero-filled. Throws NpyError if
// the shape has a negative dimension or its size overflows.
Array makeArray(DType dtype, std::vector<int64_t> shape);

// Parses a whole .npy file held in memory. `name` is used in error messages.
Array parse(const uint8_t* bytes, size_t size, std::string_view name);
// Reads and parses a file.
Array read(const std::string& path);

// The bytes of a version 1.0 file (2.0 if the header is too long for 1.0),
// little-endian, C order.
std::vector<uint8_t> serialize(const Array& a);
// Writes a file (replacing it). Throws NpyError naming the file on I/O errors.
void write(const std::string& path, const Array& a);

// bf16 helpers (see the convention above). `name` is used in error messages.
// toBf16Bits: a U16 array gives its values as bits; an F32 array is rounded
// RNE; anything else is an error.
std::vector<uint16_t> toBf16Bits(const Array& a, std::string_view name);
// An array of dtype U16 holding the given bf16 bits.
Array fromBf16Bits(std::vector<int64_t> shape, const std::vector<uint16_t>& bits);
// read() followed by toBf16Bits(), with `shape` receiving the file's shape.
std::vector<uint16_t> readBf16Bits(const std::string& path, std::vector<int64_t>& shape);

// Shape as NumPy prints it: "()", "(3,)", "(2, 3)".
std::string shapeString(const std::vector<int64_t>& shape);

}  // namespace tpusim::npy
