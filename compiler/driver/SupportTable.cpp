#include "compiler/driver/SupportTable.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "compiler/driver/ModuleLoweringPipeline.h"
#include "compiler/hlo/HloOpcode.h"
#include "compiler/hlo/HloParser.h"
#include "compiler/hlo/HloVerifier.h"
#include "compiler/lower/CannotLower.h"
#include "compiler/lower/TargetDescription.h"
#include "kernels/codegen/TargetInfo.h"

namespace tpusim::driver {
namespace {

using hlo::HloOpcode;

const char* const kTypes[] = {"pred", "s8",  "s16", "s32",  "s64", "u8", "u16",
                              "u32",  "u64", "f16", "bf16", "f32", "f64"};

// The scalar computations a probe may call ($T is the element type).
const char* kCalled = R"(
add {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT r = $T[] add(a, b)
}
lt {
  a = $T[] parameter(0)
  b = $T[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT
}
)";

// The entry of a probe module using `op` once on $T values, or "" if there is none.
std::string probeEntry(HloOpcode op) {
  const std::string name(hlo::opcodeName(op));
  const std::string x = "  p0 = $T[8,128] parameter(0)\n";
  const std::string y = x + "  p1 = $T[8,128] parameter(1)\n";
  switch (op) {
    case HloOpcode::Compare:
      return y + "  ROOT r = pred[8,128] compare(p0, p1), direction=LT\n";
    case HloOpcode::IsFinite:
      return x + "  ROOT r = pred[8,128] is-finite(p0)\n";
    case HloOpcode::Convert:
      return x + "  ROOT r = f32[8,128] convert(p0)\n";
    case HloOpcode::ReducePrecision:
      return x + "  ROOT r = $T[8,128] reduce-precision(p0), exponent_bits=5, mantissa_bits=10\n";
    case HloOpcode::Select:
      return y + "  p = pred[8,128] parameter(2)\n  ROOT r = $T[8,128] select(p, p0, p1)\n";
    case HloOpcode::Clamp:
      return y + "  ROOT r = $T[8,128] clamp(p0, p1, p0)\n";
    case HloOpcode::Broadcast:
      return "  p0 = $T[128] parameter(0)\n"
             "  ROOT r = $T[8,128] broadcast(p0), dimensions={1}\n";
    case HloOpcode::Reshape:
      return x + "  ROOT r = $T[1024] reshape(p0)\n";
    case HloOpcode::Transpose:
      return x + "  ROOT r = $T[128,8] transpose(p0), dimensions={1,0}\n";
    case HloOpcode::Slice:
      return x + "  ROOT r = $T[4,64] slice(p0), slice={[0:4], [0:64]}\n";
    case HloOpcode::Concatenate:
      return y + "  ROOT r = $T[16,128] concatenate(p0, p1), dimensions={0}\n";
    case HloOpcode::Pad:
      return x + "  z = $T[] parameter(1)\n  ROOT r = $T[10,130] pad(p0, z), padding=1_1x1_1\n";
    case HloOpcode::Reverse:
      return x + "  ROOT r = $T[8,128] reverse(p0), dimensions={1}\n";
    case HloOpcode::Iota:
      return "  ROOT r = $T[8,128] iota(), iota_dimension=1\n";
    case HloOpcode::Reduce:
      return x +
             "  z = $T[] parameter(1)\n"
             "  ROOT r = $T[8] reduce(p0, z), dimensions={1}, to_apply=add\n";
    case HloOpcode::Dot:
      return "  p0 = $T[8,128] parameter(0)\n  p1 = $T[128,128] parameter(1)\n"
             "  ROOT r = $T[8,128] dot(p0, p1), lhs_contracting_dims={1}, "
             "rhs_contracting_dims={0}\n";
    case HloOpcode::DynamicSlice:
      return x +
             "  i = s32[] parameter(1)\n"
             "  ROOT r = $T[4,64] dynamic-slice(p0, i, i), dynamic_slice_sizes={4,64}\n";
    case HloOpcode::DynamicUpdateSlice:
      return x +
             "  u = $T[4,64] parameter(1)\n  i = s32[] parameter(2)\n"
             "  ROOT r = $T[8,128] dynamic-update-slice(p0, u, i, i)\n";
    case HloOpcode::Gather:
      return x +
             "  i = s32[4,1] parameter(1)\n"
             "  ROOT r = $T[4,128] gather(p0, i), offset_dims={1}, collapsed_slice_dims={0}, "
             "start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}\n";
    case HloOpcode::Scatter:
      return x +
             "  i = s32[4,1] parameter(1)\n  u = $T[4,128] parameter(2)\n"
             "  ROOT r = $T[8,128] scatter(p0, i, u), update_window_dims={1}, "
             "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
             "to_apply=add\n";
    case HloOpcode::Sort:
      return x + "  ROOT r = $T[8,128] sort(p0), dimensions={1}, to_apply=lt\n";
    case HloOpcode::AllReduce:
      return x + "  ROOT r = $T[8,128] all-reduce(p0), replica_groups={}, to_apply=add\n";
    case HloOpcode::RngBitGenerator:
      return "  s = u64[2] parameter(0)\n"
             "  ROOT r = (u64[2], $T[8,128]) rng-bit-generator(s), algorithm=rng_default\n";
    default:
      break;
  }
  if (op == HloOpcode::Complex || op == HloOpcode::StochasticConvert) return "";
  if (hlo::isElementwiseUnary(op)) return x + fmt::format("  ROOT r = $T[8,128] {}(p0)\n", name);
  if (hlo::isElementwiseBinary(op))
    return y + fmt::format("  ROOT r = $T[8,128] {}(p0, p1)\n", name);
  return "";
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// A reason on one line, without source locations of the compiler itself
// ("RegionLowering.cpp:446: "), which would make the table change with the code's layout.
// (A hand-written scan rather than std::regex: GCC 12's <regex> trips
// -Wmaybe-uninitialized in the sanitizer build, which CI builds with -Werror.)
std::string oneLine(const std::string& text) {
  auto isLetter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  // Length of "Name.cpp:123: " or "Name.h:7: " starting at `at` (letters from
  // `at` on), or 0.
  auto locationAt = [&](size_t at) -> size_t {
    size_t i = at;
    while (i < text.size() && isLetter(text[i])) ++i;
    if (i == at || i >= text.size() || text[i] != '.') return 0;
    ++i;
    if (text.compare(i, 4, "cpp:") == 0)
      i += 4;
    else if (text.compare(i, 2, "h:") == 0)
      i += 2;
    else
      return 0;
    size_t digits = i;
    while (i < text.size() && isDigit(text[i])) ++i;
    if (i == digits || text.compare(i, 2, ": ") != 0) return 0;
    return i + 2 - at;
  };
  std::string s;
  for (size_t i = 0; i < text.size();) {
    // A location starts at a letter that does not continue a word.
    if (isLetter(text[i]) && (i == 0 || !isLetter(text[i - 1])))
      if (size_t n = locationAt(i)) {
        i += n;
        continue;
      }
    s += text[i] == '\n' ? ' ' : text[i];
    ++i;
  }
  return s;
}

struct Cell {
  std::string mark;    // yes / no / n/a
  std::string reason;  // no: the cannot-lower reason
  std::string kinds;   // yes: how the instruction was lowered
};

Cell probe(const std::string& entry, const std::string& type,
           const lower::TargetDescription& target, const kernels::codegen::TargetInfo& codegen) {
  std::string text = replaceAll(
      "HloModule probe\n" + std::string(kCalled) + "\nENTRY main {\n" + entry + "}\n", "$T", type);
  std::string error;
  std::unique_ptr<hlo::HloModule> m = hlo::parseHloModule(text, &error);
  if (!m || !hlo::verifyModule(*m).ok()) return {"n/a", "", ""};
  try {
    lower::LoweredModule lowered = compileModule(*m, target, codegen);
    std::set<std::string> kinds;
    for (const lower::LoweredOp& o : lowered.ops) kinds.insert(o.kind);
    std::string k;
    for (const std::string& s : kinds) k += (k.empty() ? "" : ", ") + s;
    return {"yes", "", k.empty() ? "nothing" : k};
  } catch (const lower::CannotLower& e) {
    return {"no", oneLine(e.reason()), ""};
  } catch (const std::exception& e) {
    return {"no", oneLine(e.what()), ""};
  }
}

}  // namespace

std::string supportTableMarkdown(const target::ChipConfig& chip) {
  const lower::TargetDescription target = lower::describeTarget(chip);
  const kernels::codegen::TargetInfo codegen = kernels::codegen::TargetInfo::fromChip(chip);
  std::string out = "| opcode | lowered as |";
  std::string rule = "|---|---|";
  for (const char* t : kTypes) {
    out += fmt::format(" {} |", t);
    rule += "---|";
  }
  out += "\n" + rule + "\n";
  // reason -> (opcode -> types), for the list under the table.
  std::map<std::string, std::map<std::string, std::vector<std::string>>> reasons;
  std::vector<std::string> unprobed;
  for (int i = 0; i < hlo::opcodeCount(); ++i) {
    HloOpcode op = HloOpcode(i);
    const std::string name(hlo::opcodeName(op));
    std::string entry = probeEntry(op);
    if (entry.empty()) {
      unprobed.push_back("`" + name + "`");
      continue;
    }
    std::string row, how;
    for (const char* t : kTypes) {
      Cell c = probe(entry, t, target, codegen);
      row += fmt::format(" {} |", c.mark);
      if (c.mark == "no") reasons[c.reason][name].push_back(t);
      // How it lowers: the f32 probe's way, or the first that does something.
      if (c.mark == "yes" &&
          (how.empty() || how == "nothing" || (std::string(t) == "f32" && c.kinds != "nothing")))
        how = c.kinds;
    }
    out += fmt::format("| `{}` | {} |{}\n", name, how.empty() ? "-" : how, row);
  }
  out += "\nWhy tpuc refuses the cells marked no:\n\n";
  for (const auto& [reason, ops] : reasons) {
    std::string where;
    for (const auto& [name, types] : ops) {
      std::string ts;
      for (const std::string& t : types) ts += (ts.empty() ? "" : " ") + t;
      where += fmt::format("{}`{}` ({})", where.empty() ? "" : ", ", name, ts);
    }
    out += fmt::format("- {}: {}\n", reason, where);
  }
  out +=
      "\nNot probed (an opcode that needs other instructions or computations around it; "
      "see the lowering table above): ";
  for (size_t i = 0; i < unprobed.size(); ++i) out += (i ? ", " : "") + unprobed[i];
  out += ".\n";
  return out;
}

}  // namespace tpusim::driver
