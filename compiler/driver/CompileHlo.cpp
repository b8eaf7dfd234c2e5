#include "compiler/driver/CompileHlo.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/TargetDescription.h"
#include "compiler/lower/buffers/InputOutputAlias.h"
#include "compiler/lower/collectives/SpmdPlan.h"
#include "compiler/lower/module/Names.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::driver {

namespace {

// The compiler's and the code generator's views of one chip.
struct ChipViews {
  explicit ChipViews(const target::ChipConfig& chip)
      : target(lower::describeTarget(chip)),
        codegen(kernels::codegen::TargetInfo::fromChip(chip)) {}
  lower::TargetDescription target;
  kernels::codegen::TargetInfo codegen;
};

// Where each instruction of the input was (line in the HLO file), by name:
// the passes make new instructions (fusions) whose members keep the names.
// Names need only be unique within one computation (a reducer's `%s` and an
// entry's `%s` may both exist), so every place a name occurs is kept.
struct SourcePlace {
  std::string opcode;
  bool inEntry = false;
  int line = 0;
};
using SourceLines = std::multimap<std::string, SourcePlace>;

SourceLines sourceLines(const hlo::HloModule& m) {
  SourceLines lines;
  for (const auto& c : m.computations())
    for (const auto& i : c->instructions())
      if (i->sourceLine() > 0)
        lines.emplace(i->name(), SourcePlace{std::string(hlo::opcodeName(i->opcode())),
                                             c.get() == m.entry(), i->sourceLine()});
  return lines;
}

// The line of `name` where it occurs once; among several, the one with the
// failing op's opcode, then the one in the entry computation.
int lineOfName(const SourceLines& lines, const std::string& name, const std::string& opcode) {
  int best = 0, bestScore = -1;
  auto [from, to] = lines.equal_range(name);
  for (auto it = from; it != to; ++it) {
    int score = (it->second.opcode == opcode ? 2 : 0) + (it->second.inEntry ? 1 : 0);
    if (score > bestScore) best = it->second.line, bestScore = score;
  }
  return best;
}

// The input line of `name`, or of its fused root (then another fused member).
int sourceLineOf(const hlo::HloModule& m, const SourceLines& lines, const std::string& name,
                 const std::string& opcode) {
  if (int line = lineOfName(lines, name, opcode)) return line;
  for (const auto& c : m.computations())
    if (const hlo::HloInstruction* i = c->findInstruction(name))
      for (const hlo::HloComputation* called : i->calledComputations()) {
        if (!called) continue;
        if (called->root())
          if (int line = lineOfName(lines, called->root()->name(),
                                    std::string(hlo::opcodeName(called->root()->opcode()))))
            return line;
        for (const auto& member : called->instructions())
          if (int line =
                  lineOfName(lines, member->name(), std::string(hlo::opcodeName(member->opcode()))))
            return line;
      }
  return 0;
}

// The array leaves of `shape`, depth-first, with their tuple index paths.
void arrayLeaves(const hlo::Shape& shape, std::vector<int64_t>& path,
                 std::vector<std::pair<std::vector<int64_t>, const hlo::Shape*>>& out) {
  if (shape.isTuple()) {
    for (size_t i = 0; i < shape.tupleShapes.size(); ++i) {
      path.push_back(int64_t(i));
      arrayLeaves(shape.tupleShapes[i], path, out);
      path.pop_back();
    }
  } else if (shape.isArray()) {
    out.emplace_back(path, &shape);
  }
}

std::vector<std::pair<std::vector<int64_t>, const hlo::Shape*>> arrayLeaves(
    const hlo::Shape& shape) {
  std::vector<std::pair<std::vector<int64_t>, const hlo::Shape*>> out;
  std::vector<int64_t> path;
  arrayLeaves(shape, path, out);
  return out;
}

isa::SignatureLeaf leafFor(const std::vector<int64_t>& index, const hlo::Shape& shape,
                           const isa::BufferDesc& buffer, const std::string& what) {
  std::optional<isa::DType> dt = lower::bufferDType(shape.type);
  if (!dt || *dt != buffer.dtype || shape.dims != buffer.shape)
    throw std::runtime_error(
        fmt::format("{} is {}, but its buffer '{}' is {}{}", what, shape.toString(false),
                    buffer.name, isa::dtypeName(buffer.dtype), fmt::join(buffer.shape, ",")));
  return {index, buffer.name, buffer.shape, buffer.dtype};
}

std::string indexText(const std::vector<int64_t>& index) {
  return fmt::format("{{{}}}", fmt::join(index, ","));
}

// Zero-size arrays (a 0 in the shape) hold no data, and the back end's tiling
// and loops are built for at least one element: one clear error instead.
void rejectZeroSizeArrays(const hlo::HloModule& module) {
  for (const auto& c : module.computations())
    for (const auto& inst : c->instructions())
      for (const auto& [index, shape] : arrayLeaves(inst->shape()))
        if (shape->elementCount() == 0)
          throw lower::CannotLower::of(
              *inst, fmt::format("zero-size array {}: tpuc compiles arrays of at least one "
                                 "element (tpu-opt --evaluate evaluates the module)",
                                 shape->toString(false)));
}

}  // namespace

isa::ProgramSignature entrySignature(const hlo::HloModule& module, const isa::Program& program) {
  const hlo::HloComputation* entry = module.entry();
  if (!entry || !entry->root())
    throw std::runtime_error(fmt::format("module '{}' has no entry", module.name()));
  isa::ProgramSignature s;
  s.module = module.name();
  std::vector<const isa::BufferDesc*> inputs;
  std::map<std::string, const isa::BufferDesc*> outputs;
  for (const isa::BufferDesc& b : program.buffers) {
    if (b.role == isa::BufferRole::Input) inputs.push_back(&b);
    if (b.role == isa::BufferRole::Output) outputs[b.name] = &b;
  }
  // Inputs are in the table in parameter order, tuple parameters leaf by leaf.
  size_t input = 0;
  for (int64_t n = 0; n < entry->parameterCount(); ++n) {
    const hlo::HloInstruction* p = entry->parameter(n);
    if (!p) throw std::runtime_error(fmt::format("the entry has no parameter({})", n));
    isa::SignatureParameter param;
    param.name = p->name();
    param.type = p->shape().toString(false);
    for (const auto& [index, shape] : arrayLeaves(p->shape())) {
      std::string what = fmt::format("parameter {} (%{}) leaf {}", n, p->name(), indexText(index));
      if (input >= inputs.size()) throw std::runtime_error(what + " has no input buffer");
      param.leaves.push_back(leafFor(index, *shape, *inputs[input++], what));
    }
    s.parameters.push_back(std::move(param));
  }
  if (input != inputs.size())
    throw std::runtime_error(
        fmt::format("the program has {} input buffers, the entry's "
                    "parameters {} arrays",
                    inputs.size(), input));
  const hlo::Shape& result = entry->root()->shape();
  s.resultType = result.toString(false);
  for (const auto& [index, shape] : arrayLeaves(result)) {
    auto it = outputs.find(lower::outputBufferName(index));
    if (it == outputs.end()) continue;  // a leaf the program does not write
    s.results.push_back(
        leafFor(index, *shape, *it->second, fmt::format("result leaf {}", indexText(index))));
  }
  for (const lower::InputOutputAlias& a : lower::inputOutputAliases(module))
    s.aliases.push_back({a.outputIndex, a.parameter, {}});
  return s;
}

CompileResult compileHloFile(const std::string& hloPath, const target::ChipConfig& chip,
                             const CompileOptions& options) {
  CompileResult out;
  auto fail = [&](const std::string& message) {
    out.error = "tpuc: " + message;
    return std::move(out);
  };
  hlo::ParseResult parsed = hlo::parseHloFile(hloPath);
  if (!parsed.ok()) {
    out.error = parsed.error;
    return out;
  }
  size_t chosen = 0;
  if (!options.module.empty() || parsed.modules.size() != 1) {
    std::vector<std::string> names;
    for (const auto& m : parsed.modules) names.push_back(m->name());
    size_t found = names.size();
    for (size_t k = 0; k < names.size(); ++k)
      if (names[k] == options.module || std::to_string(k) == options.module) found = k;
    if (found == names.size())
      return fail(fmt::format(
          "error: {} holds {} module(s) ({}); {}", hloPath, names.size(), fmt::join(names, ", "),
          options.module.empty() ? "choose one with --module N|NAME"
                                 : fmt::format("--module {} names none of them", options.module)));
    chosen = found;
  }
  hlo::HloModule& module = *parsed.modules[chosen];
  hlo::VerifierResult v = hlo::verifyModule(module);
  if (!v.ok()) {
    out.error = v.message();
    return out;
  }
  const SourceLines lines = sourceLines(module);
  try {
    rejectZeroSizeArrays(module);
    ChipViews views(chip);
    driver::ModuleLoweringOptions lowering;
    lowering.passes = options.passes;
    lowering.dumpDir = options.dumpDir;
    lowering.lower.kernelCache = options.kernelCache;
    lowering.lower.verifyKernelCache = options.verifyKernelCache;
    lowering.lower.shareCode = options.shareCode;
    lowering.lower.crossKernelPrefetch = options.crossKernelPrefetch;
    lowering.lower.deferWriteBack = options.deferWriteBack;
    lowering.lower.packedWeights = options.packedWeights;
    out.lowered = driver::compileModule(module, views.target, views.codegen, lowering);
    out.lowered.program.signature = entrySignature(module, out.lowered.program);
    out.lowered.program.hasSignature = true;
    out.lowered.program.signature.devices = lower::spmdDeviceCount(module);
    for (const lower::LoweredOp& op : out.lowered.ops)
      for (const std::string& note : op.notes) {
        int line = sourceLineOf(module, lines, op.instruction, "custom-call");
        std::string where = line > 0 ? fmt::format("{}:{}", hloPath, line) : hloPath;
        out.notes.push_back(fmt::format("{}: note: %{}: {}", where, op.instruction, note));
      }
    out.module = std::move(parsed.modules[chosen]);
  } catch (const lower::CannotLower& e) {
    int line = sourceLineOf(module, lines, e.instruction(), e.opcode());
    std::string where = line > 0 ? fmt::format("{}:{}", hloPath, line) : hloPath;
    out.error = fmt::format("{}: error: {}", where, e.what());
  } catch (const lower::TargetError& e) {
    std::string m = e.what();
    return fail(
        m.rfind("error: ", 0) == 0 || m.find(": error: ") != std::string::npos ? m : "error: " + m);
  } catch (const kernels::codegen::TargetError& e) {
    return fail(fmt::format("error: {}", e.what()));
  } catch (const lower::ModuleLoweringError& e) {
    return fail(fmt::format("error: {}: {}", hloPath, e.what()));
  } catch (const std::exception& e) {
    return fail(fmt::format("error: {}: {}", hloPath, e.what()));
  }
  return out;
}

}  // namespace tpusim::driver
