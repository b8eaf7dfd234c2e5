#include "isa/target/PresetDoc.h"

#include <fmt/format.h>

#include <cmath>

#include "isa/target/FieldList.h"

namespace tpusim::target {
namespace {

std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// "17179869184" bytes -> "17179869184 (16 GiB)": the raw value stays exact.
std::string withScale(const FieldInfo& f) {
  if (f.type != FieldType::Int && f.type != FieldType::Double) return f.value;
  double v = std::stod(f.value);
  if (f.unit == "bytes" && v >= 1024) {
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double scaled = v;
    int u = -1;
    while (scaled >= 1024 && u < 3 && std::fmod(scaled, 1024) == 0) {
      scaled /= 1024;
      ++u;
    }
    if (u >= 0) return fmt::format("{} ({} {})", f.value, formatDouble(scaled), units[u]);
    return f.value;
  }
  if ((f.unit == "Hz" || f.unit == "B/s") && v >= 1e6) {
    const char* prefixes[] = {"M", "G", "T"};
    int p = v >= 1e12 ? 2 : v >= 1e9 ? 1 : 0;
    double scaled = v / std::pow(1000.0, p + 2);
    return fmt::format("{} ({:.4g} {}{})", f.value, scaled, prefixes[p], f.unit);
  }
  return f.value;
}

std::string limits(const FieldInfo& f) {
  if (f.range.min > f.range.max) return "";
  return fmt::format("{} … {}", formatDouble(f.range.min), formatDouble(f.range.max));
}

}  // namespace

std::string presetsMarkdown(const std::vector<ChipConfig>& presets) {
  std::string md;
  auto line = [&](const std::string& s) { md += s + "\n"; };
  line("# Chip presets");
  line("");
  line(fmt::format(
      "<!-- Generated from isa/target/*.h and sim/chips/*.json by tpusim-config --doc; do not "
      "edit. Regenerate with: {} -->",
      kPresetDocCommand));
  line("");
  line(
      "A chip is described by one JSON file in `sim/chips/`. Tools take `--chip NAME` (a preset "
      "name, looked up in `$TPUSIM_CHIPS_DIR`, then `sim/chips/`) or `--chip path/to/chip.json`, "
      "and `--set section.field=value` to override single fields (the value is parsed by the "
      "field's type and checked against its limits).");
  line("");
  line(
      "A preset lists every field below and, in `\"sources\"`, where each value comes from: "
      "a public source (GC: the Google Cloud TPU documentation, system-architecture pages; SB: "
      "\"How to Scale Your Model\", the JAX scaling book, TPU chapters; JI: the TPU hardware "
      "table in JAX's `jax/_src/tpu_info.py`; HC20: Hot Chips 2020, \"Google's Training Chips "
      "Revealed: TPUv2 and TPUv3\"; ISCA17: \"In-Datacenter Performance Analysis of a Tensor "
      "Processing Unit\"; PALLAS: the JAX Pallas TPU documentation), `derived: <how>` or "
      "`assumption: <why>`. A file with `\"extends\": \"<preset>\"` starts from that "
      "preset and gives only what it changes (a sweep point, for example). Unknown fields, wrong "
      "types, values out of limits and impossible combinations are errors naming the field.");
  line("");

  std::string header = "| |", rule = "|---|";
  for (const ChipConfig& c : presets) {
    header += fmt::format(" {}{} |", c.name, c.test_preset ? " (test)" : "");
    rule += "---|";
  }
  line("## Derived peaks");
  line("");
  line(header);
  line(rule);
  auto peakRow = [&](const char* what, auto get) {
    std::string row = fmt::format("| {} |", what);
    for (const ChipConfig& c : presets) row += fmt::format(" {:.6g} |", get(c));
    line(row);
  };
  peakRow("MXU MACs per cycle (chip)", [](const ChipConfig& c) { return c.macsPerCycle(); });
  peakRow("peak bf16 (TFLOP/s)", [](const ChipConfig& c) { return c.peakFlopsBf16() / 1e12; });
  peakRow("peak int8 (TOPS)", [](const ChipConfig& c) { return c.peakOpsInt8() / 1e12; });
  peakRow("HBM peak (GB/s)", [](const ChipConfig& c) { return c.hbmPeakBytesPerSecond() / 1e9; });
  peakRow("bf16 FLOPs per HBM byte at the ridge",
          [](const ChipConfig& c) { return c.peakFlopsBf16() / c.hbmPeakBytesPerSecond(); });
  peakRow("ICI, all links one-way (GB/s)",
          [](const ChipConfig& c) { return c.iciPeakBytesPerSecond() / 1e9; });
  line("");
  for (const ChipConfig& c : presets)
    if (!c.description.empty()) line(fmt::format("- **{}**: {}", c.name, cell(c.description)));
  line("");

  std::vector<std::vector<FieldInfo>> values;
  for (const ChipConfig& c : presets) values.push_back(listFields(c));
  std::vector<FieldInfo> defaults = listFields(ChipConfig{});

  std::string section;
  for (size_t i = 0; i < defaults.size(); ++i) {
    const FieldInfo& f = defaults[i];
    std::string sec = f.path.substr(0, f.path.find('.'));
    if (sec != section) {
      section = sec;
      line("");
      line(fmt::format("## {}", section));
      line("");
      std::string h = "| field | type | unit | limits | description | default |";
      std::string r = "|---|---|---|---|---|---|";
      for (const ChipConfig& c : presets) {
        h += fmt::format(" {} |", c.name);
        r += "---|";
      }
      line(h);
      line(r);
    }
    std::string row =
        fmt::format("| `{}` | {} | {} | {} | {} | {} |", f.path, fieldTypeName(f.type), f.unit,
                    limits(f), cell(f.doc), cell(withScale(f)));
    for (const auto& v : values) row += fmt::format(" {} |", cell(withScale(v[i])));
    line(row);
  }

  line("");
  line("## Sources");
  for (const ChipConfig& c : presets) {
    line("");
    line(fmt::format("### {}", c.name));
    line("");
    line("| field | value | source |");
    line("|---|---|---|");
    for (const FieldInfo& f : listFields(c)) {
      auto it = c.sources.find(f.path);
      line(fmt::format("| `{}` | {} | {} |", f.path, cell(f.value),
                       cell(it == c.sources.end() ? "(none)" : it->second)));
    }
  }
  return md;
}

}  // namespace tpusim::target
