// Bundles, ops and operands: the instruction lines of the assembly language.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "isa/AsmParser.h"
#include "isa/AsmSyntax.h"
#include "isa/Rules.h"

namespace tpusim::isa::detail {

namespace {

// Edit distance, for "did you mean" on an unknown mnemonic.
int levenshtein(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = int(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = int(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + int(a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string suggestMnemonic(std::string_view word) {
  std::string_view best;
  int bestDistance = 3;
  for (int i = 1; i < kNumOpcodes; ++i) {
    int d = levenshtein(word, kOpcodeTable[i].mnemonic);
    if (d < bestDistance) {
      bestDistance = d;
      best = kOpcodeTable[i].mnemonic;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}
}  // namespace

void AsmParser::parseBundle(int lineNo, const std::vector<Token>& toks, size_t i) {
  std::vector<ParsedOp> ops;
  bool ok = true;
  while (i < toks.size()) {
    size_t end = i;
    while (end < toks.size() && toks[end].kind != Tok::OpSep) ++end;
    if (end == i) {
      error(lineNo, toks[i].column, "expected an op before ';;'");
      ok = false;
    } else {
      ParsedOp op;
      int r = parseOp(lineNo, toks, i, end, &op);
      if (r < 0) ok = false;
      if (r > 0) ops.push_back(std::move(op));
    }
    i = end;
    if (i < toks.size()) {
      ++i;  // ';;'
      if (i == toks.size()) {
        error(lineNo, toks[i - 1].column, "expected an op after ';;'");
        ok = false;
      }
    }
  }
  if (!ok) {
    prog_.code.emplace_back();  // keep bundle numbering (labels) right for later errors
    bundleLines_.push_back({lineNo, 0});
    return;
  }
  Bundle b;
  std::vector<int> placedColumn(kNumSlotInstances, 0);
  std::vector<int> slotOf(ops.size(), -1);
  // Ops with an explicit slot claim it first; the others take the first free
  // slot of their kind in written order.
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].explicitIndex < 0) continue;
    int s = firstSlotInstance(ops[k].kind) + ops[k].explicitIndex;
    if (!b.slots[s].empty()) {
      error(lineNo, ops[k].column,
            fmt::format("slot {} is already used by '{}'", slotInstanceName(s),
                        b.slots[s].info().mnemonic));
      ok = false;
      continue;
    }
    b.slots[s] = ops[k].inst;
    slotOf[k] = s;
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].explicitIndex >= 0) continue;
    int first = firstSlotInstance(ops[k].kind), count = slotInfo(ops[k].kind).count;
    int s = first;
    while (s < first + count && !b.slots[s].empty()) ++s;
    if (s == first + count) {
      error(lineNo, ops[k].column,
            fmt::format("no free {} slot for '{}' (a bundle has {} {} slot{})",
                        slotInfo(ops[k].kind).name, ops[k].inst.info().mnemonic, count,
                        slotInfo(ops[k].kind).name, count == 1 ? "" : "s"));
      ok = false;
      continue;
    }
    b.slots[s] = ops[k].inst;
    slotOf[k] = s;
  }
  // Bundle rules, reported at the op that breaks them.
  std::vector<std::pair<RegisterRef, size_t>> writes;
  int branchOp = -1;
  for (size_t k = 0; k < ops.size(); ++k) {
    for (const RegisterRef& reg : writtenRegisters(ops[k].inst)) {
      for (const auto& [earlier, by] : writes)
        if (earlier == reg) {
          error(lineNo, ops[k].column,
                fmt::format("register {} is written twice in one bundle (also by '{}')",
                            registerName(reg), ops[by].inst.info().mnemonic));
          ok = false;
        }
      writes.push_back({reg, k});
    }
    if (isBranch(ops[k].inst.op)) {
      if (branchOp >= 0) {
        error(lineNo, ops[k].column,
              fmt::format("two branches in one bundle (also '{}'); at most one is allowed",
                          ops[branchOp].inst.info().mnemonic));
        ok = false;
      } else {
        branchOp = int(k);
      }
    }
  }
  size_t index = prog_.code.size();
  for (size_t k = 0; k < ops.size(); ++k)
    for (const auto& [operand, tok] : ops[k].labelOperands)
      if (slotOf[k] >= 0)
        fixups_.push_back({index, slotOf[k], operand, tok.text, lineNo, tok.column});
  prog_.code.push_back(ok ? b : Bundle{});
  bundleLines_.push_back({lineNo, ops.empty() ? 1 : ops[0].column});
}

// Parses toks[begin, end) as one op. Returns 1 for an op, 0 for `nop`, -1 on error.
int AsmParser::parseOp(int lineNo, const std::vector<Token>& toks, size_t begin, size_t end,
                       ParsedOp* op) {
  size_t i = begin;
  const Token* slotTok = nullptr;
  if (toks[i].kind == Tok::Slot) slotTok = &toks[i++];
  if (i == end || toks[i].kind != Tok::Word) {
    error(lineNo, i == end ? toks[i - 1].column : toks[i].column, "expected an opcode");
    return -1;
  }
  const Token& mn = toks[i++];
  op->column = slotTok ? slotTok->column : mn.column;
  if (mn.text == "nop") {
    if (slotTok) error(lineNo, slotTok->column, "'nop' takes no slot");
    if (i != end) error(lineNo, toks[i].column, "'nop' takes no operands");
    return slotTok || i != end ? -1 : 0;
  }
  std::optional<Opcode> opcode = opcodeFromMnemonic(mn.text);
  if (!opcode) {
    error(lineNo, mn.column,
          fmt::format("unknown opcode '{}'{}", mn.text, suggestMnemonic(mn.text)));
    return -1;
  }
  const OpcodeInfo& info = opcodeInfo(*opcode);
  op->inst.op = *opcode;
  op->kind = info.slot;
  if (slotTok && !parseSlotPrefix(lineNo, *slotTok, info, op)) return -1;

  // Operands: word (',' word)*
  std::vector<const Token*> operands;
  bool expectOperand = true;
  for (; i < end; ++i) {
    const Token& t = toks[i];
    if (expectOperand && t.kind == Tok::Word) {
      operands.push_back(&t);
      expectOperand = false;
    } else if (!expectOperand && t.kind == Tok::Comma) {
      expectOperand = true;
    } else {
      error(lineNo, t.column,
            fmt::format("expected {} in the operands of '{}', found {}",
                        expectOperand ? "an operand" : "',' or ';;'", info.mnemonic,
                        t.kind == Tok::Word || t.kind == Tok::String
                            ? "'" + t.text + "'"
                            : std::string(asmlex::tokenName(t.kind))));
      return -1;
    }
  }
  if (expectOperand && !operands.empty()) {
    error(lineNo, toks[end - 1].column, "expected an operand after ','");
    return -1;
  }
  if (int(operands.size()) != info.numOperands) {
    std::string expected;
    for (int k = 0; k < info.numOperands; ++k)
      expected += (k ? ", " : "") + describeOperand(info.operands[k]);
    error(
        lineNo,
        operands.size() > size_t(info.numOperands) ? operands[info.numOperands]->column : mn.column,
        fmt::format("'{}' takes {} operand{}{}, got {}", info.mnemonic, info.numOperands,
                    info.numOperands == 1 ? "" : "s", expected.empty() ? "" : " (" + expected + ")",
                    operands.size()));
    return -1;
  }
  bool ok = true;
  for (int k = 0; k < info.numOperands; ++k) ok &= parseOperand(lineNo, info, k, *operands[k], op);
  return ok ? 1 : -1;
}

bool AsmParser::parseSlotPrefix(int lineNo, const Token& t, const OpcodeInfo& info, ParsedOp* op) {
  for (int k = 0; k < kNumSlotKinds; ++k) {
    std::string_view name = slotInfo(SlotKind(k)).name;
    if (t.text.compare(0, name.size(), name) != 0) continue;
    std::string rest = t.text.substr(name.size());
    int64_t index;
    if (rest.empty() || !std::isdigit(uint8_t(rest[0])) || !syntax::parseInteger(rest, &index))
      continue;
    if (SlotKind(k) != info.slot) {
      error(lineNo, t.column,
            fmt::format("'{}' cannot go in slot @{} (it needs a {} slot)", info.mnemonic, t.text,
                        slotInfo(info.slot).name));
      return false;
    }
    if (index >= slotInfo(info.slot).count) {
      error(
          lineNo, t.column,
          fmt::format("slot @{} does not exist (a bundle has {} {} slots, @{}0..@{}{})", t.text,
                      slotInfo(info.slot).count, name, name, name, slotInfo(info.slot).count - 1));
      return false;
    }
    op->explicitIndex = int(index);
    return true;
  }
  error(lineNo, t.column,
        fmt::format("unknown slot '@{}' (slots are named like @scalar0, @valu1, @vld2)", t.text));
  return false;
}

bool AsmParser::parseOperand(int lineNo, const OpcodeInfo& info, int k, const Token& t,
                             ParsedOp* op) {
  OperandKind kind = info.operands[k];
  const OperandInfo& oi = operandInfo(kind);
  OperandRange range = operandRange(kind);
  auto expected = [&] {
    error(lineNo, t.column,
          fmt::format("operand {} of '{}' must be {}, got '{}'", k + 1, info.mnemonic,
                      describeOperandWithArticle(kind), t.text));
    return false;
  };
  switch (oi.cls) {
    case OperandClass::Simm:
    case OperandClass::Uimm: {
      int64_t v;
      if (!syntax::parseInteger(t.text, &v)) {
        if (syntax::isFloatLiteral(t.text)) {
          error(lineNo, t.column,
                fmt::format("operand {} of '{}' must be an integer ({}); only 32-bit "
                            "immediates take float literals",
                            k + 1, info.mnemonic, describeOperand(kind)));
          return false;
        }
        return expected();
      }
      if (v < range.min || v > range.max) {
        error(lineNo, t.column,
              fmt::format("immediate {} is out of range for operand {} of '{}', {}", t.text, k + 1,
                          info.mnemonic, describeOperandWithArticle(kind)));
        return false;
      }
      op->inst.operands[k] = v;
      return true;
    }
    case OperandClass::Imm32: {
      int64_t v;
      uint32_t bits;
      if (syntax::parseInteger(t.text, &v)) {
        if (v < INT32_MIN || v > int64_t(UINT32_MAX)) {
          error(lineNo, t.column,
                fmt::format("immediate {} does not fit in 32 bits (operand {} of '{}')", t.text,
                            k + 1, info.mnemonic));
          return false;
        }
        op->inst.operands[k] = int64_t(uint32_t(v));
        return true;
      }
      if (syntax::isFloatLiteral(t.text)) {
        if (!syntax::parseFloatLiteral(t.text, &bits)) {
          error(lineNo, t.column, fmt::format("float literal {} is out of the f32 range", t.text));
          return false;
        }
        op->inst.operands[k] = int64_t(bits);
        return true;
      }
      return expected();
    }
    case OperandClass::Target: {
      int64_t v;
      if (syntax::parseInteger(t.text, &v)) {
        if (v < 0 || v > int64_t(UINT32_MAX)) {
          error(lineNo, t.column, fmt::format("branch target {} is not a bundle number", t.text));
          return false;
        }
        op->inst.operands[k] = v;
        if (options_.checkTargets) numericTargets_.push_back({uint32_t(v), lineNo, t.column});
        return true;
      }
      if (!syntax::isIdentifier(t.text)) return expected();
      op->labelOperands.push_back({k, t});
      return true;
    }
    default: {
      // Registers and unit indices: prefix followed by a decimal index.
      const std::string& s = t.text;
      bool digits = s.size() > oi.prefix.size() && s.size() <= oi.prefix.size() + 9 &&
                    s.compare(0, oi.prefix.size(), oi.prefix) == 0;
      for (size_t c = oi.prefix.size(); digits && c < s.size(); ++c)
        digits = std::isdigit(uint8_t(s[c]));
      if (!digits) return expected();
      int64_t v = std::atoll(s.c_str() + oi.prefix.size());
      if (v > range.max) {
        error(lineNo, t.column,
              fmt::format("{} does not exist: operand {} of '{}' must be {}", s, k + 1,
                          info.mnemonic, describeOperandWithArticle(kind)));
        return false;
      }
      op->inst.operands[k] = v;
      return true;
    }
  }
}

}  // namespace tpusim::isa::detail
