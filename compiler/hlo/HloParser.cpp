// Modules, computations and instructions; name resolution; shapes of
// instructions written without one.
#include "compiler/hlo/HloParser.h"
#include "isa/support/InputFile.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/ParserParts.h"
#include "compiler/hlo/ShapeInference.h"

namespace tpusim::hlo {
namespace {

struct PendingInstr {
  HloInstruction* inst = nullptr;
  size_t namePos = 0;
  size_t opcodePos = 0;
  bool hasShape = true;
  std::vector<std::pair<std::string, size_t>> operands;
  std::vector<PendingCalls> calls;
};

struct PendingComp {
  HloComputation* comp = nullptr;
  size_t namePos = 0;
  size_t closePos = 0;
  HloInstruction* root = nullptr;
  std::vector<PendingInstr> instrs;
};

class ModuleParser {
 public:
  explicit ModuleParser(ParseCursor& c) : c_(c) {}

  std::unique_ptr<HloModule> parse() {
    module_ = std::make_unique<HloModule>("module");
    module_->setSourceFile(c_.fileName());
    if (!parseHeader()) return nullptr;
    while (!c_.failed() && !c_.atEnd())
      if (!parseComputation()) return nullptr;
    if (c_.failed()) return nullptr;
    if (comps_.empty()) {
      c_.failHere("expected a computation");
      return nullptr;
    }
    if (!resolve()) return nullptr;
    return std::move(module_);
  }

 private:
  bool parseHeader() {
    if (!c_.tryKeyword("HloModule")) return true;
    std::string name;
    if (!c_.parseName(&name, nullptr, "a module name")) return false;
    module_->setName(name);
    while (c_.tryConsume(',')) {
      std::string key, value;
      size_t at;
      if (!c_.parseName(&key, &at, "a module attribute name")) return false;
      if (!c_.expect('=', "after the module attribute name")) return false;
      if (!c_.captureRaw(&value, "a module attribute value")) return false;
      for (const auto& kv : module_->headerAttributes())
        if (kv.first == key)
          return c_.fail(at, fmt::format("duplicate module attribute '{}'", key));
      module_->headerAttributes().push_back({key, value});
    }
    return true;
  }

  // (p0: f32[2], p1: s32[]) -> f32[2]: checked for syntax, then ignored (the
  // parameter instructions are the truth).
  bool parseSignature() {
    if (!c_.tryConsume('(')) return true;
    if (!c_.tryConsume(')')) {
      do {
        std::string name;
        Shape s;
        if (!c_.parseName(&name, nullptr, "a parameter name") ||
            !c_.expect(':', "after the parameter name") || !parseShapeAt(c_, &s))
          return false;
      } while (c_.tryConsume(','));
      if (!c_.expect(')', "to close the computation signature")) return false;
    }
    if (!(c_.peek() == '-' && c_.peekRaw(1) == '>'))
      return c_.failHere("expected '->' and the result shape after the computation signature");
    c_.setPos(c_.pos() + 2);
    Shape s;
    return parseShapeAt(c_, &s);
  }

  bool parseComputation() {
    size_t entryPos = (c_.skipTrivia(), c_.pos());
    bool isEntry = c_.tryKeyword("ENTRY");
    std::string name;
    size_t namePos;
    if (!c_.parseName(&name, &namePos, "a computation name")) return false;
    if (name == "HloModule")
      return c_.fail(namePos, "a second 'HloModule' needs a '// -----' line before it");
    if (compIndex_.count(name))
      return c_.fail(namePos, fmt::format("computation '{}' is defined twice", name));
    if (!parseSignature()) return false;
    if (!c_.expect('{', "to open the computation body")) return false;
    PendingComp pc;
    pc.comp = module_->addComputation(std::make_unique<HloComputation>(name));
    pc.namePos = namePos;
    if (isEntry) {
      if (module_->entry()) return c_.fail(entryPos, "more than one ENTRY computation");
      module_->setEntry(pc.comp);
    }
    std::unordered_map<std::string, size_t> names;
    while (!c_.failed() && c_.peek() != '}') {
      if (c_.atEnd()) return c_.fail(namePos, fmt::format("computation '{}' is not closed", name));
      if (!parseInstruction(pc, names)) return false;
    }
    pc.closePos = c_.pos();
    if (!c_.expect('}', "to close the computation")) return false;
    if (pc.instrs.empty())
      return c_.fail(namePos, fmt::format("computation '{}' has no instructions", name));
    compIndex_[name] = comps_.size();
    comps_.push_back(std::move(pc));
    return true;
  }

  bool parseOperands(PendingInstr& pi, HloOpcode op) {
    if (op == HloOpcode::Parameter) {
      int64_t n;
      size_t at = (c_.skipTrivia(), c_.pos());
      if (!c_.parseInt(&n, "a parameter number")) return false;
      if (n < 0) return c_.fail(at, "negative parameter number");
      pi.inst->attrs().parameterNumber = n;
      return true;
    }
    if (op == HloOpcode::Constant) {
      if (!pi.hasShape) return c_.fail(pi.opcodePos, "a constant needs its shape written");
      Literal lit;
      if (!parseLiteralAt(c_, pi.inst->shape(), &lit)) return false;
      pi.inst->attrs().literal = std::move(lit);
      return true;
    }
    if (c_.peek() == ')') return true;
    do {
      if (looksLikeShape(c_)) {
        Shape ignored;  // the operand's own shape is the truth
        if (!parseShapeAt(c_, &ignored)) return false;
      }
      std::string name;
      size_t at;
      if (!c_.parseName(&name, &at, "an operand name")) return false;
      pi.operands.push_back({name, at});
    } while (c_.tryConsume(','));
    return true;
  }

  bool parseInstruction(PendingComp& pc, std::unordered_map<std::string, size_t>& names) {
    size_t rootPos = (c_.skipTrivia(), c_.pos());
    bool isRoot = false;
    if (c_.peekName() == "ROOT") {
      // "ROOT" is the keyword unless it is itself the instruction name ("ROOT = ...").
      size_t save = c_.pos();
      c_.setPos(save + 4);
      isRoot = c_.peek() != '=';
      if (!isRoot) c_.setPos(save);
    }
    std::string name;
    size_t namePos;
    if (!c_.parseName(&name, &namePos, "an instruction name")) return false;
    if (names.count(name))
      return c_.fail(namePos, fmt::format("instruction '{}' is defined twice in computation '{}'",
                                          name, pc.comp->name()));
    if (!c_.expect('=', "after the instruction name")) return false;
    PendingInstr pi;
    pi.namePos = namePos;
    Shape shape;
    pi.hasShape = looksLikeShape(c_);
    if (pi.hasShape && !parseShapeAt(c_, &shape)) return false;
    std::string opName;
    if (!c_.parseName(&opName, &pi.opcodePos, "an opcode")) return false;
    auto op = parseOpcode(opName);
    if (!op) {
      if (c_.peek() == '[' && !pi.hasShape)
        return c_.fail(pi.opcodePos, fmt::format("unknown element type '{}'", opName));
      return c_.fail(pi.opcodePos, fmt::format("unknown opcode '{}'", opName));
    }
    if (!c_.expect('(', fmt::format("after opcode '{}'", opName).c_str())) return false;
    auto inst = HloInstruction::create(*op, name, shape);
    inst->setSourceLine(c_.lineOf(namePos));
    pi.inst = pc.comp->addInstruction(std::move(inst));
    if (!parseOperands(pi, *op)) return false;
    if (!c_.expect(')', "to close the operand list")) return false;
    std::unordered_set<std::string> seen;
    while (c_.tryConsume(',')) {
      std::string key;
      size_t keyPos;
      if (!c_.parseName(&key, &keyPos, "an attribute name")) return false;
      if (!seen.insert(key).second)
        return c_.fail(keyPos, fmt::format("duplicate attribute '{}'", key));
      if (!c_.expect('=', fmt::format("after attribute '{}'", key).c_str())) return false;
      if (!parseAttributeValue(c_, key, keyPos, *op, &pi.inst->attrs(), &pi.calls)) return false;
    }
    if (isRoot) {
      if (pc.root) return c_.fail(rootPos, "more than one ROOT in a computation");
      pc.root = pi.inst;
    }
    names[name] = pc.instrs.size();
    pc.instrs.push_back(std::move(pi));
    return true;
  }

  bool resolve() {
    if (!module_->entry()) module_->setEntry(comps_.back().comp);
    for (PendingComp& pc : comps_) {
      std::unordered_map<std::string, HloInstruction*> byName;
      for (const PendingInstr& pi : pc.instrs) byName[pi.inst->name()] = pi.inst;
      for (PendingInstr& pi : pc.instrs) {
        std::vector<HloInstruction*> ops;
        for (const auto& [name, at] : pi.operands) {
          auto it = byName.find(name);
          if (it == byName.end())
            return c_.fail(
                at, fmt::format("unknown operand '{}' in computation '{}'", name, pc.comp->name()));
          ops.push_back(it->second);
        }
        pi.inst->setOperands(std::move(ops));
        for (const PendingCalls& calls : pi.calls) {
          auto& cc = pi.inst->attrs().calls[calls.callIndex];
          for (size_t i = 0; i < calls.names.size(); ++i) {
            auto it = compIndex_.find(calls.names[i].first);
            if (it == compIndex_.end())
              return c_.fail(calls.names[i].second,
                             fmt::format("unknown computation '{}'", calls.names[i].first));
            cc.computations[i] = comps_[it->second].comp;
          }
        }
      }
      pc.comp->setRoot(pc.root ? pc.root : pc.instrs.back().inst);
    }
    return inferMissingShapes();
  }

  // Instructions written without a shape get the inferred one; operands
  // first (repeat until nothing changes: the order in the text is free).
  bool inferMissingShapes() {
    std::vector<PendingInstr*> todo;
    for (PendingComp& pc : comps_)
      for (PendingInstr& pi : pc.instrs)
        if (!pi.hasShape) todo.push_back(&pi);
    std::unordered_set<const HloInstruction*> unknown;
    for (PendingInstr* pi : todo) unknown.insert(pi->inst);
    while (!todo.empty()) {
      std::vector<PendingInstr*> next;
      for (PendingInstr* pi : todo) {
        bool ready = true;
        for (HloInstruction* op : pi->inst->operands()) ready &= !unknown.count(op);
        for (HloComputation* callee : pi->inst->calledComputations())
          ready &= callee && callee->root() && !unknown.count(callee->root());
        if (!ready) {
          next.push_back(pi);
          continue;
        }
        std::string why;
        auto shape = inferShape(*pi->inst, &why);
        if (!shape)
          return c_.fail(pi->opcodePos,
                         fmt::format("cannot infer the shape of '{}'{}; write it", pi->inst->name(),
                                     why.empty() ? "" : " (" + why + ")"));
        pi->inst->setShape(*shape);
        unknown.erase(pi->inst);
      }
      if (next.size() == todo.size())
        return c_.fail(next.front()->opcodePos,
                       fmt::format("cannot infer the shape of '{}' (its operands depend on it); "
                                   "write it",
                                   next.front()->inst->name()));
      todo.swap(next);
    }
    return true;
  }

  ParseCursor& c_;
  std::unique_ptr<HloModule> module_;
  std::vector<PendingComp> comps_;
  std::unordered_map<std::string, size_t> compIndex_;
};

// Byte ranges of the modules of a file: split at lines starting "// -----".
std::vector<std::pair<size_t, size_t>> splitModules(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t start = 0, lineStart = 0;
  while (lineStart <= text.size()) {
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string_view::npos) lineEnd = text.size();
    if (text.substr(lineStart, 8) == "// -----") {
      ranges.push_back({start, lineStart});
      start = lineEnd;
    }
    lineStart = lineEnd + 1;
  }
  ranges.push_back({start, text.size()});
  return ranges;
}

}  // namespace

ParseResult parseHloText(std::string_view text, const std::string& fileName) {
  ParseResult result;
  auto ranges = splitModules(text);
  for (const auto& [begin, end] : ranges) {
    ParseCursor c(text, fileName, begin, end);
    if (c.atEnd() && !c.failed()) {
      if (ranges.size() == 1) {
        c.failHere("no HLO module in the input");
      } else {
        continue;  // an empty chunk between separators
      }
    }
    std::unique_ptr<HloModule> m;
    if (!c.failed()) m = ModuleParser(c).parse();
    if (!m || c.failed()) {
      result.modules.clear();
      result.error = c.failed() ? c.error() : fileName + ": error: could not parse the module";
      return result;
    }
    result.modules.push_back(std::move(m));
  }
  if (result.modules.empty()) result.error = fileName + ":1:1: error: no HLO module in the input";
  return result;
}

ParseResult parseHloFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    if (auto problem = support::readInputFile(path, &text)) {
      ParseResult r;
      r.error = fmt::format("{}: error: {}", path, *problem);
      return r;
    }
  }
  return parseHloText(text, path == "-" ? "<stdin>" : path);
}

std::unique_ptr<HloModule> parseHloModule(std::string_view text, std::string* error,
                                          const std::string& fileName) {
  ParseResult r = parseHloText(text, fileName);
  if (r.ok() && r.modules.size() != 1) r.error = fileName + ": error: expected exactly one module";
  if (!r.ok()) {
    if (error) *error = r.error;
    return nullptr;
  }
  return std::move(r.modules.front());
}

}  // namespace tpusim::hlo
