// Directives: .chip, .buffer, .data/.words/.bytes, .dma_descriptor, .symbol,
// .op/.endop and .cost, each filling one section of the Program.
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <set>
#include <tuple>

#include "isa/AsmParser.h"
#include "isa/AsmSyntax.h"

namespace tpusim::isa::detail {

// Parses the arguments after a directive word; false on a syntax error (reported).
bool AsmParser::parseArgs(int lineNo, const std::vector<Token>& toks, size_t i,
                          std::vector<Arg>* args) {
  while (i < toks.size()) {
    if (toks[i].kind == Tok::Comma) {
      ++i;
      continue;
    }
    Arg arg;
    if (toks[i].kind == Tok::Word && i + 1 < toks.size() && toks[i + 1].kind == Tok::Equals) {
      arg.key = toks[i].text;
      arg.keyColumn = toks[i].column;
      i += 2;
      if (i == toks.size()) {
        error(lineNo, toks[i - 1].column, fmt::format("expected a value after '{}='", arg.key));
        return false;
      }
    }
    const Token& t = toks[i];
    arg.column = t.column;
    if (t.kind == Tok::LBracket) {
      arg.kind = Arg::List;
      ++i;
      bool expectValue = true;
      for (;;) {
        if (i == toks.size()) {
          error(lineNo, t.column, "missing ']' at the end of the list");
          return false;
        }
        if (toks[i].kind == Tok::RBracket) break;
        if (expectValue && toks[i].kind == Tok::Word) {
          arg.list.push_back(toks[i]);
          expectValue = false;
        } else if (!expectValue && toks[i].kind == Tok::Comma) {
          expectValue = true;
        } else {
          error(lineNo, toks[i].column, "expected a number or ']' in the list");
          return false;
        }
        ++i;
      }
      ++i;
    } else if (t.kind == Tok::Word || t.kind == Tok::String) {
      arg.kind = t.kind == Tok::Word ? Arg::Word : Arg::String;
      arg.text = t.text;
      ++i;
      if (t.kind == Tok::Word && i + 1 < toks.size() && toks[i].kind == Tok::Colon &&
          toks[i + 1].kind == Tok::Word) {
        arg.kind = Arg::Pair;
        arg.second = toks[i + 1].text;
        arg.secondColumn = toks[i + 1].column;
        i += 2;
      }
    } else {
      error(lineNo, t.column, fmt::format("unexpected {}", asmlex::tokenName(t.kind)));
      return false;
    }
    args->push_back(std::move(arg));
  }
  return true;
}

// Checks keyed arguments against `allowed` (no duplicates, no unknown keys).
bool AsmParser::checkKeys(int lineNo, const std::string& directive, const std::vector<Arg>& args,
                          size_t positional, std::initializer_list<const char*> allowed) {
  std::set<std::string> seen;
  bool ok = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (i < positional) {
      if (!a.key.empty()) {
        error(lineNo, a.keyColumn,
              fmt::format("'{}' expects {} positional argument{} before key=value arguments",
                          directive, positional, positional == 1 ? "" : "s"));
        return false;
      }
      continue;
    }
    if (a.key.empty()) {
      error(lineNo, a.column,
            fmt::format("unexpected argument for '{}' (expected key=value)", directive));
      ok = false;
      continue;
    }
    bool known = false;
    for (const char* k : allowed) known |= a.key == k;
    std::string keys;
    for (const char* k : allowed) keys += (keys.empty() ? "" : ", ") + std::string(k);
    if (!known) {
      error(lineNo, a.keyColumn,
            fmt::format("unknown key '{}' for '{}' (expected: {})", a.key, directive, keys));
      ok = false;
    } else if (!seen.insert(a.key).second) {
      error(lineNo, a.keyColumn, fmt::format("key '{}' given twice", a.key));
      ok = false;
    }
  }
  if (args.size() < positional) {
    error(lineNo, 0,
          fmt::format("'{}' expects {} positional argument{}", directive, positional,
                      positional == 1 ? "" : "s"));
    return false;
  }
  return ok;
}

const Arg* AsmParser::find(const std::vector<Arg>& args, const char* key) {
  for (const Arg& a : args)
    if (a.key == key) return &a;
  return nullptr;
}

bool AsmParser::wordInt(int lineNo, const std::string& text, int column, const char* what,
                        int64_t min, int64_t max, int64_t* out) {
  int64_t v;
  if (!syntax::parseInteger(text, &v)) {
    // An integer too large for 64 bits is out of range, not "not an integer".
    std::string_view digits = text;
    if (!digits.empty() && digits[0] == '-') digits.remove_prefix(1);
    bool hex = digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    if (hex) digits.remove_prefix(2);
    bool integer = !digits.empty() &&
                   digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") ==
                       std::string_view::npos;
    error(lineNo, column,
          integer ? fmt::format("{} {} is out of range ({}..{})", what, text, min, max)
                  : fmt::format("{} must be an integer, got '{}'", what, text));
    return false;
  }
  if (v < min || v > max) {
    error(lineNo, column, fmt::format("{} {} is out of range ({}..{})", what, text, min, max));
    return false;
  }
  *out = v;
  return true;
}

bool AsmParser::argInt(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max,
                       int64_t* out) {
  if (a.kind != Arg::Word) {
    error(lineNo, a.column, fmt::format("{} must be an integer", what));
    return false;
  }
  return wordInt(lineNo, a.text, a.column, what, min, max, out);
}

bool AsmParser::argName(int lineNo, const Arg& a, const char* what, std::string* out) {
  if (a.kind == Arg::String || (a.kind == Arg::Word && syntax::isIdentifier(a.text))) {
    *out = a.text;
    return true;
  }
  error(lineNo, a.column,
        fmt::format("{} must be an identifier or a \"quoted string\", got '{}'", what, a.text));
  return false;
}

bool AsmParser::argList(int lineNo, const Arg& a, const char* what, int64_t min, int64_t max,
                        std::vector<int64_t>* out) {
  if (a.kind != Arg::List) {
    error(lineNo, a.column, fmt::format("{} must be a list like [1, 2]", what));
    return false;
  }
  for (const Token& t : a.list) {
    int64_t v;
    if (!wordInt(lineNo, t.text, t.column, what, min, max, &v)) return false;
    out->push_back(v);
  }
  return true;
}

bool AsmParser::argSpace(int lineNo, const std::string& text, int column, MemorySpace* out) {
  if (memorySpaceFromName(text, out)) return true;
  error(lineNo, column,
        fmt::format("unknown memory space '{}' (expected hbm, vmem or smem)", text));
  return false;
}

void AsmParser::parseDirective(int lineNo, const std::vector<Token>& toks, size_t i) {
  const Token& d = toks[i];
  std::vector<Arg> args;
  if (!parseArgs(lineNo, toks, i + 1, &args)) return;
  const std::string& name = d.text;
  bool continuesData = name == ".words" || name == ".bytes";
  if (!continuesData) currentData_ = -1;
  if (name == ".chip")
    chipDirective(lineNo, d, args);
  else if (name == ".buffer")
    bufferDirective(lineNo, args);
  else if (name == ".data")
    dataDirective(lineNo, d, args);
  else if (continuesData)
    dataContinuation(lineNo, d, args);
  else if (name == ".dma_descriptor")
    dmaDirective(lineNo, args);
  else if (name == ".symbol")
    symbolDirective(lineNo, d, args);
  else if (name == ".op")
    opDirective(lineNo, d, args);
  else if (name == ".endop")
    endopDirective(lineNo, d, args);
  else if (name == ".cost")
    costDirective(lineNo, args);
  else
    error(lineNo, d.column,
          fmt::format("unknown directive '{}' (expected .chip, .buffer, .data, .words, .bytes, "
                      ".dma_descriptor, .symbol, .op, .endop or .cost)",
                      name));
}

void AsmParser::chipDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (args.size() != 1 || !args[0].key.empty()) {
    error(lineNo, d.column, "'.chip' takes one argument, the chip preset name");
    return;
  }
  std::string chip;
  if (!argName(lineNo, args[0], "the chip name", &chip)) return;
  if (chipLine_) {
    error(lineNo, d.column, fmt::format("'.chip' is already given on line {}", chipLine_));
    return;
  }
  chipLine_ = lineNo;
  prog_.chip = chip;
}

void AsmParser::bufferDirective(int lineNo, const std::vector<Arg>& args) {
  if (!checkKeys(lineNo, ".buffer", args, 1,
                 {"shape", "dtype", "space", "addr", "role", "size", "pair_rows"}))
    return;
  BufferDesc buf;
  if (!argName(lineNo, args[0], "the buffer name", &buf.name)) return;
  const Arg* shape = find(args, "shape");
  const Arg* dtype = find(args, "dtype");
  const Arg* addr = find(args, "addr");
  for (auto [arg, key] : {std::pair{shape, "shape"}, {dtype, "dtype"}, {addr, "addr"}})
    if (!arg) {
      error(lineNo, args[0].column, fmt::format("buffer '{}' needs {}=", buf.name, key));
      return;
    }
  if (!argList(lineNo, *shape, "a dimension", 0, INT64_MAX, &buf.shape)) return;
  if (dtype->kind != Arg::Word || !dtypeFromName(dtype->text, &buf.dtype)) {
    error(lineNo, dtype->column,
          fmt::format("unknown dtype '{}' (expected f32, bf16, s32, s8, u8, s16, u16 or pred)",
                      dtype->text));
    return;
  }
  if (const Arg* space = find(args, "space"))
    if (!argSpace(lineNo, space->text, space->column, &buf.space)) return;
  int64_t v;
  if (!argInt(lineNo, *addr, "the address", 0, INT64_MAX, &v)) return;
  buf.address = uint64_t(v);
  if (const Arg* role = find(args, "role"))
    if (!bufferRoleFromName(role->text, &buf.role)) {
      error(lineNo, role->column,
            fmt::format("unknown role '{}' (expected input, output, scratch or constant)",
                        role->text));
      return;
    }
  uint64_t bytes = uint64_t(dtypeBytes(buf.dtype));
  for (int64_t dim : buf.shape) {
    if (dim != 0 && bytes > uint64_t(INT64_MAX) / uint64_t(dim)) {
      error(lineNo, shape->column, "the buffer's size overflows 64 bits");
      return;
    }
    bytes *= uint64_t(dim);
  }
  buf.sizeBytes = bytes;
  if (const Arg* size = find(args, "size")) {
    if (!argInt(lineNo, *size, "the size", 0, INT64_MAX, &v)) return;
    if (uint64_t(v) < bytes) {
      error(lineNo, size->column,
            fmt::format("size={} is smaller than the {} bytes the shape needs", v, bytes));
      return;
    }
    buf.sizeBytes = uint64_t(v);
  }
  if (buf.address > UINT64_MAX - buf.sizeBytes) {
    error(lineNo, addr->column, "the buffer's end address overflows 64 bits");
    return;
  }
  if (const Arg* pair = find(args, "pair_rows")) {
    if (!argInt(lineNo, *pair, "pair_rows", 1, 1 << 16, &v)) return;
    buf.pairRows = uint32_t(v);
    if (std::string why; !pairLayoutValid(buf, &why)) {
      error(lineNo, pair->column, why);
      return;
    }
  }
  for (const BufferDesc& other : prog_.buffers) {
    if (other.name == buf.name) {
      error(lineNo, args[0].column, fmt::format("buffer '{}' is already defined", buf.name));
      return;
    }
    if (buffersOverlap(buf, other)) {
      error(
          lineNo, addr->column,
          fmt::format("buffer '{}' [0x{:x}, 0x{:x}) overlaps buffer '{}' [0x{:x}, 0x{:x}) in {}",
                      buf.name, buf.address, buf.address + buf.sizeBytes, other.name, other.address,
                      other.address + other.sizeBytes, memorySpaceName(buf.space)));
      return;
    }
  }
  prog_.buffers.push_back(std::move(buf));
}

// Appends the values args[from..] to `bytes`, as words or bytes.
bool AsmParser::dataValues(int lineNo, const std::vector<Arg>& args, size_t from, bool words,
                           std::vector<uint8_t>* bytes) {
  for (size_t i = from; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (!a.key.empty() || a.kind != Arg::Word) {
      error(lineNo, a.column, "expected a number");
      return false;
    }
    int64_t v;
    uint32_t bits;
    if (words) {
      if (syntax::parseInteger(a.text, &v)) {
        if (v < INT32_MIN || v > int64_t(UINT32_MAX)) {
          error(lineNo, a.column, fmt::format("word {} does not fit in 32 bits", a.text));
          return false;
        }
        bits = uint32_t(v);
      } else if (!syntax::parseFloatLiteral(a.text, &bits)) {
        error(lineNo, a.column,
              fmt::format("expected an integer or float literal, got '{}'", a.text));
        return false;
      }
      for (int b = 0; b < 4; ++b) bytes->push_back(uint8_t(bits >> (8 * b)));
    } else {
      if (!wordInt(lineNo, a.text, a.column, "a byte", -128, 255, &v)) return false;
      bytes->push_back(uint8_t(v));
    }
  }
  return true;
}

void AsmParser::dataDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (args.size() < 3 || args[2].kind != Arg::Word ||
      (args[2].text != "words" && args[2].text != "bytes")) {
    error(lineNo, d.column,
          "expected '.data SPACE, ADDRESS, words V, ...' or '.data SPACE, ADDRESS, bytes V, ...'");
    return;
  }
  DataSegment seg;
  if (!argSpace(lineNo, args[0].text, args[0].column, &seg.space)) return;
  int64_t addr;
  if (!argInt(lineNo, args[1], "the address", 0, INT64_MAX, &addr)) return;
  seg.address = uint64_t(addr);
  if (!dataValues(lineNo, args, 3, args[2].text == "words", &seg.bytes)) return;
  prog_.data.push_back(std::move(seg));
  currentData_ = int(prog_.data.size()) - 1;
}

void AsmParser::dataContinuation(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (currentData_ < 0) {
    error(lineNo, d.column, fmt::format("'{}' must follow a '.data' line", d.text));
    return;
  }
  dataValues(lineNo, args, 0, d.text == ".words", &prog_.data[currentData_].bytes);
}

void AsmParser::dmaDirective(int lineNo, const std::vector<Arg>& args) {
  if (!checkKeys(
          lineNo, ".dma_descriptor", args, 1,
          {"src", "dst", "inner", "counts", "src_strides", "dst_strides", "chip", "elem", "pair"}))
    return;
  int64_t word;
  if (!argInt(lineNo, args[0], "the SMEM word address", 0, INT64_MAX / 4, &word)) return;
  DmaDescriptor desc;
  for (auto [key, space, address] :
       {std::tuple{"src", &desc.src, &desc.srcAddr}, std::tuple{"dst", &desc.dst, &desc.dstAddr}}) {
    const Arg* a = find(args, key);
    if (!a || a->kind != Arg::Pair) {
      error(lineNo, a ? a->column : args[0].column,
            fmt::format("'.dma_descriptor' needs {}=SPACE:ADDRESS (e.g. hbm:0x0)", key));
      return;
    }
    if (!argSpace(lineNo, a->text, a->column, space)) return;
    int64_t v;
    if (!wordInt(lineNo, a->second, a->secondColumn, "the address", 0, INT64_MAX, &v)) return;
    *address = uint64_t(v);
  }
  const Arg* inner = find(args, "inner");
  if (!inner) {
    error(lineNo, args[0].column, "'.dma_descriptor' needs inner=BYTES");
    return;
  }
  int64_t v;
  if (!argInt(lineNo, *inner, "inner", 1, UINT32_MAX, &v)) return;
  desc.innerBytes = uint32_t(v);
  std::vector<int64_t> counts, srcStrides, dstStrides;
  if (const Arg* a = find(args, "counts"))
    if (!argList(lineNo, *a, "a count", 1, UINT32_MAX, &counts)) return;
  if (const Arg* a = find(args, "src_strides"))
    if (!argList(lineNo, *a, "a source stride", 0, UINT32_MAX, &srcStrides)) return;
  if (const Arg* a = find(args, "dst_strides"))
    if (!argList(lineNo, *a, "a destination stride", 0, UINT32_MAX, &dstStrides)) return;
  if (counts.size() > 3 || srcStrides.size() != counts.size() ||
      dstStrides.size() != counts.size()) {
    error(lineNo, args[0].column,
          fmt::format("'.dma_descriptor' takes up to 3 outer counts and as many source and "
                      "destination strides (got {} counts, {} src_strides, {} dst_strides)",
                      counts.size(), srcStrides.size(), dstStrides.size()));
    return;
  }
  desc.numDims = int(counts.size()) + 1;
  for (size_t k = 0; k < counts.size(); ++k) {
    desc.counts[k] = uint32_t(counts[k]);
    desc.srcStrides[k] = uint32_t(srcStrides[k]);
    desc.dstStrides[k] = uint32_t(dstStrides[k]);
  }
  if (const Arg* a = find(args, "chip")) {
    if (!argInt(lineNo, *a, "chip", 0, 0xFFFF, &v)) return;
    desc.dstChip = uint16_t(v);
  }
  if (const Arg* a = find(args, "elem")) {
    if (!argInt(lineNo, *a, "elem", 1, 2, &v)) return;
    desc.elemBytes = uint8_t(v);
  }
  if (const Arg* a = find(args, "pair")) {
    if (!argInt(lineNo, *a, "pair", 1, UINT32_MAX, &v)) return;
    desc.pairOffset = uint32_t(v);
  }
  std::string invalid;
  if (!desc.validate(&invalid)) {
    error(lineNo, args[0].column, invalid);
    return;
  }
  DataSegment seg;
  seg.space = MemorySpace::Smem;
  seg.address = uint64_t(word) * 4;
  for (uint32_t w : desc.pack())
    for (int b = 0; b < 4; ++b) seg.bytes.push_back(uint8_t(w >> (8 * b)));
  prog_.data.push_back(std::move(seg));
}

void AsmParser::symbolDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (args.empty() || args.size() > 2 || !args[0].key.empty() ||
      (args.size() == 2 && !args[1].key.empty())) {
    error(lineNo, d.column, "expected '.symbol NAME' or '.symbol NAME, BUNDLE'");
    return;
  }
  Symbol sym;
  if (!argName(lineNo, args[0], "the symbol name", &sym.name)) return;
  sym.bundle = uint32_t(prog_.code.size());
  if (args.size() == 2) {
    int64_t v;
    if (!argInt(lineNo, args[1], "the bundle number", 0, UINT32_MAX, &v)) return;
    sym.bundle = uint32_t(v);
  }
  for (const Symbol& other : prog_.symbols)
    if (other.name == sym.name) {
      error(lineNo, args[0].column, fmt::format("symbol '{}' is already defined", sym.name));
      return;
    }
  symbolLines_.push_back({lineNo, args[0].column});
  prog_.symbols.push_back(std::move(sym));
}

void AsmParser::opDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (!checkKeys(lineNo, ".op", args, 1, {"hlo", "file", "line", "begin", "end"})) return;
  DebugEntry e;
  if (!argName(lineNo, args[0], "the op name", &e.opName)) return;
  for (auto [key, field] : {std::pair{"hlo", &e.hloInstruction}, {"file", &e.sourceFile}})
    if (const Arg* a = find(args, key)) {
      if (a->kind != Arg::Word && a->kind != Arg::String) {
        error(lineNo, a->column, fmt::format("{}= must be a word or a \"quoted string\"", key));
        return;
      }
      *field = a->text;
    }
  int64_t v;
  if (const Arg* a = find(args, "line")) {
    if (!argInt(lineNo, *a, "the line", 0, UINT32_MAX, &v)) return;
    e.sourceLine = uint32_t(v);
  }
  const Arg* begin = find(args, "begin");
  const Arg* end = find(args, "end");
  if (bool(begin) != bool(end)) {
    error(lineNo, d.column, "'.op' takes both begin= and end=, or neither (then '.endop' ends it)");
    return;
  }
  if (begin) {
    int64_t b, en;
    if (!argInt(lineNo, *begin, "begin", 0, UINT32_MAX, &b) ||
        !argInt(lineNo, *end, "end", b, UINT32_MAX, &en))
      return;
    e.begin = uint32_t(b);
    e.end = uint32_t(en);
    explicitRanges_.push_back({prog_.debugMap.size(), lineNo, d.column});
  } else {
    e.begin = uint32_t(prog_.code.size());
    openOps_.push_back({prog_.debugMap.size(), lineNo, d.column});
  }
  prog_.debugMap.push_back(std::move(e));
}

void AsmParser::endopDirective(int lineNo, const Token& d, const std::vector<Arg>& args) {
  if (!args.empty()) {
    error(lineNo, args[0].column, "'.endop' takes no arguments");
    return;
  }
  if (openOps_.empty()) {
    error(lineNo, d.column, "'.endop' without an open '.op'");
    return;
  }
  prog_.debugMap[openOps_.back().index].end = uint32_t(prog_.code.size());
  openOps_.pop_back();
}

void AsmParser::costDirective(int lineNo, const std::vector<Arg>& args) {
  if (!checkKeys(lineNo, ".cost", args, 1,
                 {"flops", "hbm_read", "hbm_write", "vmem_read", "vmem_write"}))
    return;
  CostEntry c;
  if (!argName(lineNo, args[0], "the op name", &c.opName)) return;
  if (const Arg* a = find(args, "flops")) {
    char* endp = nullptr;
    c.flops = a->kind == Arg::Word ? std::strtod(a->text.c_str(), &endp) : -1;
    if (a->kind != Arg::Word || *endp != '\0' || !std::isfinite(c.flops) || c.flops < 0 ||
        a->text.empty()) {
      error(lineNo, a->column, "flops= must be a finite number >= 0");
      return;
    }
  }
  for (auto [key, field] : {std::pair{"hbm_read", &c.hbmBytesRead},
                            {"hbm_write", &c.hbmBytesWritten},
                            {"vmem_read", &c.vmemBytesRead},
                            {"vmem_write", &c.vmemBytesWritten}})
    if (const Arg* a = find(args, key)) {
      int64_t v;
      if (!argInt(lineNo, *a, key, 0, INT64_MAX, &v)) return;
      *field = uint64_t(v);
    }
  prog_.costs.push_back(std::move(c));
}

}  // namespace tpusim::isa::detail
