#include "compiler/hlo/eval/Evaluator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <thread>

#include "compiler/hlo/HloComputation.h"
#include "compiler/hlo/eval/Collectives.h"
#include "compiler/hlo/eval/Convert.h"
#include "compiler/hlo/eval/CustomCalls.h"
#include "compiler/hlo/eval/EvalTypes.h"
#include "compiler/hlo/eval/Interpreter.h"

namespace tpusim::hlo::eval {
namespace {

uint64_t splitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fillRandom(Literal& l, uint64_t& state) {
  if (l.isTuple()) {
    for (Literal& e : l.elements()) fillRandom(e, state);
    return;
  }
  ElemType t = l.type();
  int64_t n = l.numElements();
  if (isFloat(t)) {
    // f64 in [-1, 1), then converted (f64 -> f32 -> bf16/f16, as convert does).
    Literal src = Literal::array(ElemType::F64, l.dims());
    double* d = src.data<double>();
    for (int64_t i = 0; i < n; ++i)
      d[i] = static_cast<double>(splitMix(state) >> 11) * 0x1.0p-52 - 1.0;
    l = convertLiteral(src, t);
    return;
  }
  Literal src = Literal::array(ElemType::S64, l.dims());
  int64_t* d = src.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitMix(state);
    if (t == ElemType::Pred)
      d[i] = static_cast<int64_t>(r >> 63);
    else if (isSignedInt(t))
      d[i] = static_cast<int64_t>(r % 17) - 8;
    else
      d[i] = static_cast<int64_t>(r % 17);
  }
  l = convertLiteral(src, t);
}

bool supportedOpcode(HloOpcode op) {
  switch (op) {
    case HloOpcode::Rng:
    case HloOpcode::RngGetAndUpdateState:
    case HloOpcode::BatchNormGrad:
    case HloOpcode::BatchNormInference:
    case HloOpcode::BatchNormTraining:
    case HloOpcode::Cholesky:
    case HloOpcode::Complex:
    case HloOpcode::Convolution:
    case HloOpcode::DynamicReshape:
    case HloOpcode::Fft:
    case HloOpcode::Imag:
    case HloOpcode::Infeed:
    case HloOpcode::Outfeed:
    case HloOpcode::RaggedAllToAll:
    case HloOpcode::Real:
    case HloOpcode::Recv:
    case HloOpcode::RecvDone:
    case HloOpcode::SelectAndScatter:
    case HloOpcode::Send:
    case HloOpcode::SendDone:
    case HloOpcode::SetDimensionSize:
    case HloOpcode::StochasticConvert:
    case HloOpcode::TopK:
    case HloOpcode::TriangularSolve:
      return false;
    default:
      return true;
  }
}

bool hasElided(const hlo::Literal& l) {
  if (l.elided) return true;
  for (const auto& e : l.elements)
    if (hasElided(e)) return true;
  return false;
}

// 1 + the largest device id any collective of the module names.
int64_t devicesNamed(const HloModule& module) {
  int64_t n = 1;
  for (const auto& comp : module.computations())
    for (const auto& inst : comp->instructions()) {
      if (inst->attrs().replicaGroups)
        for (const auto& g : inst->attrs().replicaGroups->expand())
          for (int64_t id : g) n = std::max(n, id + 1);
      if (const NamedAttr* pairs = inst->findGeneric("source_target_pairs"))
        for (const auto& p : pairs->value.lists)
          for (int64_t id : p) n = std::max(n, id + 1);
    }
  return n;
}

}  // namespace

int64_t replicaCountFor(const HloModule& module, const EvalOptions& options) {
  int64_t n = options.replicas > 0 ? options.replicas
                                   : std::max({int64_t{1}, module.replicaCount(),
                                               module.numPartitions(), devicesNamed(module)});
  if (n > kMaxReplicas)
    throw EvalError(
        fmt::format("{} replicas is too many to evaluate (at most {})", n, kMaxReplicas));
  return n;
}

std::vector<Literal> evaluateReplicated(const HloModule& module,
                                        const std::vector<std::vector<Literal>>& args,
                                        const EvalOptions& options) {
  const HloComputation* entry = module.entry();
  if (!entry) throw EvalError(fmt::format("module {} has no entry computation", module.name()));
  int64_t n = replicaCountFor(module, options);
  if (args.size() != 1 && static_cast<int64_t>(args.size()) != n)
    throw EvalError(fmt::format("{} argument lists for {} replicas", args.size(), n));
  auto argsOf = [&](int64_t r) -> const std::vector<Literal>& {
    return args.size() == 1 ? args[0] : args[static_cast<size_t>(r)];
  };
  auto runOne = [&](int64_t r, Rendezvous* rv) {
    const std::vector<Literal>& a = argsOf(r);
    if (static_cast<int64_t>(a.size()) != entry->parameterCount())
      throw EvalError(fmt::format("the entry computation %{} takes {} parameters but {} were given",
                                  entry->name(), entry->parameterCount(), a.size()));
    std::vector<const Literal*> ptrs;
    for (const Literal& l : a) ptrs.push_back(&l);
    Interpreter interp(module, r, n, rv, options.mxuDotPrecision);
    return interp.run(*entry, ptrs);
  };
  if (n == 1) return {runOne(0, nullptr)};

  Rendezvous rendezvous(n);
  std::vector<Literal> results(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<bool> primary(static_cast<size_t>(n), false);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        results[static_cast<size_t>(r)] = runOne(r, &rendezvous);
      } catch (const std::exception& e) {
        std::string msg = fmt::format("replica {}: {}", r, e.what());
        errors[static_cast<size_t>(r)] = msg;
        rendezvous.abort(msg);
      }
    });
  }
  for (auto& t : threads) t.join();
  // Report the first failure that is not another replica's abort echoed back.
  std::string first;
  for (const std::string& e : errors) {
    if (e.empty()) continue;
    if (first.empty()) first = e;
    if (e.find(": replica ") == std::string::npos) {
      first = e;
      break;
    }
  }
  if (!first.empty()) throw EvalError(first);
  return results;
}

Literal evaluate(const HloModule& module, const std::vector<Literal>& args) {
  EvalOptions o;
  o.replicas = 1;
  return std::move(evaluateReplicated(module, {args}, o)[0]);
}

uint64_t parameterSeed(uint64_t seed, int64_t replica, int64_t param) {
  uint64_t s = seed;
  uint64_t a = splitMix(s) ^ static_cast<uint64_t>(replica) * 0x632BE59BD9B4E019ull;
  uint64_t b = splitMix(a) ^ static_cast<uint64_t>(param) * 0xD6E8FEB86659FD93ull;
  return splitMix(b);
}

Literal randomLiteral(const Shape& shape, uint64_t seed) {
  Literal l = zerosOf(shape, "random input");
  uint64_t state = seed;
  fillRandom(l, state);
  return l;
}

std::vector<std::string> unsupportedInstructions(const HloModule& module) {
  // Constants whose value the text elides ({...}) count as unsupported too.
  std::vector<std::string> out;
  std::set<const HloComputation*> seen;
  std::vector<const HloComputation*> work;
  if (module.entry()) work.push_back(module.entry());
  while (!work.empty()) {
    const HloComputation* c = work.back();
    work.pop_back();
    if (!seen.insert(c).second) continue;
    for (const auto& inst : c->instructions()) {
      bool ok = supportedOpcode(inst->opcode());
      if (inst->opcode() == HloOpcode::CustomCall)
        ok = static_cast<bool>(findCustomCall(inst->attrs().customCallTarget.value_or("")));
      if (inst->opcode() == HloOpcode::Constant && inst->literal() && hasElided(*inst->literal()))
        ok = false;
      if (!ok && inst->opcode() == HloOpcode::CustomCall)
        out.push_back(fmt::format("%{} (custom-call target \"{}\"; the evaluator knows: {})",
                                  inst->name(), inst->attrs().customCallTarget.value_or(""),
                                  fmt::join(registeredCustomCalls(), ", ")));
      else if (!ok)
        out.push_back(fmt::format("%{} ({})", inst->name(), opcodeName(inst->opcode())));
      for (const HloComputation* callee : inst->calledComputations())
        if (callee) work.push_back(callee);
    }
  }
  return out;
}

}  // namespace tpusim::hlo::eval
