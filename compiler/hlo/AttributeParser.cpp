// The ", key=value" attributes of an instruction.
#include <fmt/format.h>

#include "compiler/hlo/ParserParts.h"

namespace tpusim::hlo {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

bool parseSlice(ParseCursor& c, std::vector<SliceDim>* out) {
  if (!c.expect('{', "to open slice")) return false;
  if (c.tryConsume('}')) return true;
  do {
    SliceDim d;
    if (!c.expect('[', "to open a slice range")) return false;
    if (!c.parseInt(&d.start, "a slice start") || !c.expect(':', "in a slice range") ||
        !c.parseInt(&d.limit, "a slice limit"))
      return false;
    if (c.tryConsume(':') && !c.parseInt(&d.stride, "a slice stride")) return false;
    if (!c.expect(']', "to close a slice range")) return false;
    out->push_back(d);
  } while (c.tryConsume(','));
  return c.expect('}', "to close slice");
}

// "a_b[_c]xa_b..." or "axbxc": groups of '_'-separated integers, separated by 'x'.
bool parseXGroups(ParseCursor& c, std::vector<std::vector<int64_t>>* out, const char* what) {
  c.skipTrivia();
  do {
    std::vector<int64_t> group;
    do {
      int64_t v;
      if (!c.parseInt(&v, what)) return false;
      group.push_back(v);
    } while (c.peekRaw() == '_' && (c.setPos(c.pos() + 1), true));
    out->push_back(std::move(group));
  } while (c.peekRaw() == 'x' && (isDigit(c.peekRaw(1)) || c.peekRaw(1) == '-') &&
           (c.setPos(c.pos() + 1), true));
  return true;
}

bool parsePadding(ParseCursor& c, std::vector<PaddingDim>* out) {
  size_t at = (c.skipTrivia(), c.pos());
  std::vector<std::vector<int64_t>> groups;
  if (!parseXGroups(c, &groups, "a padding amount")) return false;
  for (const auto& g : groups) {
    if (g.size() < 2 || g.size() > 3)
      return c.fail(at, "padding must be low_high or low_high_interior per dimension");
    out->push_back({g[0], g[1], g.size() == 3 ? g[2] : 0});
  }
  return true;
}

bool parseWindow(ParseCursor& c, std::vector<WindowDim>* out) {
  size_t open = (c.skipTrivia(), c.pos());
  if (!c.expect('{', "to open window")) return false;
  std::vector<std::pair<std::string, std::vector<std::vector<int64_t>>>> fields;
  while (!c.failed() && c.peek() != '}') {
    std::string key;
    size_t at;
    if (!c.parseName(&key, &at, "a window field") || !c.expect('=', "after the window field"))
      return false;
    std::vector<std::vector<int64_t>> groups;
    if (!parseXGroups(c, &groups, "a window value")) return false;
    fields.push_back({key, std::move(groups)});
    if (key != "size" && key != "stride" && key != "pad" && key != "lhs_dilate" &&
        key != "rhs_dilate" && key != "rhs_reversal")
      return c.fail(at, fmt::format("unknown window field '{}'", key));
  }
  if (!c.expect('}', "to close window")) return false;
  size_t rank = 0;
  for (const auto& f : fields)
    if (f.first == "size") rank = f.second.size();
  if (!rank) return c.fail(open, "window has no size");
  out->assign(rank, WindowDim());
  for (const auto& [key, groups] : fields) {
    if (groups.size() != rank)
      return c.fail(open, fmt::format("window field '{}' has {} dimensions, size has {}", key,
                                      groups.size(), rank));
    for (size_t i = 0; i < rank; ++i) {
      const auto& g = groups[i];
      if (key == "pad" ? g.size() != 2 : g.size() != 1)
        return c.fail(open, fmt::format("malformed window field '{}'", key));
      WindowDim& d = (*out)[i];
      if (key == "size") d.size = g[0];
      if (key == "stride") d.stride = g[0];
      if (key == "pad") d.padLow = g[0], d.padHigh = g[1];
      if (key == "lhs_dilate") d.baseDilation = g[0];
      if (key == "rhs_dilate") d.windowDilation = g[0];
      if (key == "rhs_reversal") d.reversal = g[0] != 0;
    }
  }
  return true;
}

bool parseIntListList(ParseCursor& c, std::vector<std::vector<int64_t>>* out, const char* what) {
  if (!c.expect('{', what)) return false;
  if (c.tryConsume('}')) return true;
  do {
    std::vector<int64_t> g;
    if (!c.parseIntList(&g, what)) return false;
    out->push_back(std::move(g));
  } while (c.tryConsume(','));
  return c.expect('}', what);
}

bool parseBracketInts(ParseCursor& c, std::vector<int64_t>* out, char open, char close) {
  if (!c.expect(open, "in replica_groups")) return false;
  if (c.tryConsume(close)) return true;
  do {
    int64_t v;
    if (!c.parseInt(&v, "a replica group dimension")) return false;
    out->push_back(v);
  } while (c.tryConsume(','));
  return c.expect(close, "in replica_groups");
}

bool parseReplicaGroups(ParseCursor& c, ReplicaGroups* g) {
  if (c.peek() == '[') {
    g->iotaForm = true;
    if (!parseBracketInts(c, &g->iotaGroupShape, '[', ']')) return false;
    if (!(c.peek() == '<' && c.peekRaw(1) == '='))
      return c.failHere("expected '<=' in iota replica_groups");
    c.setPos(c.pos() + 2);
    if (!parseBracketInts(c, &g->iotaReshape, '[', ']')) return false;
    if (c.peekRaw() == 'T' && c.peekRaw(1) == '(') {
      c.setPos(c.pos() + 1);
      if (!parseBracketInts(c, &g->iotaTranspose, '(', ')')) return false;
    }
    return true;
  }
  return parseIntListList(c, &g->groups, "in replica_groups");
}

bool parseCalled(ParseCursor& c, const std::string& key, HloInstruction::Attributes* attrs,
                 std::vector<PendingCalls>* calls) {
  CalledComputations cc;
  cc.key = key;
  PendingCalls pending;
  pending.callIndex = attrs->calls.size();
  if (c.tryConsume('{')) {
    cc.braced = true;
    if (!c.tryConsume('}')) {
      do {
        std::string name;
        size_t at;
        if (!c.parseName(&name, &at, "a computation name")) return false;
        pending.names.push_back({name, at});
      } while (c.tryConsume(','));
      if (!c.expect('}', "to close the computation list")) return false;
    }
  } else {
    std::string name;
    size_t at;
    if (!c.parseName(&name, &at, "a computation name")) return false;
    pending.names.push_back({name, at});
  }
  cc.computations.assign(pending.names.size(), nullptr);
  attrs->calls.push_back(std::move(cc));
  calls->push_back(std::move(pending));
  return true;
}

bool parseFrontendAttributes(ParseCursor& c, HloInstruction::Attributes* attrs) {
  if (!c.expect('{', "to open frontend_attributes")) return false;
  if (c.tryConsume('}')) return true;
  do {
    std::string key, value;
    if (!c.parseName(&key, nullptr, "a frontend attribute name") ||
        !c.expect('=', "after the frontend attribute name") ||
        !c.parseString(&value, "a quoted frontend attribute value"))
      return false;
    attrs->frontendAttributes.push_back({key, value});
  } while (c.tryConsume(','));
  return c.expect('}', "to close frontend_attributes");
}

bool parseMetadata(ParseCursor& c, OpMetadata* m) {
  if (!c.expect('{', "to open metadata")) return false;
  while (!c.failed() && c.peek() != '}') {
    std::string key;
    size_t at;
    if (!c.parseName(&key, &at, "a metadata field") || !c.expect('=', "after the metadata field"))
      return false;
    if (key == "op_type" || key == "op_name" || key == "source_file") {
      std::string v;
      if (!c.parseString(&v, "a quoted metadata value")) return false;
      (key == "op_type" ? m->opType : key == "op_name" ? m->opName : m->sourceFile) = v;
    } else if (key == "source_line") {
      int64_t v;
      if (!c.parseInt(&v, "a source line")) return false;
      m->sourceLine = v;
    } else {
      std::string raw;
      if (!c.captureRaw(&raw, "a metadata value")) return false;
      m->other.push_back({key, raw});
    }
    c.tryConsume(',');
  }
  return c.expect('}', "to close metadata");
}

bool parseGeneric(ParseCursor& c, const std::string& key, AttrValue* v) {
  using K = AttrValue::Kind;
  v->kind = genericAttrKind(key);
  std::string what = fmt::format("a value for {}", key);
  switch (v->kind) {
    case K::Int:
      return c.parseInt(&v->i, what.c_str());
    case K::IntList:
      return c.parseIntList(&v->list, what.c_str());
    case K::IntListList:
      return parseIntListList(c, &v->lists, what.c_str());
    case K::Float:
      return c.parseFloat(&v->f, what.c_str());
    case K::String:
      return c.parseString(&v->s, what.c_str());
    case K::Ident:
      return c.parseName(&v->s, nullptr, what.c_str());
    case K::Bool: {
      size_t at = (c.skipTrivia(), c.pos());
      if (c.tryKeyword("true")) return v->b = true, true;
      if (c.tryKeyword("false")) return v->b = false, true;
      return c.fail(at, fmt::format("expected true or false for {}", key));
    }
    case K::Raw:
      return c.captureRaw(&v->s, what.c_str());
  }
  return false;
}

bool isCallKey(const std::string& key, HloOpcode op) {
  if (key == "select" || key == "scatter") return op == HloOpcode::SelectAndScatter;
  return key == "to_apply" || key == "calls" || key == "condition" || key == "body" ||
         key == "branch_computations" || key == "true_computation" || key == "false_computation" ||
         key == "called_computations";
}

}  // namespace

bool parseAttributeValue(ParseCursor& c, const std::string& key, size_t keyPos, HloOpcode opcode,
                         HloInstruction::Attributes* a, std::vector<PendingCalls>* calls) {
  if (key == "dimensions") {
    a->dimensions.emplace();
    return c.parseIntList(&*a->dimensions, "for dimensions");
  }
  if (key == "slice") return parseSlice(c, &a->slice.emplace());
  if (key == "lhs_batch_dims") return c.parseIntList(&a->dot.lhsBatch, "for lhs_batch_dims");
  if (key == "rhs_batch_dims") return c.parseIntList(&a->dot.rhsBatch, "for rhs_batch_dims");
  if (key == "lhs_contracting_dims")
    return c.parseIntList(&a->dot.lhsContracting, "for lhs_contracting_dims");
  if (key == "rhs_contracting_dims")
    return c.parseIntList(&a->dot.rhsContracting, "for rhs_contracting_dims");
  if (key == "direction") {
    std::string d;
    size_t at;
    if (!c.parseName(&d, &at, "a comparison direction")) return false;
    a->direction = parseComparisonDirection(d);
    if (!a->direction)
      return c.fail(at,
                    fmt::format("unknown comparison direction '{}' (EQ, NE, LT, LE, GT, GE)", d));
    return true;
  }
  if (key == "padding") return parsePadding(c, &a->padding.emplace());
  if (key == "window") return parseWindow(c, &a->window.emplace());
  if (isCallKey(key, opcode)) return parseCalled(c, key, a, calls);
  if (key == "replica_groups") return parseReplicaGroups(c, &a->replicaGroups.emplace());
  if (key == "channel_id") return c.parseInt(&a->channelId.emplace(), "a channel id");
  if (key == "custom_call_target")
    return c.parseString(&a->customCallTarget.emplace(), "a quoted custom_call_target");
  if (key == "backend_config") {
    BackendConfig& b = a->backendConfig.emplace();
    if (c.peek() == '"') {
      b.kind = BackendConfig::Kind::String;
      return c.parseString(&b.text);
    }
    if (c.peek() != '{') return c.failHere("expected a quoted string or {...} for backend_config");
    b.kind = BackendConfig::Kind::Braced;
    return c.captureRaw(&b.text, "a backend_config");
  }
  if (key == "sharding") {
    if (c.peek() != '{') return c.failHere("expected '{' to open sharding");
    return c.captureRaw(&a->sharding.emplace(), "a sharding");
  }
  if (key == "frontend_attributes") return parseFrontendAttributes(c, a);
  if (key == "metadata") return parseMetadata(c, &a->metadata);
  (void)keyPos;
  NamedAttr attr;
  attr.key = key;
  if (!parseGeneric(c, key, &attr.value)) return false;
  a->generic.push_back(std::move(attr));
  return true;
}

}  // namespace tpusim::hlo
