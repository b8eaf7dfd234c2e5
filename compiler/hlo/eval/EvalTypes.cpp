#include "compiler/hlo/eval/EvalTypes.h"

#include <fmt/format.h>

#include <cstring>

#include "compiler/hlo/eval/Convert.h"

namespace tpusim::hlo::eval {
namespace {

struct TypePair {
  PrimitiveType prim;
  ElemType elem;
  npy::DType dtype;
};
constexpr TypePair kTypes[] = {
    {PrimitiveType::Pred, ElemType::Pred, npy::DType::Bool},
    {PrimitiveType::S8, ElemType::S8, npy::DType::S8},
    {PrimitiveType::S16, ElemType::S16, npy::DType::S16},
    {PrimitiveType::S32, ElemType::S32, npy::DType::S32},
    {PrimitiveType::S64, ElemType::S64, npy::DType::S64},
    {PrimitiveType::U8, ElemType::U8, npy::DType::U8},
    {PrimitiveType::U16, ElemType::U16, npy::DType::U16},
    {PrimitiveType::U32, ElemType::U32, npy::DType::U32},
    {PrimitiveType::U64, ElemType::U64, npy::DType::U64},
    {PrimitiveType::F16, ElemType::F16, npy::DType::F16},
    {PrimitiveType::BF16, ElemType::BF16, npy::DType::U16},
    {PrimitiveType::F32, ElemType::F32, npy::DType::F32},
    {PrimitiveType::F64, ElemType::F64, npy::DType::F64},
};

const TypePair& pairOf(ElemType t) {
  for (const auto& p : kTypes)
    if (p.elem == t) return p;
  return kTypes[0];
}

}  // namespace

ElemType toElemType(PrimitiveType t, const std::string& what) {
  for (const auto& p : kTypes)
    if (p.prim == t) return p.elem;
  throw EvalError(fmt::format("{}: element type {} is not supported by the evaluator", what,
                              primitiveTypeName(t)));
}

PrimitiveType toPrimitiveType(ElemType t) { return pairOf(t).prim; }

Literal zerosOf(const Shape& shape, const std::string& what) {
  if (shape.isTuple()) {
    std::vector<Literal> elems;
    for (const auto& s : shape.tupleShapes) elems.push_back(zerosOf(s, what));
    return Literal::tuple(std::move(elems));
  }
  if (shape.isToken()) return Literal::tuple({});
  if (!shape.isArray())
    throw EvalError(fmt::format("{}: cannot make a value of shape {}", what, shape.toString()));
  return Literal::array(toElemType(shape.type, what), shape.dims);
}

Literal fromConstant(const hlo::Literal& c, const std::string& what) {
  if (c.shape.isTuple()) {
    std::vector<Literal> elems;
    for (const auto& e : c.elements) elems.push_back(fromConstant(e, what));
    return Literal::tuple(std::move(elems));
  }
  if (c.elided)
    throw EvalError(
        fmt::format("{}: the constant's value is elided ({{...}}) in the HLO text, so "
                    "it cannot be evaluated",
                    what));
  Literal out = zerosOf(c.shape, what);
  if (out.isTuple()) return out;
  if (c.size() != out.numElements())
    throw EvalError(fmt::format("{}: constant holds {} values but its shape {} needs {}", what,
                                c.size(), c.shape.toString(), out.numElements()));
  int64_t n = out.numElements();
  if (out.type() == ElemType::U64) {
    for (int64_t i = 0; i < n; ++i) out.data<uint64_t>()[i] = c.getUnsigned(i);
  } else if (isFloat(out.type())) {
    Literal src = Literal::array(ElemType::F64, out.dims());
    for (int64_t i = 0; i < n; ++i) src.data<double>()[i] = c.getDouble(i);
    out = convertLiteral(src, out.type());
  } else {
    Literal src = Literal::array(ElemType::S64, out.dims());
    for (int64_t i = 0; i < n; ++i) src.data<int64_t>()[i] = c.getInt(i);
    out = convertLiteral(src, out.type());
  }
  return out;
}

bool matchesShape(const Literal& l, const Shape& shape) {
  if (shape.isTuple()) {
    if (!l.isTuple() || l.elements().size() != shape.tupleShapes.size()) return false;
    for (size_t i = 0; i < shape.tupleShapes.size(); ++i)
      if (!matchesShape(l.elements()[i], shape.tupleShapes[i])) return false;
    return true;
  }
  if (shape.isToken()) return l.isTuple() && l.elements().empty();
  if (l.isTuple() || !shape.isArray()) return false;
  for (const auto& p : kTypes)
    if (p.prim == shape.type) return p.elem == l.type() && l.dims() == shape.dims;
  return false;
}

npy::Array toNpy(const Literal& l) {
  if (l.isTuple()) throw EvalError("internal: toNpy of a tuple");
  npy::Array a = npy::makeArray(pairOf(l.type()).dtype, l.dims());
  if (l.byteSize()) std::memcpy(a.data.data(), l.raw(), l.byteSize());
  return a;
}

Literal fromNpy(const npy::Array& a, const Shape& shape, const std::string& what) {
  if (!shape.isArray())
    throw EvalError(fmt::format("{}: the parameter has shape {}, which is not an array", what,
                                shape.toString()));
  ElemType t = toElemType(shape.type, what);
  if (a.shape != shape.dims)
    throw EvalError(fmt::format("{}: the file holds shape {} but the parameter is {}", what,
                                npy::shapeString(a.shape), shape.toString(false)));
  Literal out = Literal::array(t, shape.dims);
  if (t == ElemType::BF16) {
    std::vector<uint16_t> bits;
    try {
      bits = npy::toBf16Bits(a, what);
    } catch (const npy::NpyError& e) {
      throw EvalError(e.what());
    }
    if (!bits.empty()) std::memcpy(out.raw(), bits.data(), bits.size() * 2);
    return out;
  }
  if (a.dtype != pairOf(t).dtype)
    throw EvalError(fmt::format("{}: the file holds {} but the parameter is {} (expected {})", what,
                                npy::dtypeName(a.dtype), shape.toString(false),
                                npy::dtypeName(pairOf(t).dtype)));
  if (out.byteSize()) std::memcpy(out.raw(), a.data.data(), out.byteSize());
  return out;
}

}  // namespace tpusim::hlo::eval
