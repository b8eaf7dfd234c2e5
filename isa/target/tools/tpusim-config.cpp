// tpusim-config: prints the effective configuration of a chip (a preset plus
// --set overrides) as JSON, lists the presets, or generates docs/presets.md.
//
//   tpusim-config --chip v5e --set mxu.count=2 --set hbm.tRCD=20
//   tpusim-config --list
//   tpusim-config --doc > docs/presets.md
//   tpusim-config --doc --check docs/presets.md     (exit 1 when stale)
#include <fmt/format.h>
#include <llvm/Support/CommandLine.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "isa/support/InputFile.h"
#include "isa/support/ParseCommandLine.h"
#include "isa/target/ChipJson.h"
#include "isa/target/ChipLoader.h"
#include "isa/target/ConfigError.h"
#include "isa/target/FieldList.h"
#include "isa/target/PresetDoc.h"

namespace cl = llvm::cl;
using namespace tpusim::target;

namespace {

cl::OptionCategory category("tpusim-config options");
cl::opt<std::string> chipOpt("chip", cl::desc("chip preset name or path to a .json file"),
                             cl::value_desc("name|file.json"), cl::init("v5e"), cl::cat(category));
cl::list<std::string> setOpt("set", cl::desc("override one field, e.g. --set hbm.tRCD=20"),
                             cl::value_desc("section.field=value"), cl::cat(category));
cl::opt<bool> noSources("no-sources", cl::desc("leave the \"sources\" object out of the JSON"),
                        cl::cat(category));
cl::opt<bool> derived("derived", cl::desc("add a \"derived\" object (peak FLOP/s, bandwidths)"),
                      cl::cat(category));
cl::opt<bool> listOpt("list", cl::desc("list the presets with their derived peaks"),
                      cl::cat(category));
cl::opt<bool> fieldsOpt("fields", cl::desc("list every field: path, type, unit, limits, doc"),
                        cl::cat(category));
cl::opt<bool> docOpt("doc", cl::desc("print docs/presets.md (every field and preset)"),
                     cl::cat(category));
cl::opt<std::string> checkOpt("check",
                              cl::desc("with --doc: compare with FILE instead of printing; "
                                       "exit 1 when it differs"),
                              cl::value_desc("FILE"), cl::cat(category));

// The committed presets (the source tree's sim/chips), which docs/presets.md describes.
std::vector<ChipConfig> loadSourcePresets() {
  std::vector<ChipConfig> presets;
  for (const std::string& name : listPresetsIn(sourceChipsDir()))
    presets.push_back(loadChip(sourceChipsDir() + "/" + name + ".json"));
  return presets;
}

// Every preset the search path finds (what --chip NAME accepts).
std::vector<ChipConfig> loadAllPresets() {
  std::vector<ChipConfig> presets;
  for (const std::string& name : listPresets()) presets.push_back(loadChip(name));
  return presets;
}

int runDoc() {
  std::string doc = presetsMarkdown(loadSourcePresets());
  if (checkOpt.empty()) {
    std::cout << doc;
    return 0;
  }
  std::string text;
  if (auto problem = tpusim::support::readInputFile(checkOpt, &text)) {
    fmt::print(stderr, "tpusim-config: error: {}: {}\n", checkOpt.getValue(), *problem);
    return 1;
  }
  if (text == doc) return 0;
  // Name the first line that differs so the reader sees what changed.
  std::istringstream a(text), b(doc);
  std::string la, lb;
  int line = 1;
  while (true) {
    bool ga = bool(std::getline(a, la)), gb = bool(std::getline(b, lb));
    if (!ga || !gb || la != lb) {
      fmt::print(stderr,
                 "tpusim-config: error: {} is stale (first difference at line {}):\n"
                 "  file:      {}\n  generated: {}\nregenerate it with: {}\n",
                 checkOpt.getValue(), line, ga ? la : "<end of file>", gb ? lb : "<end of file>",
                 kPresetDocCommand);
      return 1;
    }
    ++line;
  }
}

int runList() {
  fmt::print("{:<10} {:>5} {:>5} {:>5} {:>12} {:>12} {:>10}  {}\n", "preset", "cores", "mxus",
             "size", "bf16 TFLOP/s", "int8 TOPS", "HBM GB/s", "kind");
  for (const ChipConfig& c : loadAllPresets())
    fmt::print("{:<10} {:>5} {:>5} {:>5} {:>12.1f} {:>12.1f} {:>10.1f}  {}\n", c.name, c.core.cores,
               c.mxu.count, c.mxu.size, c.peakFlopsBf16() / 1e12, c.peakOpsInt8() / 1e12,
               c.hbmPeakBytesPerSecond() / 1e9, c.test_preset ? "test" : "chip");
  return 0;
}

int runFields() {
  for (const FieldInfo& f : listFields(ChipConfig{})) {
    std::string lim =
        f.range.min <= f.range.max
            ? fmt::format("[{}, {}]", formatDouble(f.range.min), formatDouble(f.range.max))
            : "";
    fmt::print("{:<34} {:<8} {:<12} {:<22} {}\n", f.path, fieldTypeName(f.type), f.unit, lim,
               f.doc);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cl::HideUnrelatedOptions(category);
  tpusim::support::parseCommandLineOrExit(
      argc, argv,
      "tpusim-config: show the effective chip configuration\n\n"
      "Prints the chip (a preset plus --set overrides) as JSON, or the "
      "preset list, field list or preset documentation.\n");
  try {
    if (!checkOpt.empty() && !docOpt) {
      fmt::print(stderr, "tpusim-config: error: --check needs --doc\n");
      return 1;
    }
    if (docOpt) return runDoc();
    if (listOpt) return runList();
    if (fieldsOpt) return runFields();
    ChipConfig chip = loadChip(chipOpt, std::vector<std::string>(setOpt.begin(), setOpt.end()));
    WriteOptions options;
    options.sources = !noSources;
    options.derived = derived;
    std::cout << chipToJsonText(chip, options) << "\n";
    return 0;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    // Not expected (ConfigError covers bad presets); still a message, not an abort.
    fmt::print(stderr, "tpusim-config: error: {}\n", e.what());
    return 1;
  }
}
