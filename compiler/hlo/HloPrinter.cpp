#include "compiler/hlo/HloPrinter.h"

#include <fmt/format.h>

namespace tpusim::hlo {
namespace {

std::string ints(const std::vector<int64_t>& v, const char* sep = ",") {
  return fmt::format("{}", fmt::join(v, sep));
}

std::string braced(const std::vector<int64_t>& v) { return "{" + ints(v) + "}"; }

std::string printSlice(const std::vector<SliceDim>& s) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("[{}:{}", s[i].start, s[i].limit);
    if (s[i].stride != 1) out += fmt::format(":{}", s[i].stride);
    out += "]";
  }
  return out + "}";
}

std::string printPadding(const std::vector<PaddingDim>& p) {
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) out += "x";
    out += fmt::format("{}_{}", p[i].low, p[i].high);
    if (p[i].interior) out += fmt::format("_{}", p[i].interior);
  }
  return out;
}

std::string printWindow(const std::vector<WindowDim>& w) {
  auto field = [&](const char* name, auto get, int64_t dflt, bool always = false) {
    bool any = always;
    std::vector<std::string> parts;
    for (const auto& d : w) {
      int64_t v = get(d);
      if (v != dflt) any = true;
      parts.push_back(std::to_string(v));
    }
    if (!any || w.empty()) return std::string();
    return fmt::format(" {}={}", name, fmt::join(parts, "x"));
  };
  std::string out = "{";
  out += field(
      "size", [](const WindowDim& d) { return d.size; }, 1, true);
  out += field(
      "stride", [](const WindowDim& d) { return d.stride; }, 1);
  bool anyPad = false;
  std::vector<std::string> pads;
  for (const auto& d : w) {
    anyPad |= d.padLow || d.padHigh;
    pads.push_back(fmt::format("{}_{}", d.padLow, d.padHigh));
  }
  if (anyPad) out += fmt::format(" pad={}", fmt::join(pads, "x"));
  out += field(
      "lhs_dilate", [](const WindowDim& d) { return d.baseDilation; }, 1);
  out += field(
      "rhs_dilate", [](const WindowDim& d) { return d.windowDilation; }, 1);
  out += field(
      "rhs_reversal", [](const WindowDim& d) { return int64_t{d.reversal}; }, 0);
  if (out.size() > 1 && out[1] == ' ') out.erase(1, 1);
  return out + "}";
}

std::string printReplicaGroups(const ReplicaGroups& g) {
  if (g.iotaForm) {
    std::string out = "[" + ints(g.iotaGroupShape) + "]<=[" + ints(g.iotaReshape) + "]";
    if (!g.iotaTranspose.empty()) out += "T(" + ints(g.iotaTranspose) + ")";
    return out;
  }
  std::string out = "{";
  for (size_t i = 0; i < g.groups.size(); ++i) out += (i ? "," : "") + braced(g.groups[i]);
  return out + "}";
}

std::string printMetadata(const OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.opType.empty()) parts.push_back("op_type=\"" + m.opType + "\"");
  if (!m.opName.empty()) parts.push_back("op_name=\"" + m.opName + "\"");
  if (!m.sourceFile.empty()) parts.push_back("source_file=\"" + m.sourceFile + "\"");
  if (m.sourceLine) parts.push_back(fmt::format("source_line={}", *m.sourceLine));
  for (const auto& [k, v] : m.other) parts.push_back(k + "=" + v);
  return "{" + fmt::format("{}", fmt::join(parts, " ")) + "}";
}

std::string operandText(const HloInstruction* op) {
  if (!op) return "%<null>";
  return op->shape().toString() + " %" + op->name();
}

}  // namespace

std::string printAttributes(const HloInstruction& inst) {
  const auto& a = inst.attrs();
  std::string out;
  auto add = [&](const std::string& key, const std::string& value) {
    out += ", " + key + "=" + value;
  };
  if (a.dimensions) add("dimensions", braced(*a.dimensions));
  if (a.slice) add("slice", printSlice(*a.slice));
  if (!a.dot.lhsBatch.empty()) add("lhs_batch_dims", braced(a.dot.lhsBatch));
  if (!a.dot.lhsContracting.empty()) add("lhs_contracting_dims", braced(a.dot.lhsContracting));
  if (!a.dot.rhsBatch.empty()) add("rhs_batch_dims", braced(a.dot.rhsBatch));
  if (!a.dot.rhsContracting.empty()) add("rhs_contracting_dims", braced(a.dot.rhsContracting));
  if (a.direction) add("direction", comparisonDirectionName(*a.direction));
  if (a.padding) add("padding", printPadding(*a.padding));
  if (a.window) add("window", printWindow(*a.window));
  for (const auto& g : a.generic) add(g.key, g.value.toString());
  for (const auto& c : a.calls) {
    std::vector<std::string> names;
    for (const HloComputation* comp : c.computations)
      names.push_back("%" + (comp ? comp->name() : std::string("<null>")));
    if (c.braced)
      add(c.key, "{" + fmt::format("{}", fmt::join(names, ", ")) + "}");
    else
      add(c.key, names.empty() ? std::string("{}") : names.front());
  }
  if (a.replicaGroups) add("replica_groups", printReplicaGroups(*a.replicaGroups));
  if (a.channelId) add("channel_id", std::to_string(*a.channelId));
  if (a.customCallTarget) add("custom_call_target", "\"" + *a.customCallTarget + "\"");
  if (a.sharding) add("sharding", *a.sharding);
  if (!a.frontendAttributes.empty()) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : a.frontendAttributes) parts.push_back(k + "=\"" + v + "\"");
    add("frontend_attributes", "{" + fmt::format("{}", fmt::join(parts, ",")) + "}");
  }
  if (!a.metadata.empty()) add("metadata", printMetadata(a.metadata));
  if (a.backendConfig) {
    if (a.backendConfig->kind == BackendConfig::Kind::Braced)
      add("backend_config", a.backendConfig->text);
    else
      add("backend_config", "\"" + a.backendConfig->text + "\"");
  }
  return out;
}

std::string printInstruction(const HloInstruction& inst) {
  std::string out = "%" + inst.name() + " = " + inst.shape().toString() + " ";
  out += opcodeName(inst.opcode());
  out += "(";
  if (inst.opcode() == HloOpcode::Parameter) {
    out += std::to_string(inst.attrs().parameterNumber);
  } else if (inst.opcode() == HloOpcode::Constant && inst.literal()) {
    out += inst.literal()->toString();
  } else {
    for (int64_t i = 0; i < inst.operandCount(); ++i) {
      if (i) out += ", ";
      out += operandText(inst.operand(i));
    }
  }
  out += ")";
  out += printAttributes(inst);
  return out;
}

std::string printComputation(const HloComputation& comp) {
  std::string out;
  if (comp.isEntry()) out += "ENTRY ";
  out += "%" + comp.name() + " " + comp.signatureString() + " {\n";
  for (const HloInstruction* inst : comp.postOrder()) {
    out += "  ";
    if (inst == comp.root()) out += "ROOT ";
    out += printInstruction(*inst);
    out += "\n";
  }
  out += "}\n";
  return out;
}

std::string printModule(const HloModule& module) {
  std::string out = "HloModule " + module.name();
  for (const auto& [k, v] : module.headerAttributes()) out += ", " + k + "=" + v;
  out += "\n";
  for (const auto& c : module.computations()) {
    out += "\n";
    out += printComputation(*c);
  }
  return out;
}

std::string printModules(const std::vector<const HloModule*>& modules) {
  std::string out;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (i) out += "\n// -----\n\n";
    out += printModule(*modules[i]);
  }
  return out;
}

}  // namespace tpusim::hlo
