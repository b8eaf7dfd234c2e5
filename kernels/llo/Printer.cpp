#include "kernels/llo/Printer.h"

#include <fmt/format.h>

#include "isa/support/Numerics.h"

namespace tpusim::kernels::llo {
namespace {

// Values are printed for every op of every kernel (the kernel cache's key
// prints each kernel): appended in place, without a format call per value.
void appendVal(const Value* v, std::string& s) {
  if (!v) {
    s += "<null>";
    return;
  }
  s += '%';
  s += std::to_string(v->id);
}

std::string val(const Value* v) {
  std::string s;
  appendVal(v, s);
  return s;
}

void appendValList(const std::vector<Value*>& vs, std::string& s, size_t from = 0,
                   size_t to = SIZE_MAX) {
  for (size_t i = from; i < vs.size() && i < to; ++i) {
    if (i > from) s += ", ";
    appendVal(vs[i], s);
  }
}

std::string valList(const std::vector<Value*>& vs, size_t from = 0, size_t to = SIZE_MAX) {
  std::string s;
  appendValList(vs, s, from, to);
  return s;
}

std::string argList(const std::vector<Value*>& args) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i) {
    s += fmt::format("{}{}: {}", i ? ", " : "", val(args[i]), args[i]->type.str());
    if (!args[i]->hint.empty()) s += " \"" + args[i]->hint + "\"";
  }
  return s;
}

std::string viewStr(const ViewRange& v) {
  return fmt::format("{}[{}]", val(v.ref), valList(v.indices));
}

// A matmul's sum epilogue: " + a1 + a2" after (1) or before (2) the dot.
std::string addendsStr(const Op& op, const std::vector<ViewRange>& v) {
  const size_t first = matmulFirstAddend(op);
  if (v.size() <= first) return "";
  std::string s;
  for (size_t i = first; i < v.size(); ++i) s += (i == first ? "" : " + ") + viewStr(v[i]);
  return op.ints.size() > 8 && op.ints[8] == 2 ? " then (" + s + ") + dot"
                                               : " then dot + (" + s + ")";
}

std::string intList(const std::vector<int64_t>& xs) { return shapeStr(xs); }

void printBlock(const Block& b, int indent, std::string& out);

std::string body(const Op& op) {
  const auto& o = op.operands;
  auto I = [&](size_t i) { return i < op.ints.size() ? op.ints[i] : 0; };
  switch (op.kind) {
    case OpKind::SConst:
      return fmt::format("sconst {}", I(0));
    case OpKind::SBinary:
      return fmt::format("sbin.{} {}", scalarBinName(ScalarBin(I(0))), valList(o));
    case OpKind::SSelect:
      return fmt::format("sselect {}", valList(o));
    case OpKind::ProgramId:
      return fmt::format("program_id {}", I(0));
    case OpKind::NumPrograms:
      return fmt::format("num_programs {}", I(0));
    case OpKind::DeviceId:
      return "device_id";
    case OpKind::NumDevices:
      return "num_devices";
    case OpKind::SLoad:
      return fmt::format("sload {}[{}]", val(o[0]), valList(o, 1));
    case OpKind::SStore:
      return fmt::format("sstore {}, {}[{}]", val(o[0]), val(o[1]), valList(o, 2));
    case OpKind::VLoad:
      return fmt::format("vload {}[{}] stride={} sublanes=0x{:02x}", val(o[0]), valList(o, 1), I(0),
                         I(1));
    case OpKind::VStore:
      return fmt::format("vstore {}, {}[{}] sublanes=0x{:02x} lanes={}", val(o[0]), val(o[1]),
                         valList(o, 2), I(0), I(1));
    case OpKind::VConst: {
      uint32_t bits = static_cast<uint32_t>(I(0));
      if (op.dtype == DType::F32) return fmt::format("vconst {} (0x{:08x})", floatOf(bits), bits);
      return fmt::format("vconst 0x{:08x}", bits);
    }
    case OpKind::VSplat:
      return fmt::format("vsplat {}", val(o[0]));
    case OpKind::VIota:
      return fmt::format("viota {}", I(0) == 0 ? "lane" : "sublane");
    case OpKind::VBinary:
      return fmt::format("vbin.{} {}", vecBinName(VecBin(I(0))), valList(o));
    case OpKind::VUnary:
      return fmt::format("vun.{} {}", vecUnName(VecUn(I(0))), valList(o));
    case OpKind::VCmp:
      return fmt::format("vcmp.{} {}", cmpName(Cmp(I(0))), valList(o));
    case OpKind::VSelect:
      return fmt::format("vselect {}", valList(o));
    case OpKind::MaskBinary:
      return fmt::format("mbin.{} {}", I(0) == 0 ? "and" : "or", valList(o));
    case OpKind::MaskNot:
      return fmt::format("mnot {}", valList(o));
    case OpKind::VCast:
      return fmt::format("{} {}", !op.ints.empty() && op.ints[0] == 1 ? "vbitcast" : "vcast",
                         valList(o));
    case OpKind::VReduceLanes:
      return fmt::format("vreduce_lanes.{} {}", reduceName(Reduce(I(0))), valList(o));
    case OpKind::VRotSublanes:
      return fmt::format("vrot_sublanes {}, {}", valList(o), I(0));
    case OpKind::VRotLanes:
      return fmt::format("vrot_lanes {}, {}", valList(o), I(0));
    case OpKind::VLanePerm:
      return fmt::format("vlane_perm {}", valList(o));
    case OpKind::AllocVmem:
      return "alloc";
    case OpKind::Matmul: {
      auto v = opViews(op);
      return fmt::format("matmul {} = {} x {}{} M={} N={} K={}{}{}{}{}{}{}", viewStr(v[0]),
                         viewStr(v[1]), viewStr(v[2]),
                         matmulScaled(op) ? " * " + viewStr(v[3]) : std::string(), I(0), I(1), I(2),
                         I(3) ? " lhs^T" : "", I(4) ? " rhs^T" : "",
                         I(5) == 1   ? " accumulate"
                         : I(5) == 2 ? " continue"
                                     : "",
                         I(6) == 1   ? " resident"
                         : I(6) == 2 ? " resident-store"
                                     : "",
                         I(7) == 1   ? " latched"
                         : I(7) == 2 ? " latched-earlier"
                                     : "",
                         addendsStr(op, v)) +
             (I(10) > 1 ? fmt::format(" lhs-diagonal={}", I(10)) : std::string());
    }
    case OpKind::MxuStart:
      return fmt::format("mxu_start {} M={} N={} K={} set={}", viewStr(opViews(op)[0]), I(0), I(1),
                         I(2), I(3));
    case OpKind::MxuFinish:
      return fmt::format("mxu_finish {} M={} N={} K={} set={}{}", viewStr(opViews(op)[0]), I(0),
                         I(1), I(2), I(3), I(4) ? " accumulate" : "");
    case OpKind::MxuLatch:
      return fmt::format("mxu_latch {} K={} N={}", viewStr(opViews(op)[0]), I(0), I(1));
    case OpKind::DmaStart:
    case OpKind::DmaWait: {
      auto v = opViews(op);
      return fmt::format("{} {} -> {} sizes={} sem={}", opKindName(op.kind), viewStr(v[0]),
                         viewStr(v[1]), intList(op.ints), viewStr(v[2]));
    }
    case OpKind::RemoteDmaStart: {
      auto v = opViews(op);
      return fmt::format("remote_dma_start {} -> device {} {} sizes={} send={} recv={}",
                         viewStr(v[0]), val(o[0]), viewStr(v[1]), intList(op.ints), viewStr(v[2]),
                         viewStr(v[3]));
    }
    case OpKind::SemSignal: {
      auto v = opViews(op);
      return I(1) == 1
                 ? fmt::format("sem_signal {} += {} on device {}", viewStr(v[0]), I(0), val(o[0]))
                 : fmt::format("sem_signal {} += {}", viewStr(v[0]), I(0));
    }
    case OpKind::SemWait:
      return fmt::format("sem_wait {} >= {}", viewStr(opViews(op)[0]), I(0));
    case OpKind::For: {
      std::string s = fmt::format("for {} = {} to {} step {}", val(op.regions[0].args[0]),
                                  val(o[0]), val(o[1]), I(0));
      for (size_t k = 2; k < o.size(); ++k)
        s += fmt::format("{}{} = {}", k == 2 ? " carry(" : ", ", val(op.regions[0].args[k - 1]),
                         val(o[k]));
      return o.size() > 2 ? s + ")" : s;
    }
    case OpKind::Yield:
      return fmt::format("yield {}", valList(o));
    case OpKind::If:
      return fmt::format("if {}", val(o[0]));
    case OpKind::Return:
      return fmt::format("return {}", valList(o));
  }
  return "?";
}

void printOpInto(const Op& op, int indent, std::string& out) {
  out.append(size_t(indent), ' ');
  if (!op.results.empty()) {
    appendValList(op.results, out);
    out += " = ";
  }
  out += body(op);
  if (!op.results.empty() && op.kind != OpKind::SConst && op.kind != OpKind::SBinary)
    out += " : " + op.results[0]->type.str();
  if (op.kind == OpKind::For || op.kind == OpKind::If) {
    out += " {\n";
    printBlock(op.regions[0], indent + 2, out);
    out += std::string(indent, ' ') + "}";
    if (op.regions.size() > 1) {
      out += " else {\n";
      printBlock(op.regions[1], indent + 2, out);
      out += std::string(indent, ' ') + "}";
    }
  }
}

void printBlock(const Block& b, int indent, std::string& out) {
  for (const auto& op : b.ops) {
    printOpInto(*op, indent, out);
    out += "\n";
  }
}

}  // namespace

std::string printOp(const Op& op) {
  std::string s;
  printOpInto(op, 0, s);
  return s;
}

std::string printFunction(const Function& fn) {
  std::string s = fmt::format("func @{}({}) {{\n", fn.name, argList(fn.body.args));
  printBlock(fn.body, 2, s);
  return s + "}\n";
}

std::string printKernel(const Kernel& k) {
  std::string s = fmt::format("kernel @{} grid={} semantics=[", k.name, intList(k.grid));
  for (size_t i = 0; i < k.semantics.size(); ++i)
    s += fmt::format("{}{}", i ? "," : "", dimSemanticsName(k.semantics[i]));
  s += fmt::format("] scalar_prefetch={}", k.numScalarPrefetch);
  // Only when set: it changes the code (and so the kernel cache's key).
  if (k.scheduleLookahead) s += fmt::format(" schedule_lookahead={}", k.scheduleLookahead);
  if (k.tailStepsWithoutInputs)
    s += fmt::format(" tail_steps_without_inputs={}", k.tailStepsWithoutInputs);
  s += "\n";
  auto mapping = [&](const char* what, const ArrayOperand& a, const BlockMapping* m) {
    s += fmt::format("  {} \"{}\": {}{}", what, a.name, isa::dtypeName(a.dtype), shapeStr(a.shape));
    if (!a.strides.empty()) s += fmt::format(" strides={}", intList(a.strides));
    if (!m) {
      s += " prefetch smem\n";
      return;
    }
    s += fmt::format(" {}", memSpaceName(m->space));
    if (m->space == MemSpace::Vmem) {
      s += fmt::format(" block={} buffers={} ", intList(m->blockShape), m->buffers);
      std::string fn = printFunction(*m->indexMap);
      // Index maps print inline, indented under their operand.
      std::string indented;
      for (size_t i = 0; i < fn.size(); ++i) {
        indented += fn[i];
        if (fn[i] == '\n' && i + 1 < fn.size()) indented += "    ";
      }
      s += indented;
    } else {
      s += "\n";
    }
  };
  size_t mapIndex = 0;
  for (size_t i = 0; i < k.inputs.size(); ++i)
    mapping("in", k.inputs[i], int(i) < k.numScalarPrefetch ? nullptr : &k.inMaps[mapIndex++]);
  for (size_t i = 0; i < k.outputs.size(); ++i) mapping("out", k.outputs[i], &k.outMaps[i]);
  for (const Type& t : k.scratch) s += "  scratch " + t.str() + "\n";
  for (auto [in, out] : k.aliases) s += fmt::format("  alias in {} -> out {}\n", in, out);
  return s + printFunction(*k.body);
}

}  // namespace tpusim::kernels::llo
